"""Launch and stop requests end to end: SQLite store, policy, boto3 against a real moto server over HTTP."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

import pytest
from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber
from support import Clock, submit_launch

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.launch.aws import REQUEST_TAG, AwsProvisioner
from gpu_assist.errors import ParseError, PolicyError
from gpu_assist.lifecycle import states
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.store import Store

IMAGE = "ami-12c6146b"  # one of moto's built-in AMIs


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def policy():
    return Policy(approvers=frozenset({"slack:U-ALICE", "slack:U-BOB"}), ami_id=IMAGE, max_cost=Decimal(20_000))


@pytest.fixture
def approvals(aws, tmp_path, catalog, policy, clock):
    return Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy, AwsProvisioner(policy), catalog, clock)


def _instances(request_id=None, states=("pending", "running")):
    ec2 = aws_clients.client("ec2")
    filters = [{"Name": "instance-state-name", "Values": list(states)}]
    if request_id:
        filters.append({"Name": f"tag:{REQUEST_TAG}", "Values": [request_id]})
    return [i for r in ec2.describe_instances(Filters=filters)["Reservations"] for i in r["Instances"]]


def test_launch_waits_for_an_approver_then_runs_once_with_tags(approvals):
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 72h region=us-east-1")
    assert record.state == "pending" and record.kind == "launch"
    spec = record.spec
    assert (spec.instance_type, spec.instances, spec.pricing_model) == ("p4d.24xlarge", 1, "on-demand")
    assert spec.checks.dry_run == "ok"
    assert spec.checks.quota.startswith("quota unknown (L-417A185B")  # moto has no EC2 quotas
    assert record.estimated_cost == spec.hourly * 72 == spec.estimated_total
    assert _instances() == []  # nothing runs before approval

    done = approvals.approve(record.id, "slack:U-BOB")
    assert done.state == "running" and done.approver == "slack:U-BOB" and len(done.instance_ids) == 1
    (instance,) = _instances(record.id)
    tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
    assert tags[REQUEST_TAG] == record.id and tags["gpu-assist:requester"] == "slack:U-CAROL"
    assert tags["gpu-assist:expires-at"] == "2026-12-05T12:00:00Z"
    assert done.ends_at == dt.datetime(2026, 12, 5, 12, 0, tzinfo=dt.timezone.utc)
    trail = [(e.action, e.outcome, e.to_state) for e in approvals.store.audit_trail(record.id)]
    assert trail == [("submit", "ok", "pending"), ("approve", "ok", "approved"), ("launch", "ok", "launching"),
                     ("running", "ok", "running")]

    with pytest.raises(PolicyError, match="already running by slack:U-BOB"):
        approvals.approve(record.id, "slack:U-ALICE")  # a double click launches nothing
    assert len(_instances()) == 1


def test_spot_launch_uses_the_spot_market_with_the_approved_ceiling(approvals):
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 10h spot region=us-east-1")
    assert record.spec.pricing_model == "spot"
    # us-east-1's zones: use1-az1's $2.47/h is flagged a spot outlier (below half the zones' median): never a
    # launch's price, so the cheapest zone left is planned (use1-az6, $7.88/h in the bundled catalog)
    assert record.spec.zone != "use1-az1" and record.spec.hourly > 5
    approvals.approve(record.id, "slack:U-ALICE")
    (instance,) = _instances(record.id)
    assert instance.get("InstanceLifecycle") == "spot"


@pytest.mark.parametrize("requester, actor, message", [
    ("slack:U-ALICE", "slack:U-ALICE", "requesters cannot approve or reject their own request"),  # an approver, asking
    ("slack:U-CAROL", "slack:U-MALLORY", "slack:U-MALLORY is not an approver"),
])
def test_self_approval_and_non_approvers_are_refused_and_audited(approvals, requester, actor, message):
    record = submit_launch(approvals, requester, "8xA100 2h")
    with pytest.raises(PolicyError, match=message):
        approvals.approve(record.id, actor)
    with pytest.raises(PolicyError, match=message):
        approvals.reject(record.id, actor)
    refused = [e for e in approvals.store.audit_trail(record.id) if e.outcome == "refused"]
    assert [(e.actor, e.action) for e in refused] == [(actor, "approve"), (actor, "reject")]
    assert approvals.store.get(record.id).state == "pending" and _instances() == []


def test_expired_and_rejected_requests_cannot_be_approved(approvals, clock):
    old = submit_launch(approvals, "slack:U-CAROL", "8xA100 2h")
    clock.advance(hours=25)
    with pytest.raises(PolicyError, match="has expired"):
        approvals.approve(old.id, "slack:U-BOB")
    assert approvals.store.get(old.id).state == "expired"
    rejected = submit_launch(approvals, "slack:U-CAROL", "8xA100 2h")
    approvals.reject(rejected.id, "slack:U-ALICE", "use the on-prem cluster")
    with pytest.raises(PolicyError, match="already rejected by slack:U-ALICE"):
        approvals.approve(rejected.id, "slack:U-BOB")
    stale = submit_launch(approvals, "slack:U-CAROL", "8xA100 2h")
    clock.advance(hours=25)
    assert approvals.orchestration.expire_due() == [stale.id]
    assert _instances() == []


def test_policy_is_enforced_at_submit_and_again_at_approve(approvals, policy):
    with pytest.raises(PolicyError, match="over the limit of 20,000.00 USD"):
        submit_launch(approvals, "slack:U-CAROL", "8xA100 8w")
    with pytest.raises(PolicyError, match=r"72 GPUs \(9× p4d.24xlarge\) is over the limit of 64 per request"):
        submit_launch(approvals, "slack:U-CAROL", "70xA100 1h")  # whole instances: the GPUs launched, said how
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 2h")
    approvals.policy = Policy(**{**policy.__dict__, "max_cost": Decimal(10)})
    with pytest.raises(PolicyError, match="policy refuses it now"):
        approvals.approve(record.id, "slack:U-BOB")
    outcomes = [(e.action, e.outcome) for e in approvals.store.audit_trail()]
    assert ("submit launch", "refused") in outcomes and ("approve", "refused") in outcomes
    assert _instances() == []


def test_bad_launch_text_is_a_parse_error(approvals):
    with pytest.raises(ParseError, match="say for how long"):
        submit_launch(approvals, "slack:U-CAROL", "8xA100")
    with pytest.raises(ParseError, match="unknown GPU 'A1000'"):
        submit_launch(approvals, "slack:U-CAROL", "8xA1000 2h")


def test_launch_from_a_quote_option_id(approvals):
    record = submit_launch(approvals, "slack:U-CAROL", "aws:p5.48xlarge:us-east-1:on-demand 3h")
    assert (record.spec.instance_type, record.spec.region, record.spec.gpus) == ("p5.48xlarge", "us-east-1", 8)


def test_stop_only_instances_gpu_assist_launched(approvals):
    ec2 = aws_clients.client("ec2")
    foreign = ec2.run_instances(ImageId=IMAGE, InstanceType="p4d.24xlarge", MinCount=1, MaxCount=1)
    foreign_id = foreign["Instances"][0]["InstanceId"]
    with pytest.raises(PolicyError, match=f"not launched by gpu-assist: {foreign_id}"):
        approvals.submit_stop("slack:U-CAROL", [foreign_id], "us-east-1")
    launch = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 5h").id, "slack:U-BOB")
    stop = approvals.submit_stop("slack:U-CAROL", list(launch.instance_ids))  # the region comes from the launch
    assert stop.spec.region == launch.spec.launched_region
    assert stop.state == "pending" and stop.spec.launch_requests == (launch.id,)
    assert approvals.approve(stop.id, "slack:U-ALICE").state == "stopped"
    assert approvals.store.get(launch.id).state == "stopped"
    assert [i["InstanceId"] for i in _instances()] == [foreign_id]  # the foreign one still runs
    assert _instances(launch.id) == [] or launch.spec.launched_region != "us-east-1"


def test_reaper_stops_launches_past_their_duration(approvals, clock):
    launch = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 3h region=us-east-1").id,
                               "slack:U-BOB")
    clock.advance(hours=2)
    assert approvals.orchestration.reap() == []
    clock.advance(hours=1, minutes=1)
    assert approvals.orchestration.reap() == [launch.id]
    assert approvals.store.get(launch.id).state == "stopped" and _instances() == []
    assert ("reap", "ok") in [(e.action, e.outcome) for e in approvals.store.audit_trail(launch.id)]


def test_reconcile_finishes_a_launch_without_launching_twice(approvals):
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1")
    store = approvals.store
    # A crash after run_instances and before the 'running' update: the instance exists, the state says launching.
    store.transition(record.id, states.APPROVE, actor="slack:U-BOB", now=approvals.clock(),
                     approver="slack:U-BOB", decided_at=approvals.clock())
    store.transition(record.id, states.LAUNCH, actor="slack:U-BOB", now=approvals.clock())
    approvals.provisioner.launch(record.spec, ends_at="", still_ours=lambda: True)
    assert len(_instances(record.id)) == 1
    assert approvals.orchestration.reconcile() == [record.id]
    done = store.get(record.id)
    assert done.state == "running" and len(_instances(record.id)) == 1
    assert "found by tag, not launched again" in store.audit_trail(record.id)[-1].detail
    # A crash right after approval: reconcile launches it, once.
    second = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1")
    store.transition(second.id, states.APPROVE, actor="slack:U-BOB", now=approvals.clock(),
                     approver="slack:U-BOB", decided_at=approvals.clock())
    assert approvals.orchestration.reconcile() == [second.id]
    assert store.get(second.id).state == "running" and len(_instances(second.id)) == 1


def test_capacity_errors_move_to_the_next_zone(approvals):
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1")
    ec2 = aws_clients.client("ec2", "us-east-1")
    refused = []

    def no_capacity_in_first_zone(params, **_):
        zone = params["body"].get("Placement.AvailabilityZone")  # the serialised EC2 query
        if not refused:
            refused.append(zone)
            return (AWSResponse("", 500, {}, None), {"Error": {"Code": "InsufficientInstanceCapacity",
                                                               "Message": f"no capacity in {zone}"},
                                                     "ResponseMetadata": {"HTTPStatusCode": 500}})
        return None

    ec2.meta.events.register("before-call.ec2.RunInstances", no_capacity_in_first_zone)
    approvals.provisioner.client = lambda service, region=None: ec2 if service == "ec2" else \
        aws_clients.client(service, region)
    done = approvals.approve(record.id, "slack:U-BOB")
    assert done.state == "running"
    (instance,) = _instances(record.id)
    assert instance["Placement"]["AvailabilityZone"] != refused[0]
    assert f"tried: {refused[0]}: InsufficientInstanceCapacity" in approvals.store.audit_trail(record.id)[-1].detail


def test_a_failed_launch_says_why_and_keeps_its_state(approvals, policy):
    # No AMI configured: the default is the Deep Learning AMI's public SSM parameter, which moto does not have.
    approvals.provisioner.policy = Policy(**{**policy.__dict__, "ami_id": None})
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h")
    assert record.spec.checks.dry_run.startswith("not checked: AWS said ParameterNotFound while reading the AMI "
                                                      "from SSM parameter /aws/service/deeplearning/ami/x86_64/")
    done = approvals.approve(record.id, "slack:U-BOB")
    assert done.state == "failed" and "ParameterNotFound" in done.error
    assert approvals.store.get(record.id).state == "failed"  # kept, with its reason, for an admin to retry


def test_the_ami_can_come_from_an_ssm_parameter(approvals, policy):
    ssm = aws_clients.client("ssm")
    ssm.put_parameter(Name="/team/gpu-ami", Value=IMAGE, Type="String")
    approvals.provisioner.policy = Policy(**{**policy.__dict__, "ami_id": None, "ami_ssm_parameter": "/team/gpu-ami"})
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1")
    assert record.spec.checks.dry_run == "ok"
    assert approvals.approve(record.id, "slack:U-BOB").state == "running"


def test_quota_check_against_the_real_response_shape(approvals):
    """moto has no EC2 quotas: Stubber checks our call and a GetServiceQuota response against the service model."""
    quotas = aws_clients.client("service-quotas")
    planned = submit_launch(approvals, "slack:U-CAROL", "16xA100 2h region=us-east-1").spec
    spec = dataclasses.replace(planned, instance_type="p4d.24xlarge", vcpus=96, instances=2)
    with Stubber(quotas) as stub:
        response = {"Quota": {"ServiceCode": "ec2", "QuotaCode": "L-417A185B", "QuotaName":
                              "Running On-Demand P instances", "Value": 384.0, "Unit": "None", "Adjustable": True,
                              "GlobalQuota": False}}
        stub.add_response("get_service_quota", response, {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"})
        stub.add_response("get_service_quota", {**response, "Quota": {**response["Quota"], "Value": 96.0}},
                          {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"})
        approvals.provisioner.client = lambda service, region=None: quotas
        assert approvals.provisioner.quota(spec) == "ok: 192 vCPUs of 384 (L-417A185B)"
        assert approvals.provisioner.quota(spec).startswith(
            "quota too low: 192 vCPUs needed, limit 96")


def test_audit_log_is_append_only(approvals):
    import sqlalchemy

    submit_launch(approvals, "slack:U-CAROL", "8xA100 2h")
    with pytest.raises(sqlalchemy.exc.DatabaseError, match="append-only"):
        with approvals.store.engine.begin() as connection:
            connection.execute(sqlalchemy.text("UPDATE audit_events SET actor = 'nobody'"))
    with pytest.raises(sqlalchemy.exc.DatabaseError, match="append-only"):
        with approvals.store.engine.begin() as connection:
            connection.execute(sqlalchemy.text("DELETE FROM audit_events"))


def _expiry_tag(instance_id: str) -> str:
    (instance,) = [i for r in aws_clients.client("ec2").describe_instances(InstanceIds=[instance_id])[
        "Reservations"] for i in r["Instances"]]
    return {t["Key"]: t["Value"] for t in instance["Tags"]}["gpu-assist:expires-at"]


def test_an_extension_moves_the_ttl_once_an_approver_other_than_the_requester_agrees(approvals, clock):
    launch = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1").id,
                               "slack:U-BOB")
    (instance,) = launch.instance_ids
    assert _expiry_tag(instance) == "2026-12-02T16:00:00Z"
    clock.advance(hours=3)
    extension = approvals.submit_extend("slack:U-CAROL", launch.id, 24 * 3600)
    assert (extension.kind, extension.state, extension.estimated_cost) == ("extend", "pending",
                                                                            24 * launch.hourly_price)
    with pytest.raises(PolicyError, match="requesters cannot approve or reject their own request"):
        approvals.approve(extension.id, "slack:U-CAROL")
    assert approvals.store.get(launch.id).ends_at == dt.datetime(2026, 12, 2, 16, tzinfo=dt.timezone.utc)

    done = approvals.approve(extension.id, "slack:U-BOB")
    assert done.state == "extended" and done.ends_at == dt.datetime(2026, 12, 3, 16, tzinfo=dt.timezone.utc)
    assert approvals.store.get(launch.id).ends_at == done.ends_at and approvals.store.get(launch.id).state == "running"
    assert _expiry_tag(instance) == "2026-12-03T16:00:00Z"
    assert [(e.actor, e.action, e.outcome) for e in approvals.store.audit_trail(extension.id)] == [
        ("slack:U-CAROL", "submit", "ok"), ("slack:U-CAROL", "approve", "refused"), ("slack:U-BOB", "approve", "ok"),
        ("slack:U-BOB", "extend", "ok"), ("slack:U-BOB", "extended", "ok")]
    moved = approvals.store.audit_trail(launch.id)[-1]
    assert (moved.action, moved.from_state, moved.to_state) == ("extend", "running", "running")
    assert f"by extension {extension.id}" in moved.detail

    clock.advance(hours=2)  # past the old end: the reaper honours the new one
    assert approvals.orchestration.reap() == []
    clock.advance(hours=23)
    assert approvals.orchestration.reap() == [launch.id] and _instances(launch.id) == []


def _under(approvals, **rules) -> Approvals:
    """The same store, AWS and clock under a policy changed by `rules`."""
    return Approvals(approvals.store, Policy(**{**approvals.policy.__dict__, **rules}), approvals.provisioner,
                     approvals.catalog, approvals.clock)


def test_extensions_are_refused_clearly(approvals):
    pending = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1")
    with pytest.raises(PolicyError, match=f"{pending.id} is pending, not running"):
        approvals.submit_extend("slack:U-CAROL", pending.id, 3600)
    with pytest.raises(ParseError, match="no launch request r-000000000000 — `requests` lists the recent ones with "
                                         "their ids — example: requests"):
        approvals.submit_extend("slack:U-CAROL", "r-000000000000", 3600)
    launch = approvals.approve(pending.id, "slack:U-BOB")
    with pytest.raises(PolicyError, match="an extension adds at most 720h when the policy sets no max_ttl"):
        approvals.submit_extend("slack:U-CAROL", launch.id, 31 * 24 * 3600)
    with pytest.raises(PolicyError, match="over the limit of 100.00 USD"):  # the launch's money rules hold
        _under(approvals, max_cost=Decimal(100)).submit_extend("slack:U-CAROL", launch.id, 24 * 3600)
    first = approvals.submit_extend("slack:U-CAROL", launch.id, 3600)
    with pytest.raises(PolicyError, match=f"already has an extension waiting: {first.id}"):
        approvals.submit_extend("slack:U-CAROL", launch.id, 3600)
    approvals.reject(first.id, "slack:U-BOB")
    capped = _under(approvals, max_ttl_s=8 * 3600)
    with pytest.raises(PolicyError, match="a time to live of 9h is over the limit of 8h"):
        capped.submit_extend("slack:U-CAROL", launch.id, 5 * 3600)
    assert capped.approve(capped.submit_extend("slack:U-CAROL", launch.id, 4 * 3600).id, "slack:U-BOB").state == \
        "extended"
    refusals = [e.detail for e in approvals.store.audit_trail() if e.action == "submit extend"]
    assert len(refusals) == 6 and all(e.outcome == "refused" for e in approvals.store.audit_trail()
                                      if e.action == "submit extend")
    approvals.approve(approvals.submit_stop("slack:U-CAROL", list(launch.instance_ids)).id, "slack:U-ALICE")
    with pytest.raises(PolicyError, match=f"{launch.id} is stopped, not running"):
        approvals.submit_extend("slack:U-CAROL", launch.id, 3600)


def test_an_extension_approved_after_its_launch_stopped_fails_and_moves_nothing(approvals, clock):
    launch = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1").id,
                               "slack:U-BOB")
    extension = approvals.submit_extend("slack:U-CAROL", launch.id, 3600)
    clock.advance(hours=4)
    assert approvals.orchestration.reap() == [launch.id]
    done = approvals.approve(extension.id, "slack:U-ALICE")
    assert done.state == "failed" and done.error == f"{launch.id} is stopped, no longer running"
    assert approvals.store.get(launch.id).ends_at == dt.datetime(2026, 12, 2, 16, tzinfo=dt.timezone.utc)


def test_reconcile_finishes_an_extension_a_crash_left_half_done(approvals, clock):
    launch = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1").id,
                               "slack:U-BOB")
    extension = approvals.submit_extend("slack:U-CAROL", launch.id, 2 * 3600)
    store = approvals.store
    store.transition(extension.id, states.APPROVE, actor="slack:U-BOB", now=clock(),
                     approver="slack:U-BOB", decided_at=clock())  # a crash right after the approval
    assert approvals.orchestration.reconcile() == [extension.id] and approvals.orchestration.reconcile() == []
    assert store.get(extension.id).state == "extended"
    assert store.get(launch.id).ends_at == dt.datetime(2026, 12, 2, 18, tzinfo=dt.timezone.utc)
    assert [e.action for e in store.audit_trail(launch.id)].count("extend") == 1  # moved once


def test_project_on_launch_is_recorded_tagged_and_checked_against_the_budgets(approvals):
    from gpu_assist.team.budgets import Budgets

    budgets = Budgets({"*": Decimal(50_000), "vision": Decimal(20_000), "llm": Decimal(8000)}, "USD")
    team = _under(approvals, budgets=budgets, cost_tags={"project": "llm", "team": "ml"})
    team.provisioner = AwsProvisioner(team.policy)
    record = submit_launch(team, "slack:U-CAROL", "8xA100 4h spot region=us-east-1 project=vision")
    assert record.spec.project == "vision"
    assert [status.name for status in team.budget_standing(record)] == ["vision", "*"]
    team.approve(record.id, "slack:U-BOB")
    (instance,) = _instances(record.id)
    tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
    assert (tags["project"], tags["team"]) == ("vision", "ml")  # the launch's project over the policy's default
    with pytest.raises(ParseError, match="unknown project 'visoin' — projects with a budget: llm, vision — "
                                         "example: launch 8xA100 72h project=llm"):
        submit_launch(team, "slack:U-CAROL", "8xA100 4h project=visoin")
    with pytest.raises(ParseError, match="project '\\$x' must be one word of letters, digits"):
        submit_launch(team, "slack:U-CAROL", "8xA100 4h project=$x")
    assert submit_launch(approvals, "slack:U-CAROL", "8xA100 4h project=anything").spec.project == \
        "anything"  # without project budgets any project is recorded
