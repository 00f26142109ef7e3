"""The click inbox (`slackbot/inbox.py`) in-process: a click is recorded (and audited "received") before it is
acknowledged and run from the store; a retry of it is not run again; past the pool's places the clicker is told
"busy" (audited); and the clicks a dead owner left are taken over and run by `recover()`. SQLite store, an injected
clock, tests/mock_slack.py for the `response_url`s; the handlers are the test's own."""

from __future__ import annotations

import json
import threading
from urllib.parse import parse_qs

import pytest
from sqlalchemy import select

from gpu_assist.commands import Context
from slackbot import blocks
from gpu_assist.store import Store, clicks_table
from slack_client import action_body
from slackbot.click_store import Clicks
from slackbot.inbox import CLICK_LEASE, Inbox, click_key
from slackbot.response_url import ResponsePoster
from slackbot.workers import WorkPool
from support import Clock


class Lifecycle:
    """What the inbox needs of the approvals: a store and a clock."""

    def __init__(self, store: Store, clock: Clock):
        self.store, self.clock = store, clock


@pytest.fixture
def lifecycle(tmp_path):
    return Lifecycle(Store(f"sqlite:///{tmp_path / 'state.db'}"), Clock())


def _inbox(lifecycle, threads: int = 1, queued: int = 8) -> Inbox:
    context = Context(catalog_loader=lambda: None, approvals_factory=lambda _c: lifecycle)
    return Inbox(context, WorkPool(threads, queued, name="test-click"), ResponsePoster(connections=2))


def _click(mock, user: str = "U-BOB", value: str = "r-0123456789ab") -> tuple[dict, dict]:
    payload = json.loads(parse_qs(action_body("approve_request", value, user=user,
                                              response_url=mock.response_url()))["payload"][0])
    return payload, payload["actions"][0]


def _path(mock, payload: dict) -> str:
    return payload["response_url"].split(mock.url + "/", 1)[1]


def test_a_click_is_recorded_before_its_ack_and_a_retry_is_not_run_again(lifecycle, mock_slack):
    inbox, ran, acked = _inbox(lifecycle), [], []
    inbox.handlers["approve"] = lambda payload, action, respond: ran.append(action["value"])
    payload, action = _click(mock_slack)

    def ack() -> None:  # when Slack would get its 200: the click is in the store by then
        acked.append([(e.action, e.outcome) for e in lifecycle.store.audit_trail()])

    inbox.receive("approve", payload, action, ack)
    inbox.receive("approve", payload, action, ack)  # Slack's retry of the same click
    inbox.pool.shutdown()
    assert acked == [[("click", "received")]] * 2 and ran == ["r-0123456789ab"]
    with lifecycle.store.engine.connect() as connection:
        (row,) = connection.execute(select(clicks_table)).mappings().all()
    assert row["done_at"] is not None and "token" not in row["payload"]["payload"]  # Slack's token is not kept


def test_past_the_pools_places_the_clicker_is_told_busy_and_it_is_audited(lifecycle, mock_slack):
    inbox, release = _inbox(lifecycle, threads=1, queued=0), threading.Event()
    inbox.handlers["approve"] = lambda payload, action, respond: release.wait(30)
    first, second = _click(mock_slack), _click(mock_slack, user="U-ALICE")
    inbox.receive("approve", *first, lambda: None)
    inbox.receive("approve", *second, lambda: None)
    (busy,) = mock_slack.wait_for(_path(mock_slack, second[0]))
    assert busy["params"]["text"] == blocks.BUSY
    release.set()
    inbox.pool.shutdown()
    assert [(e.actor, e.outcome) for e in lifecycle.store.audit_trail()] == [("slack:U-BOB", "received"),
                                                                            ("slack:U-ALICE", "busy")]


def test_the_clicks_a_dead_owner_left_are_run_by_recover(lifecycle, mock_slack):
    payload, action = _click(mock_slack)
    now = lifecycle.clock()
    assert Clicks(lifecycle.store).receive(click_key(payload, action), "approve",
                                           {"payload": payload, "action": action}, owner="elsewhere:4242:1/dead",
                                           until=now + CLICK_LEASE, now=now, actor="slack:U-BOB", request_id=None,
                                           detail="approve_request")
    inbox, ran = _inbox(lifecycle), []
    inbox.handlers["approve"] = lambda payload, action, respond: (ran.append(payload["user"]["id"]),
                                                                  respond(text="done"))
    assert inbox.recover() == 0  # another host: its lease decides, and it is not over
    lifecycle.clock.advance(seconds=CLICK_LEASE.total_seconds())
    assert inbox.recover() == 1
    inbox.pool.shutdown()
    assert ran == ["U-BOB"] and inbox.recover() == 0
    (answer,) = mock_slack.wait_for(_path(mock_slack, payload))
    assert answer["params"]["text"] == "done"
    (taken,) = [e for e in lifecycle.store.audit_trail() if e.outcome == "taken over"]
    assert "by elsewhere:4242:1/dead, now run by" in taken.detail


def test_inline_an_inbox_runs_the_click_before_its_ack(lifecycle, mock_slack):
    """On AWS Lambda no thread outlives the invocation: the click runs in the request, then is acked."""
    context = Context(catalog_loader=lambda: None, approvals_factory=lambda _c: lifecycle)
    inbox, events = Inbox(context, WorkPool(1, 0), ResponsePoster(connections=1), inline=True), []
    inbox.handlers["approve"] = lambda payload, action, respond: events.append("ran")
    inbox.receive("approve", *_click(mock_slack), lambda: events.append("acked"))
    assert events == ["ran", "acked"] and inbox.pool.taken == 0
