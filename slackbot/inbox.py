"""No acknowledged click is lost: a button's click is written to the store (its `clicks` row and its audit row,
"received") before Slack is acknowledged, and run from there.

Slack does not resend a click it got a 200 for, so work that lives only in a process's memory dies with it. Here
the listener reserves a place in a bounded pool first (none left: the clicker is told "busy", and that is
audited, as a command past its pool is), records the click, then acks and starts it. The click names its owner
(`lifecycle.owners`) with a lease, and is marked done once its handler ran. A replica killed after the ack leaves
clicks not done whose owner is gone (same host) or whose lease ends: the jobs leader's round takes them over and
runs them (`recover`), answering through the click's own `response_url`. A retry of a recorded click (the same
key) is acked and not run again. A click run again may have got further the first time: the decisions themselves
are once by the state machine, and a decision's audit row names its click (`click_key`), so a click run again
finds its decision recorded and records no second one (`listeners/approvals.py`).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from gpu_assist.lifecycle import owners
from gpu_assist.lifecycle.identity import SLACK, actor
from gpu_assist.lifecycle.records import REQUEST_ID
from slackbot import blocks

from .click_store import Clicks

if TYPE_CHECKING:
    from slack_bolt import Ack, App

    from gpu_assist.commands import Context
    from gpu_assist.store import Store

    from .response_url import ResponsePoster
    from .workers import WorkPool

log = logging.getLogger("gpu_assist.slack")
Payload = dict[str, Any]  # a Slack JSON object: an interaction's body, or one of its actions
Respond = Callable[..., object]  # Bolt's `respond`, or a response_url poster's (`ResponsePoster.responder`)
Handler = Callable[[Payload, Payload, Respond], None]  # (payload, action, respond)
CLICK_LEASE = dt.timedelta(minutes=5)  # a click not done by then, by a live owner, is run again (decides once)
CLICKS_KEPT = dt.timedelta(days=1)  # Slack retries within minutes; a done click older than this can be forgotten


def click_key(payload: Payload, action: Payload) -> str:
    """The same for every delivery of one click (a retry repeats the payload), another for any other click: the
    trigger, user, button, click time and response_url, hashed."""
    parts = (payload.get("trigger_id") or "", payload["user"]["id"], action["action_id"],
             action.get("action_ts") or "", payload.get("response_url") or "")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


@dataclass
class Inbox:
    """The click inbox of one process: its handlers by listener name, the pool they run on, and the context whose
    store records the clicks and whose clock dates them (both reached on first use)."""

    context: Context
    pool: WorkPool
    poster: ResponsePoster
    inline: bool = False  # run a click before its ack (AWS Lambda: no thread outlives the invocation)
    handlers: dict[str, Handler] = field(default_factory=dict)

    @property
    def store(self) -> Store:
        return self.context.approvals.store

    @property
    def clicks(self) -> Clicks:
        return Clicks(self.store)

    def clock(self) -> dt.datetime:
        return self.context.approvals.clock()

    def listen(self, app: App, matcher: Any, name: str, handler: Handler) -> None:
        """`handler` runs the clicks of the buttons `matcher` matches, from the store."""
        self.handlers[name] = handler

        def listener(ack: Ack, body: Payload, action: Payload) -> None:
            self.receive(name, body, action, ack)

        app.action(matcher)(listener)

    def receive(self, name: str, payload: Payload, action: Payload, ack: Callable[[], object]) -> None:
        """Reserve, record, ack, start: the click is durable before Slack hears 200; busy or a store that cannot
        record it is answered to the clicker."""
        clicker, value = actor(SLACK, payload["user"]["id"]), str(action.get("value") or "")
        request_id = value if REQUEST_ID.match(value) else None
        reservation = self.pool.reserve()
        if reservation is None:
            ack()
            self._tell(payload, blocks.BUSY)
            self._audit_busy(clicker, request_id, action)
            return
        now, owner = self.clock(), owners.new_owner()
        kept = {k: v for k, v in payload.items() if k != "token"}  # Slack's verification token is not kept
        try:
            fresh = self.clicks.receive(click_key(payload, action), name, {"payload": kept, "action": action},
                                             owner=owner, until=now + CLICK_LEASE, now=now, actor=clicker,
                                             request_id=request_id, detail=f"{action['action_id']} {value}")
        except Exception:  # noqa: BLE001 - the database is away: nothing was recorded, say so
            log.exception("could not record a click of %s", action.get("action_id"))
            reservation.cancel()
            ack()
            self._tell(payload, blocks.FAILED)
            return
        if not fresh:
            ack()
            log.info("%s: a click already taken, not run again", action["action_id"])
            reservation.cancel()
            return
        key = click_key(payload, action)
        if self.inline:
            reservation.cancel()
            self.run(key, name, kept, action)
            ack()
            return
        ack()
        reservation.start(lambda: self.run(key, name, kept, action))

    def run(self, key: str, name: str, payload: Payload, action: Payload) -> None:
        """Run one recorded click's handler, then mark it done; a failure is told to the clicker, not retried."""
        respond = self.poster.responder(payload["response_url"])
        try:
            self.handlers[name](payload, action, respond)
        except Exception:  # noqa: BLE001 - a bug or the database away: the clicker hears it did not happen
            log.exception("the %s click failed", name)
            respond(response_type="ephemeral", replace_original=False, text=blocks.FAILED)
        self.clicks.done(key, self.clock())

    def recover(self) -> int:
        """The jobs leader's part: run the clicks a dead or stuck owner left, as far as the pool has places (the
        rest wait for the next round); forget clicks done long ago. How many it took over."""
        now = self.clock()
        self.clicks.forget(now - CLICKS_KEPT)
        taken = 0
        for click in self.clicks.left(now, owners.gone):
            reservation = self.pool.reserve()
            if reservation is None:
                break
            owner = owners.new_owner()
            if not self.clicks.take(click, owner=owner, until=now + CLICK_LEASE, now=now):
                reservation.cancel()
                continue
            stored = click["payload"]
            reservation.start(functools.partial(self.run, click["key"], click["listener"], stored["payload"],
                                                stored["action"]))
            taken += 1
        return taken

    def _tell(self, payload: Payload, text: str) -> None:
        if payload.get("response_url"):
            self.poster.responder(payload["response_url"])(response_type="ephemeral", replace_original=False,
                                                           text=text)

    def _audit_busy(self, clicker: str, request_id: str | None, action: Payload) -> None:
        try:
            self.store.audit(request_id, clicker, "click", "busy", now=self.clock(),
                             detail=f"{action['action_id']} {action.get('value') or ''}: answered busy")
        except Exception:  # noqa: BLE001 - busy already; the clicker was told
            log.exception("could not audit a click answered busy")
