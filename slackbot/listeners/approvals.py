"""The Approve and Reject buttons of an approval card.

The decider is the signed Slack user id of the click (never the display name); who may decide what is
`gpu_assist.lifecycle.approvals`' business, which refuses and audits the rest (the clicker hears why, ephemerally). The
state machine makes a decision once however often it is clicked or retried, and audits every attempt, so these
buttons are not claimed per click as the ones that make a request are. Each click's decision row names the click
(its inbox key, `inbox.click_key`): a click the jobs leader runs again because its process died after deciding and
before the click was marked done finds its decision recorded, so each click has one decision row, and the clicker
hears the same answer again. The card shows the approval at once, then its outcome; the outcome also goes to the
card's thread (an extension's to its launch's thread), naming the requester, once, whoever finished it
(`slackbot/outcomes.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpu_assist.errors import GpuAssistError
from gpu_assist.lifecycle.identity import SLACK, actor
from gpu_assist.lifecycle.records import RequestRecord
from slackbot import blocks
from ..inbox import click_key
from ..outcomes import announce

if TYPE_CHECKING:
    from slack_bolt import App

    from ..inbox import Payload, Respond
    from .deps import Deps


class Decisions:
    """Approve and Reject, for one app."""

    def __init__(self, deps: Deps):
        self.deps = deps

    def approve(self, body: Payload, action: Payload, _respond: Respond) -> None:
        self.decide(body, action, approve=True)

    def reject(self, body: Payload, action: Payload, _respond: Respond) -> None:
        self.decide(body, action, approve=False)

    def decide(self, body: Payload, action: Payload, *, approve: bool) -> None:
        user = body["user"]["id"]
        decider = actor(SLACK, user)  # the signed user id; the display name (body["user"]["username"]) is not used
        channel, ts = body["container"]["channel_id"], body["container"]["message_ts"]
        approvals, click = self.deps.context.approvals, click_key(body, action)

        def launching(record: RequestRecord) -> None:
            text, card = blocks.decided_card(record, blocks.carrying_out_line(record, decider),
                                             approvals.budget_standing(record))
            self.deps.client.chat_update(channel=channel, ts=ts, text=text, blocks=card)

        try:
            if approve:
                record = approvals.approve(action["value"], decider, on_approved=launching, delivery=click)
            else:
                record = approvals.reject(action["value"], decider, delivery=click)
        except GpuAssistError as error:
            self.deps.client.chat_postEphemeral(channel=channel, user=user, text=blocks.not_done(error))
            return
        # Unless another owner took the carrying-out over (then it is announced when that one finishes)
        announce(approvals, self.deps.client, record, fallback_channel=self.deps.settings.approval_channel,
                 card=(channel, ts))


def register(app: App, deps: Deps) -> None:
    decisions = Decisions(deps)
    deps.inbox.listen(app, blocks.APPROVE, "approve", decisions.approve)
    deps.inbox.listen(app, blocks.REJECT, "reject", decisions.reject)
