"""Faults: a proxy in front of moto throttles, fails, refuses capacity and drops connections; processes are
SIGKILLed at each step of launch and stop; PostgreSQL restarts mid-run. After `reconcile`, every request is in
a definite state, no instance runs without a request, and no request claims an instance that does not exist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fault_proxy import FaultProxy
from support import submit_launch

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.launch.aws import REQUEST_TAG, AwsProvisioner
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.lifecycle.states import TERMINAL

pytestmark = pytest.mark.clock  # the approvals date their requests by the wall clock

POLICY = Policy(approvers=frozenset({"slack:U-ALICE", "slack:U-BOB"}), ami_id="ami-12c6146b")
WORKER = Path(__file__).parent.parent / "integration" / "approve_worker.py"
DEFINITE = set(TERMINAL) | {"running", "pending"}


@pytest.fixture
def proxy(aws, moto_server, monkeypatch):
    faulty = FaultProxy(moto_server)
    monkeypatch.setenv("AWS_ENDPOINT_URL", faulty.url)
    yield faulty
    faulty.stop()


def _live(request_id=None):
    ec2 = aws_clients.client("ec2")
    filters = [{"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}]
    filters.append({"Name": "tag:" + REQUEST_TAG, "Values": [request_id]} if request_id else
                   {"Name": "tag-key", "Values": [REQUEST_TAG]})
    return [i for r in ec2.describe_instances(Filters=filters)["Reservations"] for i in r["Instances"]]


def _consistent(store) -> list[str]:
    """Problems: indefinite states, instances without a running request, requests claiming dead instances."""
    problems = []
    records = store.list(limit=1000)
    live = {i["InstanceId"]: {t["Key"]: t["Value"] for t in i["Tags"]}[REQUEST_TAG] for i in _live()}
    running = {r.id: r for r in records if r.state == "running"}
    problems += [f"{r.id} left in {r.state}" for r in records if r.state not in DEFINITE]
    problems += [f"{iid} runs for {rid}, which is not running" for iid, rid in live.items() if rid not in running]
    problems += [f"{r.id} claims {iid}, which is not live" for r in running.values() for iid in r.instance_ids
                 if iid not in live]
    return problems


@pytest.mark.parametrize("faults", [
    ("throttle", "throttle"), ("500",), ("drop-before",), ("drop-after",), ("capacity", "throttle", "drop-after"),
])
def test_launch_through_faults_ends_with_one_instance(proxy, tmp_path, catalog, faults, record_case):
    from gpu_assist.store import Store

    approvals = Approvals(Store(f"sqlite:///{tmp_path / 's.db'}"), POLICY, AwsProvisioner(POLICY), catalog)
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1")
    proxy.inject("RunInstances", *faults)
    done = approvals.approve(record.id, "slack:U-BOB")
    approvals.orchestration.reconcile()
    instances = _live(record.id)
    problems = _consistent(approvals.store)
    record_case(f"Launch through {' + '.join(faults)}", tried=len(faults), refused=len(proxy.injected),
                side_effects=len(problems), duplicates=max(0, len(instances) - 1),
                note=f"ended {approvals.store.get(record.id).state} with {len(instances)} instance(s)")
    assert [fault for _, fault in proxy.injected] == list(faults)
    assert done.state == "running" and len(instances) == 1 and problems == []
    assert list(done.instance_ids) == [instances[0]["InstanceId"]]
    if "drop-after" in faults:  # the lost answer's instance existed, and was cleaned up
        assert "terminated 1 duplicate instance(s)" in approvals.store.audit_trail(record.id)[-1].detail


def _worker(mode, store, request_id):
    path = os.pathsep.join([os.environ["PYTHONPATH"], *sys.path])  # the suite's start-up hooks first
    done = subprocess.run([sys.executable, str(WORKER), mode, store.url, request_id, "slack:U-BOB"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": path})
    return done.returncode


@pytest.mark.parametrize("mode, expected", [("crash-approved", "running"), ("crash", "running"),
                                            ("crash-stop", "stopped")])
def test_sigkill_at_each_step_then_reconcile(aws, pg_store, catalog, mode, expected, record_case):
    approvals = Approvals(pg_store, POLICY, AwsProvisioner(POLICY), catalog)
    record = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1").id,
                               "slack:U-BOB") \
        if mode == "crash-stop" else submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1")
    target = approvals.submit_stop("slack:U-CAROL", list(record.instance_ids)) if mode == "crash-stop" else record
    assert _worker(mode, pg_store, target.id) == -9
    half_done = pg_store.get(target.id).state
    approvals.orchestration.reconcile()
    final = pg_store.get(target.id).state
    problems = _consistent(pg_store)
    instances = _live(record.id)
    record_case(f"SIGKILL at '{mode}' then reconcile", tried=1, refused=0, side_effects=len(problems),
                duplicates=max(0, len(instances) - (1 if expected == "running" else 0)),
                note=f"{half_done} → {final}")
    assert final == expected and problems == []
    assert len(instances) == (1 if expected == "running" else 0)


def test_postgres_restart_mid_run(aws, pg_store, restart_postgres, catalog, record_case):
    approvals = Approvals(pg_store, POLICY, AwsProvisioner(POLICY), catalog)
    first = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1")
    restart_postgres()
    second = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1")
    approvals.approve(first.id, "slack:U-BOB")
    restart_postgres()
    approvals.approve(second.id, "slack:U-ALICE")
    approvals.orchestration.reconcile()
    problems = _consistent(pg_store)
    record_case("PostgreSQL restarted twice mid-run", tried=2, refused=0, side_effects=len(problems),
                duplicates=len(_live()) - 2, note="the pool reconnects (pre-ping); both requests running")
    assert {pg_store.get(i).state for i in (first.id, second.id)} == {"running"} and problems == []
    assert len(_live()) == 2
