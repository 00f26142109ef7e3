"""The money side of the periodic jobs, and the buttons of the messages they post.

`watch_round` runs on the jobs leader: idle alerts for gpu-assist's running instances (fleet idle detection over
the policy's window) in the thread of the launch's approval card, budget crossings at 50/80/100 % to the approval
channel, and the daily digest at its hour. Each is handed out once by `Store.post_once` and audited. The idle
alert's buttons, for the launch's requester or an approver: Stop submits a stop request through the approval path
(passing without a second person only when the policy's `auto_approve_own_stop` is on and the clicker launched it),
Keep 4 h snoozes the alert (audited), Extend TTL 24 h submits an extension request, which an approver other than
the clicker decides like a launch.
"""

from __future__ import annotations

import datetime as dt
import logging

from gpu_assist.records import describe
from gpu_assist.budgets import crossings, standing
from gpu_assist.errors import GpuAssistError, PolicyError
from gpu_assist.identity import AUTO_APPROVE, SLACK, actor, same_person
from gpu_assist.render.spend import crossing_line, idle_alert, render_digest
from gpu_assist.specs import LaunchSpec, StopSpec
from gpu_assist.spending import month_start
from gpu_assist.watch import SNOOZE, build_digest, digest_due, idle_alerts

log = logging.getLogger("gpu_assist.slack")
IDLE_STOP, IDLE_KEEP, IDLE_EXTEND = "idle_stop", "idle_keep", "idle_extend"
EXTENSION_S = 24 * 3600  # what the alert's Extend TTL button asks for; `/gpu extend r-… 48h` asks for any other


def idle_blocks(alert) -> list[dict]:
    return [{"type": "section", "text": {"type": "mrkdwn", "text": idle_alert(alert)}},
            {"type": "actions", "block_id": f"idle:{alert.instance_id}", "elements": [
                {"type": "button", "action_id": IDLE_STOP, "style": "danger", "value": alert.instance_id,
                 "text": {"type": "plain_text", "text": "Stop"}},
                {"type": "button", "action_id": IDLE_KEEP, "value": alert.instance_id,
                 "text": {"type": "plain_text", "text": "Keep 4 h"}},
                {"type": "button", "action_id": IDLE_EXTEND, "value": alert.request_id,
                 "text": {"type": "plain_text", "text": f"Extend TTL {EXTENSION_S // 3600} h"}}]}]


def thread_of(record, fallback_channel: str) -> dict:
    """Where a message about a request goes: the thread of its approval card, else (no card stored: an older
    request, or one made from the CLI or Jupyter) the fallback channel itself."""
    if record is not None and record.card_channel and record.card_ts:
        return {"channel": record.card_channel, "thread_ts": record.card_ts}
    return {"channel": fallback_channel}


def _fleet(context, records, now):
    from gpu_assist.fleet import fleet_usage

    policy = context.approvals.policy
    regions = sorted({r.spec.where for r in records if r.state == "running" and isinstance(r.spec, LaunchSpec)})
    return [fleet_usage(context.aws_client("ec2", region), context.aws_client("cloudwatch", region), context.catalog,
                        region=region, now=now, window_s=policy.idle_window_s,
                        threshold_pct=policy.idle_threshold_pct, currency=policy.currency) for region in regions]


def watch_round(context, client, channel: str) -> dict:
    """One round: what it posted, by kind."""
    approvals = context.approvals
    store, policy, now = approvals.store, approvals.policy, approvals.clock()
    records = store.spend_rows(min(month_start(now), now - dt.timedelta(days=1)))
    posted: dict[str, list[str]] = {"idle": [], "budget": [], "digest": []}
    idle_requests = set()
    by_id = {record.id: record for record in records}
    for report in _fleet(context, records, now):
        alerts, busy = idle_alerts(report, records, now)
        for key in busy:
            store.forget(key)
        for alert in alerts:
            idle_requests.add(alert.request_id)
            if store.post_once(alert.key, "idle", now=now, request_id=alert.request_id, detail=idle_alert(alert)):
                client.chat_postMessage(**thread_of(by_id.get(alert.request_id), channel), text=idle_alert(alert),
                                        blocks=idle_blocks(alert))
                store.audit(alert.request_id, "system", "idle alert", "ok", now=now, detail=alert.instance_id)
                posted["idle"].append(alert.instance_id)
    if policy.budgets is not None:
        for status in standing(policy.budgets, records, now, default_project=policy.default_project):
            for key, threshold in crossings(status, now):
                if store.post_once(key, "budget", now=now, detail=crossing_line(status, threshold)):
                    client.chat_postMessage(channel=channel, text=crossing_line(status, threshold))
                    store.audit(None, "system", "budget crossing", "ok", now=now, detail=key)
                    posted["budget"].append(key)
    digest_key = digest_due(policy.digest_hour, now)
    if digest_key and store.post_once(digest_key, "digest", now=now):
        budgets = standing(policy.budgets, records, now, default_project=policy.default_project) \
            if policy.budgets else ()
        digest = build_digest(records, store.list(states=("pending",), limit=100), now, currency=policy.currency,
                              budgets=tuple(budgets), idle_requests=idle_requests, describe=describe)
        client.chat_postMessage(channel=policy.digest_channel or channel, text=render_digest(digest))
        store.audit(None, "system", "digest", "ok", now=now, detail=digest_key)
        posted["digest"].append(digest_key)
    return posted


