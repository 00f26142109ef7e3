"""Two processes on one PostgreSQL: concurrent approvals launch once; a crash mid-launch is reconciled; runs of
one click at once record one decision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import submit_launch

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.launch.aws import REQUEST_TAG, AwsProvisioner
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy

pytestmark = pytest.mark.clock  # the replicas' approvals date their requests by the wall clock

WORKER = Path(__file__).with_name("approve_worker.py")
POLICY = Policy(approvers=frozenset({"slack:U-ALICE", "slack:U-BOB"}), ami_id="ami-12c6146b")


def _tagged(request_id: str) -> list[dict]:
    ec2 = aws_clients.client("ec2")
    pages = ec2.describe_instances(Filters=[{"Name": f"tag:{REQUEST_TAG}", "Values": [request_id]}])
    return [i for r in pages["Reservations"] for i in r["Instances"]]


def _worker(*args) -> subprocess.Popen:
    path = os.pathsep.join([os.environ["PYTHONPATH"], *sys.path])  # the suite's start-up hooks first
    return subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": path})


def test_200_concurrent_approvals_from_two_processes_launch_once(aws, pg_store, catalog):
    approvals = Approvals(pg_store, POLICY, AwsProvisioner(POLICY), catalog)
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 6h region=us-east-1")
    racers = [_worker("race", pg_store.url, record.id, approver, "100")
              for approver in ("slack:U-ALICE", "slack:U-BOB")]
    results = []
    for racer in racers:
        out, err = racer.communicate(timeout=300)
        assert racer.returncode == 0, err[-2000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sum(r["ok"] for r in results) == 1
    assert sum(r["refused"] for r in results) == 199
    assert len(_tagged(record.id)) == 1
    final = pg_store.get(record.id)
    assert final.state == "running" and len(final.instance_ids) == 1
    approves = [e for e in pg_store.audit_trail(record.id) if e.action == "approve"]
    assert sum(e.outcome == "ok" for e in approves) == 1 and sum(e.outcome == "refused" for e in approves) == 199


def test_killed_between_approved_and_running_reconciles_to_one_instance(aws, pg_store, catalog):
    approvals = Approvals(pg_store, POLICY, AwsProvisioner(POLICY), catalog)
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 6h region=us-east-1")
    crashed = _worker("crash", pg_store.url, record.id, "slack:U-BOB")
    crashed.communicate(timeout=300)
    assert crashed.returncode == -9  # SIGKILL
    assert pg_store.get(record.id).state == "launching" and len(_tagged(record.id)) == 1
    assert approvals.orchestration.reconcile() == [record.id]  # its owner's process is gone: no wait for the lease
    (takeover,) = [e for e in pg_store.audit_trail(record.id) if e.action == "take over"]
    assert "is gone" in takeover.detail
    final = pg_store.get(record.id)
    assert final.state == "running" and len(_tagged(record.id)) == 1
    assert final.instance_ids == tuple(i["InstanceId"] for i in _tagged(record.id))


def test_periodic_jobs_run_in_one_replica_at_a_time(pg_store):
    inside, results = threading.Event(), []

    def hold():
        with pg_store.job_lock("reap") as held:
            results.append(("first", held))
            inside.set()
            release.wait(10)

    release = threading.Event()
    holder = threading.Thread(target=hold)
    holder.start()
    inside.wait(10)
    with pg_store.job_lock("reap") as held:
        results.append(("second", held))
    release.set()
    holder.join()
    with pg_store.job_lock("reap") as held:
        results.append(("after", held))
    assert results == [("first", True), ("second", False), ("after", True)]


def test_runs_of_one_click_at_once_record_one_decision_and_launch_once(aws, pg_store, catalog):
    """Eight runs of one Approve click past the check for its decision together (as a click the jobs leader took
    over from an owner that was only slow would be): one wins the UPDATE, the others' decision rows collide with its
    row, so their transactions roll back; each answers the approval, none is refused or audited."""
    approvals = Approvals(pg_store, POLICY, AwsProvisioner(POLICY), catalog)
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 6h region=us-east-1")
    together = threading.Barrier(8)

    def run(_: int) -> str:
        together.wait(timeout=30)
        return approvals.approve(record.id, "slack:U-BOB", delivery="click-1").approver

    with ThreadPoolExecutor(max_workers=8) as runs:
        answers = list(runs.map(run, range(8)))
    assert answers == ["slack:U-BOB"] * 8
    approves = [e for e in pg_store.audit_trail(record.id) if e.action == "approve"]
    assert [(e.actor, e.outcome) for e in approves] == [("slack:U-BOB", "ok")]
    assert pg_store.caused_by("click-1") == approves[0]
    assert len(_tagged(record.id)) == 1 and pg_store.get(record.id).state == "running"
