"""Every outcome announced once, whoever finished it: the approval card updated in place, and the requester told in
its thread (an extension's in its launch's thread).

The decider's click announces what its call finished (`listeners/approvals.py`); the jobs leader's round announces
every outcome nobody has announced yet (`announce_pending`): a launch the reconciler finished after a crash or a
takeover, or one whose decider died between finishing and announcing. Both go through one delivery claim, a
`notices` row `outcome:<request id>` (`Store.post_once`): a lease while the card and the thread are written, made
final once they are (`Store.keep`), so a crash mid-post leaves it to the next round, and no two callers, replicas
or rounds announce one outcome twice.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING

from gpu_assist.lifecycle.specs import ExtendSpec
from slackbot import blocks

from .spend_watch import Thread, thread_of

if TYPE_CHECKING:
    from slack_sdk import WebClient

    from gpu_assist.lifecycle.approvals import Approvals
    from gpu_assist.lifecycle.records import RequestRecord

log = logging.getLogger("gpu_assist.slack")
OUTCOME = "outcome"
# The states that end a decision, by kind: what a card shows as its outcome. A later change (a running launch
# stopped) is not the decision's outcome.
OUTCOMES: dict[str, tuple[str, ...]] = {
    "launch": ("running", "admitted", "failed", "rejected"), "stop": ("stopped", "failed", "rejected"),
    "extend": ("extended", "failed", "rejected")}
POSTING = dt.timedelta(minutes=2)  # how long a claim waits for its posts before another caller may take it


def announce(approvals: Approvals, client: WebClient, record: RequestRecord, *, fallback_channel: str | None,
             card: tuple[str, str] | None = None) -> bool:
    """Announce `record`'s outcome, when it has one, once among every caller: True for the caller that did.

    `card` is the (channel, ts) of the card to update (the clicked one); by default the one the store records."""
    channel, ts = card or (record.card_channel, record.card_ts)
    if record.state not in OUTCOMES[record.kind] or not channel or not ts or not record.approver:
        return False
    store, now = approvals.store, approvals.clock()
    key = f"{OUTCOME}:{record.id}"
    if not store.post_once(key, OUTCOME, now=now, request_id=record.id, detail=record.state, until=now + POSTING):
        return False
    line = blocks.decision_line(record, record.approver, approved=record.state != "rejected")
    text, updated = blocks.decided_card(record, line, approvals.budget_standing(record))
    client.chat_update(channel=channel, ts=ts, text=text, blocks=updated)
    where: Thread = {"channel": channel, "thread_ts": ts}
    if isinstance(record.spec, ExtendSpec):  # its outcome belongs with the launch it extends
        where = thread_of(store.get(record.spec.launch_request), fallback_channel or channel)
    client.chat_postMessage(**where, text=blocks.decision_notice(record, line))
    store.keep(key)
    store.audit(record.id, "system", "announce", "ok", now=now, detail=f"{record.state}, in the card's thread")
    return True


def announce_pending(approvals: Approvals, client: WebClient, fallback_channel: str | None) -> list[str]:
    """The jobs leader's sweep: announce every outcome not yet announced; the ids it announced. One that fails
    (Slack away) is logged and left to the next round."""
    announced = []
    for record in approvals.store.unannounced(OUTCOME, OUTCOMES, approvals.clock()):
        try:
            if announce(approvals, client, record, fallback_channel=fallback_channel):
                announced.append(record.id)
        except Exception:  # noqa: BLE001 - its claim lapses; the next round tries again
            log.exception("could not announce the outcome of %s", record.id)
    return announced