def _require_launcher_or_approver(approvals, clicker: str, launch, what: str, action: str) -> None:
    """An alert sits in a shared channel: only the launch's requester or an approver acts on it (refusals
    audited)."""
    if approvals.policy.is_approver(clicker) or (launch and same_person(clicker, launch.requester)):
        return
    message = f"{clicker} neither launched {what} nor is an approver: ask the requester or an approver"
    approvals.store.audit(launch.id if launch else None, clicker, action, "refused", now=approvals.clock(),
                          detail=message)
    raise PolicyError(message)


def on_idle_stop(context, user_id: str, instance_id: str):
    """Stop through the approval path, asked only by the instance's requester or an approver; the clicker's own
    idle instance passes alone only if the policy says so."""
    approvals = context.approvals
    clicker = actor(SLACK, user_id)
    launch = next((r for r in approvals.store.list(states=("running",), limit=1000)
                   if r.kind == "launch" and instance_id in r.instance_ids), None)
    _require_launcher_or_approver(approvals, clicker, launch, instance_id, "submit stop")
    stop = approvals.submit_stop(clicker, [instance_id])
    launches = [approvals.store.get(i) for i in stop.spec.launch_requests] if isinstance(stop.spec, StopSpec) else []
    if approvals.policy.auto_approve_own_stop and launches and all(
            launch and same_person(clicker, launch.requester) for launch in launches):
        return approvals.approve(stop.id, AUTO_APPROVE, reason="own idle instance (auto_approve_own_stop)")
    return stop


def on_idle_extend(context, user_id: str, request_id: str):
    """An extension request of `EXTENSION_S`, asked only by the launch's requester or an approver; another
    approver decides it, as any request."""
    approvals = context.approvals
    clicker = actor(SLACK, user_id)
    launch = approvals.store.get(request_id)
    _require_launcher_or_approver(approvals, clicker, launch, request_id, "submit extend")
    return approvals.submit_extend(clicker, request_id, EXTENSION_S)


def on_idle_keep(context, user_id: str, instance_id: str) -> bool:
    from gpu_assist.watch import idle_key

    approvals = context.approvals
    now = approvals.clock()
    kept = approvals.store.snooze(idle_key(instance_id), now + SNOOZE)
    request_id = (approvals.store.notice(idle_key(instance_id)) or {}).get("request_id")
    approvals.store.audit(request_id, actor(SLACK, user_id), "keep idle 4h", "ok" if kept else "refused", now=now,
                          detail=instance_id)
    return kept


def register(app, context, client, post_card) -> None:
    """The idle alert's buttons on the Bolt app: ack at once, work lazily, answer the clicker."""

    def just_ack(ack):
        ack()

    def asking(submit, what: str):
        """A button that submits a request: its card goes to the approvers (unless the policy decided it at once),
        and the clicker hears where it stands, or why not."""

        def handle(body, action, respond):
            try:
                record = submit(context, body["user"]["id"], action["value"])
            except GpuAssistError as error:
                respond(response_type="ephemeral", replace_original=False, text=f"Not done: {error}")
                return
            if record.state == "pending":
                post_card(record, body.get("channel", {}).get("id") or body["container"].get("channel_id"))
            respond(response_type="ephemeral", replace_original=False, text=f"{what} `{record.id}`: {record.state}")

        return handle

    def keep(body, action, respond):
        on_idle_keep(context, body["user"]["id"], action["value"])
        respond(response_type="ephemeral", replace_original=False, text="Kept: no idle alert for 4 h.")

    app.action(IDLE_STOP)(ack=just_ack, lazy=[asking(on_idle_stop, "Stop request")])
    app.action(IDLE_KEEP)(ack=just_ack, lazy=[keep])
    app.action(IDLE_EXTEND)(ack=just_ack, lazy=[asking(on_idle_extend, "Extension request")])
    log.debug("idle alert buttons registered")
