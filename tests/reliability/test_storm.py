"""Exactly once with the reconciler running and a replica dying: two `gpu-assist slack serve` replicas on one
PostgreSQL, both with their jobs round at 1 second (so the reconciler runs while approvals launch), an approval
storm over both, and one replica SIGKILLed once it has acknowledged a quarter of its clicks.

A delivery that got no 200 (the killed replica's socket) is resent to the other replica as Slack's retry, with the
same body. Afterwards: no request launched twice (every instance ever tagged, terminated ones included), no live
instance the store does not record, every acknowledged click run (its `clicks` row done, or its clicker told
"busy") and audited, each click with one decision row (naming it) however often it ran, every request's card
updated with its outcome once. 3 runs in `make test`, 30 in `make soak`; the figures, summed over the runs, go to
the reliability report.
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs

import pytest
from slack_client import action_body, command_body, signed_post, start_slack_server
from sqlalchemy import select
from support import soak

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.launch.aws import REQUEST_TAG
from gpu_assist.store import audit_table, clicks_table
from slackbot.blocks import BUSY

RUNS, REQUESTS, CLICKS = (30, 20, 400) if soak() else (3, 10, 200)
CLICKERS = ["U-ALICE"] * 9 + ["U-BOB"] * 9 + ["U-CAROL", "U-MALLORY"]  # approvers; the requester; a stranger
# Each replica runs its clicks on 1 thread, so a storm leaves the one that is killed a backlog it acknowledged.
ENV = {"GPU_ASSIST_JOB_INTERVAL_S": "1", "GPU_ASSIST_SLACK_WORKERS": "1", "GPU_ASSIST_SLACK_CLICK_QUEUE": "1000"}
FIGURES = ("approvals sent", "acknowledged", "answered busy", "replicas killed", "clicks the killed one left",
           "requests taken over by the reconciler", "requests approved", "instances launched", "duplicates",
           "untracked", "acknowledged clicks without audit row", "cards without outcome", "clicks recorded",
           "decision rows")


@pytest.fixture(scope="module")
def totals(record_case):
    """The figures of every run, summed, recorded once after the last run."""
    summed = dict.fromkeys(FIGURES, 0)
    yield summed
    record_case(f"Approval storm, reconciler at 1 s, a replica SIGKILLed: {RUNS} runs of {CLICKS} clicks for "
                f"{REQUESTS} requests over 2 replicas on PostgreSQL", tried=summed["approvals sent"],
                refused=summed["answered busy"], side_effects=summed["untracked"], duplicates=summed["duplicates"],
                note="; ".join(f"{name}: {summed[name]}" for name in FIGURES[1:]))


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


def _launches(replica, mock_slack, pg_store) -> list[str]:
    """REQUESTS launch requests made with `/gpu launch` (the server's clock dates them), each with its card."""
    for _ in range(REQUESTS):
        status, _ = signed_post(replica["url"], command_body("launch 8xA100 4h region=us-east-1", user="U-CAROL",
                                                             response_url=mock_slack.response_url()))
        assert status == 200
    cards = mock_slack.wait_for("chat.postMessage", REQUESTS, timeout=120)
    ids = [next(b for b in c["params"]["blocks"] if b["type"] == "actions")["elements"][0]["value"] for c in cards]
    deadline = time.monotonic() + 30
    while not all(pg_store.get(i).card_ts for i in ids):  # the card's ts is stored right after it is posted
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return ids


def _storm(replicas, ids, mock_slack, pg_store, seed: int) -> dict:
    """CLICKS approval clicks over both replicas from 16 senders; the first replica is killed once it has
    acknowledged a quarter of the clicks sent to it. What each delivery got, and what the killed one left."""
    rng = random.Random(seed)
    cards = {i: pg_store.get(i).card_ts for i in ids}
    plan = [(ids[n % REQUESTS], rng.choice(CLICKERS), rng.randrange(2)) for n in range(CLICKS)]
    bodies = [action_body("approve_request", rid, user=user, response_url=mock_slack.response_url(),
                          message_ts=cards[rid]) for rid, user, _ in plan]
    (doomed, doomed_info), (_, survivor) = replicas
    # about a quarter of the clicks sent to it (half of them go there)
    kill_after, acked_by_doomed, lock, seen = CLICKS // 8, [0], threading.Lock(), {"left": 0, "killed": 0}

    def kill() -> None:
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)  # reaped: its pid is gone, so its owner ids are known dead at once
        with pg_store.engine.connect() as connection:
            owners = [r.owner for r in connection.execute(select(clicks_table.c.owner).where(
                clicks_table.c.done_at.is_(None)))]
        seen.update(left=sum(f":{doomed.pid}:" in owner for owner in owners), killed=1)

    def deliver(n: int) -> tuple[int, str]:
        target = replicas[plan[n][2]][1]
        status, body = signed_post(target["url"], bodies[n])
        if status != 200:  # no answer: Slack retries, here on the replica that is up
            status, body = signed_post(survivor["url"], bodies[n], headers={"X-Slack-Retry-Num": "1",
                                                                             "X-Slack-Retry-Reason": "http_error"})
        elif target is doomed_info:
            with lock:
                acked_by_doomed[0] += 1
                if acked_by_doomed[0] == kill_after:
                    kill()
        return status, body

    with ThreadPoolExecutor(max_workers=16) as senders:
        acks = list(senders.map(deliver, range(CLICKS)))
    return {"acks": acks, "bodies": bodies, "plan": plan, **seen}


