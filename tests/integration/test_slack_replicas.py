"""Slack retries across replicas: two `gpu-assist slack serve` processes on one PostgreSQL.

Slack retries a request it got no answer to within 3 seconds, with the same body and `X-Slack-Retry-Num`,
and behind a load balancer the retry may reach another replica than the first delivery did. A command that
changes something (here a launch, which records a request and posts its approval card) must then run once,
and so must the click of a button that makes a request (a quote card's Request launch, an idle alert's Extend TTL).
"""

from __future__ import annotations

import threading
import time

import pytest

from slack_client import action_body, command_body, settle, signed_post, start_slack_server

LAUNCH = "launch 8xA100 4h region=us-east-1"


def _retry(number: int) -> dict:
    return {"X-Slack-Retry-Num": str(number), "X-Slack-Retry-Reason": "http_timeout"}


@pytest.fixture
def replicas(moto_server, aws, mock_slack, pg_store, tmp_path):
    started = [start_slack_server(moto_server, mock_slack, tmp_path, db_url=pg_store.url) for _ in range(2)]
    mock_slack.clear()
    yield [info for _, info in started]
    for process, _ in started:
        process.terminate()
        process.wait(timeout=10)


def _cards(mock_slack) -> list[dict]:
    return [c for c in mock_slack.calls("chat.postMessage") if c["params"].get("channel") == "C-APPROVALS"]


def _deliver_to_both(replicas, body: str) -> list[tuple[int, str]]:
    """One delivery to each replica at once, the second marked as Slack's retry: (status, body) of each ack."""
    acks: list = [None, None]

    def deliver(index: int, headers: dict | None) -> None:
        acks[index] = signed_post(replicas[index]["url"], body, headers=headers)

    senders = [threading.Thread(target=deliver, args=(0, None)), threading.Thread(target=deliver, args=(1, _retry(1)))]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(timeout=30)
    return acks


def test_a_launch_retried_on_the_other_replica_runs_once(replicas, mock_slack, pg_store):
    first, second = replicas
    response_url = mock_slack.response_url()
    body = command_body(LAUNCH, user="U-CAROL", response_url=response_url)
    status, ack = signed_post(first["url"], body)
    assert status == 200 and "Working on" in ack
    mock_slack.wait_for(response_url.split(mock_slack.url + "/", 1)[1])
    for number, replica in ((1, second), (2, first)):  # Slack's retries, one on each replica
        status, ack = signed_post(replica["url"], body, headers=_retry(number))
        assert (status, ack) == (200, "")
    for replica in replicas:  # each replica has answered a later command: nothing else is on its way
        settle(replica["url"], mock_slack)
    assert len(_cards(mock_slack)) == 1 and len(pg_store.list()) == 1


def test_a_launch_reaching_both_replicas_at_once_runs_once(replicas, mock_slack, pg_store):
    response_url = mock_slack.response_url()
    acks = _deliver_to_both(replicas, command_body(LAUNCH, user="U-CAROL", response_url=response_url))
    assert [status for status, _ in acks] == [200, 200]
    assert sorted("Working on" in ack for _, ack in acks) == [False, True]  # one took it, the other only acked
    mock_slack.wait_for(response_url.split(mock_slack.url + "/", 1)[1])
    for replica in replicas:
        settle(replica["url"], mock_slack)
    assert len(_cards(mock_slack)) == 1 and len(pg_store.list()) == 1


def _wait_for_taken_clicks(replicas, count: int, timeout: float = 30.0) -> None:
    """Until the replicas have logged `count` deliveries of a click another delivery had already taken."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        logged = sum(replica["log"].read_text().count("a click already taken, not run again") for replica in replicas)
        if logged >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"expected {count} clicks refused as already taken, got {logged}")


def _path(mock_slack, response_url: str) -> str:
    return response_url.split(mock_slack.url + "/", 1)[1]


def _answers(mock_slack, response_url: str) -> list[dict]:
    return [c["params"] for c in mock_slack.received if c["method"] == _path(mock_slack, response_url)]


def test_a_request_launch_click_retried_on_the_other_replica_requests_once(replicas, mock_slack, pg_store):
    first, second = replicas
    quoted = mock_slack.response_url()
    signed_post(first["url"], command_body("quote 8xA100 72h", user="U-CAROL", response_url=quoted))
    (answer,) = mock_slack.wait_for(_path(mock_slack, quoted))
    button = next(b["accessory"] for b in answer["params"]["blocks"] if "accessory" in b)
    clicked = mock_slack.response_url()
    click = action_body(button["action_id"], button["value"], user="U-CAROL", response_url=clicked)
    assert signed_post(first["url"], click) == (200, "")
    mock_slack.wait_for(_path(mock_slack, clicked))
    for number, replica in ((1, second), (2, first)):  # Slack's retries of the click, one on each replica
        assert signed_post(replica["url"], click, headers=_retry(number)) == (200, "")
    _wait_for_taken_clicks(replicas, 2)
    assert len(_cards(mock_slack)) == 1 and len(pg_store.list()) == 1 and len(_answers(mock_slack, clicked)) == 1


def test_an_extend_ttl_click_reaching_both_replicas_at_once_extends_once(replicas, mock_slack, pg_store):
    first, _ = replicas
    signed_post(first["url"], command_body(LAUNCH, user="U-CAROL", response_url=mock_slack.response_url()))
    (card,) = mock_slack.wait_for("chat.postMessage")
    launch_id = next(b for b in card["params"]["blocks"] if b["type"] == "actions")["elements"][0]["value"]
    signed_post(first["url"], action_body("approve_request", launch_id, user="U-BOB",
                                          response_url=mock_slack.response_url()))
    mock_slack.wait_for("chat.update", 2)  # launching…, then its outcome
    mock_slack.wait_for("chat.postMessage", 2)  # the card, then the outcome in its thread: nothing more to come
    assert pg_store.get(launch_id).state == "running"
    mock_slack.clear()
    clicked = mock_slack.response_url()
    acks = _deliver_to_both(replicas, action_body("idle_extend", launch_id, user="U-CAROL", response_url=clicked))
    assert acks == [(200, ""), (200, "")]
    (told,) = mock_slack.wait_for(_path(mock_slack, clicked))
    extension = next(r for r in pg_store.list() if r.kind == "extend")
    assert told["params"]["text"] == f"Extension request `{extension.id}`: pending"
    _wait_for_taken_clicks(replicas, 1)
    # One request, one card; and no second answer ("already has an extension waiting") from the other replica
    assert [r.kind for r in pg_store.list()].count("extend") == 1
    assert len(_cards(mock_slack)) == 1 and len(_answers(mock_slack, clicked)) == 1
