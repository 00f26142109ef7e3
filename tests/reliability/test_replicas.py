"""Exactly once under duplication: two `gpu-assist slack serve` replicas on one PostgreSQL, Approve clicks for
many requests duplicated and interleaved across both (as Slack retries and double clicks do)."""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from slack_client import action_body, signed_post, start_slack_server
from support import soak, submit_launch

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.launch.aws import REQUEST_TAG, AwsProvisioner
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy

REQUESTS, CLICKS = (50, 1000) if soak() else (10, 200)
POLICY = Policy(approvers=frozenset({"U-ALICE", "U-BOB"}), ami_id="ami-12c6146b")


@pytest.fixture
def replicas(moto_server, mock_slack, pg_store, aws, tmp_path):
    servers = [start_slack_server(moto_server, mock_slack, tmp_path, db_url=pg_store.url) for _ in range(2)]
    yield [info for _, info in servers]
    for process, _ in servers:
        process.terminate()
        process.wait(timeout=10)


def test_duplicated_approvals_across_two_replicas_launch_each_request_once(replicas, pg_store, catalog, mock_slack,
                                                                         record_case):
    approvals = Approvals(pg_store, POLICY, AwsProvisioner(POLICY), catalog)
    ids = [submit_launch(approvals, "U-CAROL", "8xA100 4h region=us-east-1").id for _ in range(REQUESTS)]
    rng = random.Random(7)
    clicks = [ids[n % REQUESTS] for n in range(CLICKS)]
    rng.shuffle(clicks)

    def click(request_id):
        replica = rng.choice(replicas)
        return signed_post(replica["url"], action_body("approve_request", request_id, user=rng.choice(
            ["U-ALICE", "U-BOB"]), response_url=mock_slack.response_url()))[0]

    with ThreadPoolExecutor(max_workers=16) as pool:
        statuses = list(pool.map(click, clicks))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        states = {pg_store.get(i).state for i in ids}
        approvals_done = sum(1 for e in pg_store.audit_trail() if e.action == "approve")
        if states == {"running"} and approvals_done >= CLICKS:
            break
        time.sleep(0.5)
    ec2 = aws_clients.client("ec2")
    tagged = [t["Value"] for r in ec2.describe_instances(Filters=[{"Name": "tag-key", "Values": [REQUEST_TAG]}])[
        "Reservations"] for i in r["Instances"] for t in i["Tags"] if t["Key"] == REQUEST_TAG]
    trail = pg_store.audit_trail()
    ok = [e.request_id for e in trail if e.action == "approve" and e.outcome == "ok"]
    refused = [e for e in trail if e.action == "approve" and e.outcome == "refused"]
    duplicates = (len(tagged) - len(set(tagged))) + (len(ok) - len(set(ok)))
    record_case(f"Exactly once: {CLICKS} Approve clicks for {REQUESTS} requests over 2 replicas on PostgreSQL",
                tried=CLICKS, refused=len(refused), side_effects=len(set(tagged) - set(ids)), duplicates=duplicates,
                note=f"{len(tagged)} instances launched for {REQUESTS} requests; every click audited")
    assert statuses == [200] * CLICKS
    assert {pg_store.get(i).state for i in ids} == {"running"}
    assert sorted(tagged) == sorted(ids)  # one instance per request, none other
    assert sorted(ok) == sorted(ids) and len(refused) == CLICKS - REQUESTS