def _wait_until_settled(ids, pg_store, timeout: float = 180.0) -> None:
    """Until every request runs and is announced, and every recorded click is done."""
    deadline = time.monotonic() + timeout
    while True:
        with pg_store.engine.connect() as connection:
            open_clicks = connection.execute(select(clicks_table.c.key).where(clicks_table.c.done_at.is_(None))).all()
        announced = {e.request_id for e in pg_store.audit_trail() if e.action == "announce"}
        if not open_clicks and all(pg_store.get(i).state == "running" for i in ids) and announced >= set(ids):
            return
        assert time.monotonic() < deadline, (len(open_clicks), [pg_store.get(i).state for i in ids])
        time.sleep(0.2)


def _figures(ids, storm, mock_slack, pg_store) -> dict:
    ec2 = aws_clients.client("ec2")
    tagged = {i["InstanceId"]: {t["Key"]: t["Value"] for t in i["Tags"]}.get(REQUEST_TAG)
              for r in ec2.describe_instances(Filters=[{"Name": "tag-key", "Values": [REQUEST_TAG]}])["Reservations"]
              for i in r["Instances"]}
    live = {i["InstanceId"] for r in ec2.describe_instances(Filters=[
        {"Name": "tag-key", "Values": [REQUEST_TAG]},
        {"Name": "instance-state-name", "Values": ["pending", "running"]}])["Reservations"] for i in r["Instances"]}
    recorded = {instance for i in ids for instance in pg_store.get(i).instance_ids}
    with pg_store.engine.connect() as connection:
        done = {row.payload["payload"]["response_url"] for row in connection.execute(
            select(clicks_table.c.payload).where(clicks_table.c.done_at.is_not(None)))}
    busy = {c["method"] for c in mock_slack.received if c["params"].get("text") == BUSY}
    acked = [body for (status, _), body in zip(storm["acks"], storm["bodies"]) if status == 200]
    urls = [_response_path(mock_slack, body) for body in acked]
    updates = [c["params"] for c in mock_slack.calls("chat.update")]
    outcome_cards = {u["ts"] for u in updates if "Running:" in u["text"]}
    trail = pg_store.audit_trail()
    return {"approvals sent": CLICKS, "acknowledged": len(acked), "answered busy": len(busy),
            "replicas killed": storm["killed"], "clicks the killed one left": storm["left"],
            "requests taken over by the reconciler": len({e.request_id for e in trail if e.action == "take over"}),
            "requests approved": sum(pg_store.get(i).approver is not None for i in ids),
            "instances launched": len(tagged), "duplicates": len(tagged) - len(set(tagged.values())),
            "untracked": len(live - recorded),
            "acknowledged clicks without audit row": sum(url not in done and path not in busy for url, path in urls),
            "cards without outcome": sum(pg_store.get(i).card_ts not in outcome_cards for i in ids),
            "clicks recorded": sum(1 for e in trail if (e.action, e.outcome) == ("click", "received")),
            "decision rows": sum(1 for e in trail if e.action == "approve")}


def _response_path(mock_slack, body: str) -> tuple[str, str]:
    """(the click's response_url, its path at the mock)."""
    url = json.loads(parse_qs(body)["payload"][0])["response_url"]
    return url, url.split(mock_slack.url + "/", 1)[1]


@pytest.mark.parametrize("run", range(RUNS))
def test_an_approval_storm_with_a_replica_killed_launches_each_request_once(run, replicas, mock_slack, pg_store,
                                                                            totals):
    ids = _launches(replicas[0][1], mock_slack, pg_store)
    storm = _storm(replicas, ids, mock_slack, pg_store, seed=run)
    _wait_until_settled(ids, pg_store)
    figures = _figures(ids, storm, mock_slack, pg_store)
    print(f"storm run {run}: {figures}")  # each run's own figures, for a report of a run cut short
    for name, value in figures.items():
        totals[name] += value
    trail = pg_store.audit_trail()
    decisions = [e for e in trail if e.action == "approve"]
    assert figures["replicas killed"] == 1 and figures["acknowledged"] == CLICKS  # every delivery answered
    assert figures["clicks the killed one left"] > 0  # it died with acknowledged clicks not yet run
    assert figures["requests approved"] == REQUESTS == figures["instances launched"], figures
    assert (figures["duplicates"], figures["untracked"]) == (0, 0), figures
    assert figures["acknowledged clicks without audit row"] == 0 and figures["cards without outcome"] == 0, figures
    assert sorted(e.request_id for e in decisions if e.outcome == "ok") == sorted(ids)  # one approval each
    assert figures["clicks recorded"] == CLICKS - figures["answered busy"]  # once each, a retry of it not again
    # and decided once: a click taken over after its first run decided finds that decision, and records none
    with pg_store.engine.connect() as connection:
        deliveries = connection.execute(select(audit_table.c.delivery).where(audit_table.c.action == "approve")
                                        ).scalars().all()
        clicks = set(connection.execute(select(clicks_table.c.key)).scalars())
    assert figures["decision rows"] == len(decisions) == figures["clicks recorded"], figures
    assert len(set(deliveries)) == len(deliveries) and set(deliveries) == clicks
    assert sum(1 for e in trail if e.action == "announce") == REQUESTS
