"""Authorisation in numbers: only approvers decide, never their own request; stop only gpu-assist's instances;
policy limits hold at approve time, not only at submit."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from support import submit_launch

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.launch.aws import REQUEST_TAG, AwsProvisioner
from gpu_assist.errors import PolicyError
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.lifecycle.ports import Launched
from gpu_assist.store import Store

pytestmark = pytest.mark.clock  # the approvals date their requests by the wall clock

APPROVERS = ("slack:U-ALICE", "slack:U-BOB")
POLICY = Policy(approvers=frozenset(APPROVERS), ami_id="ami-12c6146b", max_cost=Decimal(20_000))


@pytest.fixture
def approvals(aws, tmp_path, catalog):
    return Approvals(Store(f"sqlite:///{tmp_path / 's.db'}"), POLICY, AwsProvisioner(POLICY), catalog)


def _tagged() -> int:
    ec2 = aws_clients.client("ec2")
    return sum(len(r["Instances"]) for r in ec2.describe_instances(Filters=[
        {"Name": "tag-key", "Values": [REQUEST_TAG]}, {"Name": "instance-state-name", "Values": ["running"]}])[
        "Reservations"])


def test_only_approvers_other_than_the_requester_decide(approvals, record_case):
    rng = random.Random(3)
    requests = [submit_launch(approvals, rng.choice(APPROVERS + ("slack:U-CAROL",)), "8xA100 2h region=us-east-1")
                for _ in range(5)]
    tried = refused = 0
    for record in requests:
        for actor in ("slack:U-MALLORY", "slack:U-EVE", record.requester, "policy:auto-approve", ""):
            tried += 1
            try:
                approvals.approve(record.id, actor)
            except PolicyError:
                refused += 1
    audited = sum(1 for e in approvals.store.audit_trail() if e.action == "approve" and e.outcome == "refused")
    record_case("Approve by non-approvers, by the requester, by an impostor 'policy'", tried=tried, refused=refused,
                side_effects=_tagged() + (tried - audited), note="every refusal audited")
    assert refused == tried and audited == tried and _tagged() == 0
    assert {approvals.store.get(r.id).state for r in requests} == {"pending"}


def test_stop_is_refused_for_instances_gpu_assist_did_not_launch(approvals, record_case):
    ec2 = aws_clients.client("ec2")
    foreign = [i["InstanceId"] for i in ec2.run_instances(ImageId="ami-12c6146b", InstanceType="p4d.24xlarge",
                                                           MinCount=3, MaxCount=3)["Instances"]]
    refused = 0
    for instance_id in foreign:
        try:
            approvals.submit_stop("slack:U-ALICE", [instance_id], "us-east-1")
        except PolicyError:
            refused += 1
    with pytest.raises(PolicyError, match="not launched by gpu-assist"):
        # the provisioner refuses too, not only the request layer
        approvals.provisioner.stop(Launched("aws", "us-east-1", tuple(foreign)))
    running = [i for r in ec2.describe_instances(InstanceIds=foreign)["Reservations"] for i in r["Instances"]
               if i["State"]["Name"] == "running"]
    record_case("Stop foreign instances", tried=len(foreign) + 1, refused=refused + 1,
                side_effects=len(foreign) - len(running), note="checked at submit and again in the provisioner")
    assert refused == len(foreign) and len(running) == len(foreign)


@pytest.mark.parametrize("tightened", [
    {"max_cost": Decimal(10)}, {"max_gpus": 4}, {"allowed_instance_types": ("g*",)},
    {"allowed_regions": ("eu-west-1",)}, {"allowed_pricing_models": ("spot",)},
])
def test_policy_limits_hold_at_approve_time(approvals, tightened, record_case):
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 2h region=us-east-1")
    approvals.policy = Policy(**{**POLICY.__dict__, **tightened})
    with pytest.raises(PolicyError, match="policy refuses it now"):
        approvals.approve(record.id, "slack:U-BOB")
    record_case(f"Approve after the policy tightened ({', '.join(tightened)})", tried=1, refused=1,
                side_effects=_tagged(), note="re-checked at approve")
    assert _tagged() == 0 and approvals.store.get(record.id).state == "pending"
