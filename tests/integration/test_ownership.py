"""One owner per carrying-out: the reconciler never launches what a live process is still launching, takes over only
once that owner's lease is over (and says so in the audit), and the instance the store names is the one that runs.

The approver's launch is paused at a chosen point by a `threading.Event` (between its lookup by tag and RunInstances,
or right before RunInstances once its ownership check has passed), while the test runs `reconcile()` as the jobs
leader would; time is an injected clock. moto ignores `ClientToken`, so these prove the lease, not the token: the
token is only checked to be the same key in both calls, which is what AWS dedupes by. PostgreSQL, as replicas use.
"""

from __future__ import annotations

import threading

import pytest
from support import Clock, submit_launch

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.launch.aws import REQUEST_TAG, AwsProvisioner
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy

POLICY = Policy(approvers=frozenset({"slack:U-ALICE", "slack:U-BOB"}), ami_id="ami-12c6146b")


class PausingProvisioner(AwsProvisioner):
    """AWS, but its first launch waits for `go_on` at `pause_at`: "lookup" (after its lookup by tag found nothing)
    or "run" (after its ownership check passed, right before RunInstances). `paused` is set when it waits; the
    ClientToken of every RunInstances is kept in `tokens`."""

    def __init__(self, policy: Policy, pause_at: str):
        super().__init__(policy, client=self._recording_client)
        self.pause_at, self.paused, self.go_on = pause_at, threading.Event(), threading.Event()
        self.tokens: list[str] = []

    def _recording_client(self, service: str, region: str | None = None):
        client = aws_clients.client(service, region)
        if service == "ec2":
            client.meta.events.register("provide-client-params.ec2.RunInstances", self._record_token)
        return client

    def _record_token(self, params: dict, **_) -> None:
        if not params.get("DryRun"):  # the check before approval carries no token
            self.tokens.append(params["ClientToken"])

    def _pause_once(self, point: str) -> None:
        if self.pause_at == point and not self.paused.is_set():
            self.paused.set()
            assert self.go_on.wait(60), "the test never let the paused launch go on"

    def find(self, request_id, regions):
        found = super().find(request_id, regions)
        self._pause_once("lookup")
        return found

    def launch(self, spec, *, ends_at, still_ours):
        def checked_then_paused() -> bool:
            ours = still_ours()
            self._pause_once("run")
            return ours

        return super().launch(spec, ends_at=ends_at, still_ours=checked_then_paused)


def _live(request_id: str) -> list[str]:
    ec2 = aws_clients.client("ec2")
    pages = ec2.describe_instances(Filters=[{"Name": f"tag:{REQUEST_TAG}", "Values": [request_id]},
                                            {"Name": "instance-state-name", "Values": ["pending", "running"]}])
    return [i["InstanceId"] for r in pages["Reservations"] for i in r["Instances"]]


@pytest.fixture
def clock():
    return Clock()


def _approving(pg_store, catalog, clock, pause_at: str):
    """A pending launch, and its approval by U-BOB started in a thread that pauses at `pause_at`: (approvals,
    provisioner, request id, the approver's thread, its result list)."""
    provisioner = PausingProvisioner(POLICY, pause_at)
    approvals = Approvals(pg_store, POLICY, provisioner, catalog, clock)
    request_id = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1").id
    results: list = []
    approver = threading.Thread(target=lambda: results.append(approvals.approve(request_id, "slack:U-BOB")))
    approver.start()
    assert provisioner.paused.wait(60)
    return approvals, provisioner, request_id, approver, results


def _actions(store, request_id: str) -> list[tuple[str, str]]:
    return [(e.actor, e.action) for e in store.audit_trail(request_id)]


def test_reconcile_leaves_a_launch_its_live_owner_is_working_on(aws, pg_store, catalog, clock):
    approvals, provisioner, request_id, approver, results = _approving(pg_store, catalog, clock, "lookup")
    assert pg_store.get(request_id).state == "launching"
    assert approvals.orchestration.reconcile() == []  # between the approver's lookup and its RunInstances
    provisioner.go_on.set()
    approver.join(60)
    final = pg_store.get(request_id)
    assert results[0].state == final.state == "running" and final.approver == "slack:U-BOB"
    assert _live(request_id) == list(final.instance_ids) and len(final.instance_ids) == 1
    assert ("reconciler", "take over") not in _actions(pg_store, request_id)
    assert all(e.actor == "slack:U-BOB" for e in pg_store.audit_trail(request_id)[2:])  # launch, running


def test_after_the_owners_lease_ends_the_reconciler_takes_over_and_the_owner_stops(aws, pg_store, catalog, clock):
    approvals, provisioner, request_id, approver, results = _approving(pg_store, catalog, clock, "lookup")
    clock.advance(minutes=6)  # the approver's lease (5 minutes) ends without a renewal
    assert approvals.orchestration.reconcile() == [request_id]
    taken = pg_store.get(request_id)
    assert taken.state == "running" and _live(request_id) == list(taken.instance_ids)
    provisioner.go_on.set()  # the old owner wakes up before its RunInstances: it must not launch
    approver.join(60)
    final = pg_store.get(request_id)
    assert final == taken and results[0] == final and _live(request_id) == list(final.instance_ids)
    assert len(provisioner.tokens) == 1
    trail = pg_store.audit_trail(request_id)
    (takeover,) = [e for e in trail if e.action == "take over"]
    assert takeover.actor == "reconciler" and "lease ended 2026-12-02 12:05:00 UTC" in takeover.detail
    assert ("slack:U-BOB", "give up") in _actions(pg_store, request_id)
    assert [e.actor for e in trail if e.action == "running"] == ["reconciler"]


def test_an_owner_taken_over_mid_launch_leaves_no_untracked_instance(aws, pg_store, catalog, clock):
    """The old owner passed its check and is about to call RunInstances when its lease ends: the reconciler
    launches and records its instance; the old owner's call (which AWS would answer with the same instance, by
    the same ClientToken; moto launches a second) is not recorded, and the duplicate is terminated, never the
    recorded one."""
    approvals, provisioner, request_id, approver, _ = _approving(pg_store, catalog, clock, "run")
    clock.advance(minutes=6)
    assert approvals.orchestration.reconcile() == [request_id]
    recorded = pg_store.get(request_id).instance_ids
    provisioner.go_on.set()
    approver.join(60)
    final = pg_store.get(request_id)
    assert final.state == "running" and final.instance_ids == recorded and _live(request_id) == list(recorded)
    assert len(provisioner.tokens) == 2 and len(set(provisioner.tokens)) == 1  # one idempotency key
    (cleanup,) = [e for e in pg_store.audit_trail(request_id) if e.action == "terminate duplicates"]
    assert cleanup.actor == "slack:U-BOB" and f"keeping {recorded[0]}" in cleanup.detail
    (gave_up,) = [e for e in pg_store.audit_trail(request_id) if e.action == "give up"]
    assert gave_up.actor == "slack:U-BOB" and gave_up.detail.startswith("taken over while launching: i-")
