"""The buttons of an idle alert (posted by the jobs leader's `spend_watch.watch_round`): Stop, Keep 4 h, Extend TTL.

Each is for the launch's requester or an approver only (the alert sits in a shared channel; other clicks are
refused and audited). Stop submits a stop request through the approval path, passing without a second person
only when the policy's `auto_approve_own_stop` is on and the clicker launched it; Keep 4 h snoozes the alert
(audited); Extend TTL submits an extension request of `watch.EXTENSION_S`, which an approver other than the
clicker decides like a launch. Stop and Extend TTL make a request: each click does so once, however often it is
run (the click's inbox key names the submit, `Approvals._submit`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from gpu_assist.errors import GpuAssistError, PolicyError
from gpu_assist.lifecycle.identity import AUTO_APPROVE, SLACK, actor, same_person
from gpu_assist.lifecycle.records import RequestRecord
from gpu_assist.lifecycle.specs import StopSpec
from gpu_assist.team.watch import EXTENSION_S, SNOOZE, idle_key
from slackbot import blocks

from ..inbox import click_key
from .deps import channel_of

if TYPE_CHECKING:
    from slack_bolt import App

    from gpu_assist.commands import Context
    from gpu_assist.lifecycle.approvals import Approvals

    from ..inbox import Handler, Payload, Respond
    from .deps import Deps


def _require_launcher_or_approver(approvals: Approvals, clicker: str, launch: RequestRecord | None, what: str,
                                  action: str) -> None:
    """An alert sits in a shared channel: only the launch's requester or an approver acts on it (refusals
    audited)."""
    if approvals.policy.is_approver(clicker) or (launch and same_person(clicker, launch.requester)):
        return
    message = f"{clicker} neither launched {what} nor is an approver: ask the requester or an approver"
    approvals.store.audit(launch.id if launch else None, clicker, action, "refused", now=approvals.clock(),
                          detail=message)
    raise PolicyError(message)


def on_idle_stop(context: Context, user_id: str, instance_id: str, delivery: str | None = None) -> RequestRecord:
    """Stop through the approval path, asked only by the instance's requester or an approver; the clicker's own
    idle instance passes alone only if the policy says so."""
    approvals = context.approvals
    clicker = actor(SLACK, user_id)
    stop = approvals.made_by(delivery)  # a click run again: its launch may be stopping by now
    if stop is None:
        launch = next((r for r in approvals.store.list(states=("running",), limit=1000)
                       if r.kind == "launch" and instance_id in r.instance_ids), None)
        _require_launcher_or_approver(approvals, clicker, launch, instance_id, "submit stop")
        stop = approvals.submit_stop(clicker, [instance_id], delivery=delivery)
    launches = [approvals.store.get(i) for i in stop.spec.launch_requests] if isinstance(stop.spec, StopSpec) else []
    if stop.state == "pending" and approvals.policy.auto_approve_own_stop and launches and all(
            launch and same_person(clicker, launch.requester) for launch in launches):
        return approvals.approve(stop.id, AUTO_APPROVE, reason="own idle instance (auto_approve_own_stop)")
    return stop


def on_idle_extend(context: Context, user_id: str, request_id: str, delivery: str | None = None) -> RequestRecord:
    """An extension request of `EXTENSION_S`, asked only by the launch's requester or an approver; another
    approver decides it, as any request."""
    approvals = context.approvals
    clicker = actor(SLACK, user_id)
    launch = approvals.store.get(request_id)
    _require_launcher_or_approver(approvals, clicker, launch, request_id, "submit extend")
    return approvals.submit_extend(clicker, request_id, EXTENSION_S, delivery=delivery)


def on_idle_keep(context: Context, user_id: str, instance_id: str) -> bool:
    """The alert snoozed for `SNOOZE` (audited); False when it was not (no alert of that instance stands)."""
    approvals = context.approvals
    now = approvals.clock()
    kept: bool = approvals.store.snooze(idle_key(instance_id), now + SNOOZE)
    request_id = (approvals.store.notice(idle_key(instance_id)) or {}).get("request_id")
    approvals.store.audit(request_id, actor(SLACK, user_id), "keep idle 4h", "ok" if kept else "refused", now=now,
                          detail=instance_id)
    return kept


class AlertButtons:
    """The idle alert's buttons, for one app: ack at once, work lazily, answer the clicker."""

    def __init__(self, deps: Deps):
        self.deps = deps

    def submitting(self, submit: Callable[[Context, str, str, str], RequestRecord]) -> Handler:
        """A button that submits a request: its card goes to the approvers (unless the policy decided it at once),
        and the clicker hears where it stands, or why not."""

        def submitted(body: Payload, action: Payload, respond: Respond) -> None:
            try:
                record = submit(self.deps.context, body["user"]["id"], action["value"], click_key(body, action))
            except GpuAssistError as error:
                respond(response_type="ephemeral", replace_original=False, text=blocks.not_done(error))
                return
            if record.state == "pending":
                self.deps.post_card(record, channel_of(body))
            respond(response_type="ephemeral", replace_original=False, text=blocks.submitted_line(record))

        return submitted

    def keep(self, body: Payload, action: Payload, respond: Respond) -> None:
        on_idle_keep(self.deps.context, body["user"]["id"], action["value"])
        respond(response_type="ephemeral", replace_original=False, text=blocks.KEPT)


def register(app: App, deps: Deps) -> None:
    buttons = AlertButtons(deps)
    deps.inbox.listen(app, blocks.IDLE_STOP, "idle_stop", buttons.submitting(on_idle_stop))
    deps.inbox.listen(app, blocks.IDLE_KEEP, "idle_keep", buttons.keep)
    deps.inbox.listen(app, blocks.IDLE_EXTEND, "idle_extend", buttons.submitting(on_idle_extend))
