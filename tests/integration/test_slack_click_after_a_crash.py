"""A click run again after its replica died past its decision decides once: each click has one "received" row and
one decision row in the audit log, however often it is run.

Two `gpu-assist slack serve` replicas on one PostgreSQL, their jobs at a 1-second round, moto over HTTP, the mock
Web API. An Approve click goes to the first replica, and the mock holds the Web API call the click makes right after
its decision is recorded (the card's "launching…" update; for a refusal, the clicker's ephemeral answer), so the
test knows the replica is between recording the decision and marking the click done when it SIGKILLs it. The jobs
leader (the other replica) then takes the click over and runs it again: it finds the decision recorded and decides
nothing twice, the reconciler carries out the approval the dead replica owned, and the request launches once.
"""

from __future__ import annotations

import json
import signal
import time
from urllib.parse import parse_qs

import pytest
from sqlalchemy import select

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.launch.aws import REQUEST_TAG
from gpu_assist.store import clicks_table
from slack_client import action_body, command_body, signed_post, start_slack_server
from slackbot.inbox import click_key

ENV = {"GPU_ASSIST_JOB_INTERVAL_S": "1"}


@pytest.fixture
def replicas(moto_server, aws, mock_slack, pg_store, tmp_path):
    started = [start_slack_server(moto_server, mock_slack, tmp_path, db_url=pg_store.url, jobs=True, extra_env=ENV)
               for _ in range(2)]
    mock_slack.clear()
    yield started
    for process, _ in started:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)


def _launch(replica, mock_slack, pg_store) -> str:
    signed_post(replica["url"], command_body("launch 8xA100 4h region=us-east-1", user="U-CAROL",
                                             response_url=mock_slack.response_url()))
    (card,) = mock_slack.wait_for("chat.postMessage", timeout=60)
    request_id = next(b for b in card["params"]["blocks"] if b["type"] == "actions")["elements"][0]["value"]
    deadline = time.monotonic() + 30
    while not pg_store.get(request_id).card_ts:  # stored right after the card is posted
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return request_id


def _click_done(pg_store, key: str) -> bool:
    with pg_store.engine.connect() as connection:
        return connection.execute(select(clicks_table.c.done_at).where(clicks_table.c.key == key)).scalar() is not None


def _wait(until, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _tagged(request_id: str) -> list[str]:
    ec2 = aws_clients.client("ec2")
    return [i["InstanceId"] for r in ec2.describe_instances(Filters=[
        {"Name": f"tag:{REQUEST_TAG}", "Values": [request_id]}])["Reservations"] for i in r["Instances"]]


@pytest.mark.parametrize("user, held, outcome", [("U-BOB", "chat.update", "ok"),
                                                 ("U-CAROL", "chat.postEphemeral", "refused")],
                         ids=["approved", "own request refused"])
def test_a_click_taken_over_after_its_replica_died_past_the_decision_decides_once(replicas, mock_slack, pg_store,
                                                                                  user, held, outcome):
    (doomed, doomed_info), (_, survivor) = replicas
    request_id = _launch(survivor, mock_slack, pg_store)
    body = action_body("approve_request", request_id, user=user, response_url=mock_slack.response_url(),
                       message_ts=pg_store.get(request_id).card_ts)
    payload = json.loads(parse_qs(body)["payload"][0])
    key, clicker = click_key(payload, payload["actions"][0]), f"slack:{user}"

    def decisions() -> list:
        return [e for e in pg_store.audit_trail(request_id) if e.actor == clicker and e.action == "approve"]

    mock_slack.hold(held)
    assert signed_post(doomed_info["url"], body) == (200, "")
    mock_slack.wait_for_arrivals(held, 1, timeout=60)  # the first run is past its decision, not yet done
    assert len(decisions()) == 1 and not _click_done(pg_store, key)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=10)  # reaped: its owner ids are known gone, so the leader takes its click over at once
    mock_slack.release(held)
    _wait(lambda: _click_done(pg_store, key), "the click taken over and run")
    if outcome == "ok":  # the reconciler carries out what the dead replica owned, and the leader announces it
        _wait(lambda: "announce" in [e.action for e in pg_store.audit_trail(request_id)], "the outcome announced")
    trail = pg_store.audit_trail(request_id)
    clicked = [(e.action, e.outcome) for e in trail if e.actor == clicker and e.action in ("click", "approve")]
    assert clicked == [("click", "received"), ("approve", outcome)]
    assert [(e.actor, e.outcome) for e in pg_store.audit_trail() if e.action == "click"] == [
        (clicker, "received"), ("system", "taken over")]  # run again, by the leader
    assert pg_store.caused_by(key) == decisions()[0]
    record = pg_store.get(request_id)
    assert sorted(_tagged(request_id)) == sorted(record.instance_ids)  # exactly the request's instances
    if outcome == "ok":
        assert record.state == "running" and len(record.instance_ids) == 1
        assert ("reconciler", "take over") in [(e.actor, e.action) for e in trail]
    else:  # still pending, and the clicker told again, in the same words
        assert record.state == "pending" and record.instance_ids == ()
        first, again = mock_slack.wait_for("chat.postEphemeral", 2)
        assert first["params"] == again["params"] and again["params"]["user"] == user
