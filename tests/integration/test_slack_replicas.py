"""Slack retries across replicas: two `gpu-assist slack serve` processes on one PostgreSQL.

Slack retries a request it got no answer to within 3 seconds, with the same body and `X-Slack-Retry-Num`,
and behind a load balancer the retry may reach another replica than the first delivery did. A command that
changes something (here a launch, which records a request and posts its approval card) must then run once.
"""

from __future__ import annotations

import threading

import pytest

from slack_client import command_body, settle, signed_post, start_slack_server

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
    body = command_body(LAUNCH, user="U-CAROL", response_url=response_url)
    acks: list = [None, None]

    def deliver(index: int, headers: dict | None) -> None:
        acks[index] = signed_post(replicas[index]["url"], body, headers=headers)

    senders = [threading.Thread(target=deliver, args=(0, None)), threading.Thread(target=deliver, args=(1, _retry(1)))]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(timeout=30)
    assert [status for status, _ in acks] == [200, 200]
    assert sorted("Working on" in ack for _, ack in acks) == [False, True]  # one took it, the other only acked
    mock_slack.wait_for(response_url.split(mock_slack.url + "/", 1)[1])
    for replica in replicas:
        settle(replica["url"], mock_slack)
    assert len(_cards(mock_slack)) == 1 and len(pg_store.list()) == 1
