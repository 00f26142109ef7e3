"""Approval-gated launches on Tencent Cloud, through the same lifecycle as AWS: the official SDK
(tencentcloud-sdk-python-cvm) over HTTP to a local fake of CVM API version 2017-03-12 (`cvm_fake.py`: RunInstances
with DryRun and ClientToken, tags, DescribeInstances by tag, DescribeZones, DescribeAccountQuota, Stop and
TerminateInstances, sold-out zones; requests signed with TC3-HMAC-SHA256 and checked). SQLite store, injected clock.
"""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from cvm_fake import SECRET_ID, SECRET_KEY, FakeCvm
from support import Clock, offer, running, submit_launch

from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.clouds.launch.tencent import TencentProvisioner
from gpu_assist.commands.lifecycle import clouds
from gpu_assist.errors import PolicyError
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.lifecycle.ports import Clouds, Launched
from gpu_assist.clouds.sdk.tencent import cvm_client
from gpu_assist.store import Store

pytest.importorskip("tencentcloud.cvm.v20170312")

APPROVERS = [f"slack:U-APPROVER{n}" for n in range(1, 6)]
TENCENT = {"account": "acme-gz", "image_id": "img-gpuassist", "region": "ap-guangzhou"}
LAUNCH = "8xV100-32GB 72h provider=tencent region=ap-guangzhou"


def _policy(**rules) -> Policy:
    return Policy(**{"approvers": frozenset(APPROVERS), "allowed_providers": ("aws", "tencent"),
                     "clouds": {"tencent": dict(TENCENT)}, "ami_id": "ami-12c6146b", **rules})


@pytest.fixture
def cvm(monkeypatch):
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", SECRET_ID)
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", SECRET_KEY)
    with running(FakeCvm()) as server:
        yield server


@pytest.fixture
def fresh_catalog(make_catalog):
    """A catalog as `catalog refresh tencent` leaves it (CVM's own prices, dated the day before), and AWS's."""
    return make_catalog(
        offer(provider="tencent", region="ap-guangzhou", instance_type="GN10Xp.20XLARGE320", gpu="V100-32GB",
              gpu_count="8", gpu_memory_gib="32", vcpus="80", currency="CNY", on_demand_hourly="95.84",
              spot_hourly="30.5", billing_granularity_s="3600", source="tencent-api", as_of="2026-12-01"),
        offer(provider="tencent", region="ap-shanghai", instance_type="GN10Xp.20XLARGE320", gpu="V100-32GB",
              gpu_count="8", gpu_memory_gib="32", vcpus="80", currency="CNY", on_demand_hourly="99.10",
              billing_granularity_s="3600", source="tencent-api", as_of="2026-12-01"),
        offer(provider="aws", region="us-east-1", instance_type="p3dn.24xlarge", gpu="V100-32GB", gpu_count="8",
              gpu_memory_gib="32", on_demand_hourly="31.212"))


@pytest.fixture
def clock():
    return Clock()


def _approvals(cvm, tmp_path, catalog, clock, policy=None, provisioner=None) -> Approvals:
    policy = policy or _policy()
    provisioner = provisioner or TencentProvisioner(policy, client=lambda region: cvm_client(region, cvm.endpoint))
    return Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy,
                     Clouds({"aws": AwsProvisioner(policy), "tencent": provisioner}), catalog, clock)


def _tags(instance) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in instance["Tags"]}


def test_five_concurrent_approver_clicks_launch_one_cvm_instance_with_tags_and_token(cvm, tmp_path,
                                                                                   fresh_catalog, clock):
    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    spec = record.spec
    assert (spec.provider, spec.account, spec.region, spec.instance_type) == \
        ("tencent", "acme-gz", "ap-guangzhou", "GN10Xp.20XLARGE320")
    assert spec.checks.dry_run == "ok"
    assert spec.checks.quota == "ok: 1 of 10 instances left (PostPaidQuotaSet, ap-guangzhou-3)"
    assert [c.region for c in spec.candidates] == ["ap-guangzhou"]  # Shanghai is dearer: no fallback above it
    assert cvm.live() == []  # nothing runs before approval

    gate, outcomes = threading.Barrier(len(APPROVERS)), []

    def click(approver: str) -> None:
        gate.wait()
        try:
            outcomes.append(approvals.approve(record.id, approver).state)
        except PolicyError as error:
            outcomes.append(str(error))

    threads = [threading.Thread(target=click, args=(a,)) for a in APPROVERS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert outcomes.count("running") == 1 and len(outcomes) == 5
    assert all("is already" in o for o in outcomes if o != "running")
    (instance,) = cvm.live()
    (run,) = cvm.runs()  # one RunInstances, with the request's token and tags
    assert run["ClientToken"] == f"{record.id}@ap-guangzhou-3"
    assert _tags(instance) == {"gpu-assist:request-id": record.id, "gpu-assist:requester": "slack:U-CAROL",
                               "gpu-assist:expires-at": "2026-12-05T12:00:00Z"}
    assert (run["InstanceChargeType"], run["ImageId"], run["InstanceCount"]) == ("POSTPAID_BY_HOUR", "img-gpuassist", 1)
    done = approvals.store.fetch(record.id)
    assert done.instance_ids == (instance["InstanceId"],) and done.spec.launched_zone == "ap-guangzhou-3"
    refused = [e for e in approvals.store.audit_trail(record.id) if e.outcome == "refused"]
    assert len(refused) == 4


def test_the_same_client_token_gets_the_same_instances_from_cvm(cvm, tmp_path, fresh_catalog, clock):
    """What AWS's moto cannot show: CVM dedupes by ClientToken, so a retried RunInstances starts nothing new."""
    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    provisioner = approvals.provisioner.of("tencent")
    first = provisioner._run(record.spec, "ap-guangzhou", "ap-guangzhou-3", "", lambda: True, [])
    again = provisioner._run(record.spec, "ap-guangzhou", "ap-guangzhou-3", "", lambda: True, [])
    assert first.instance_ids == again.instance_ids and len(cvm.live()) == 1 and len(cvm.runs()) == 2


class Crash(BaseException):
    """The approver's process dying right after CVM made the instance (before the store heard of it)."""


def test_a_crash_after_run_instances_is_finished_by_the_reconciler_without_a_second_instance(cvm, tmp_path,
                                                                                          fresh_catalog, clock):
    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    provisioner = approvals.provisioner.of("tencent")
    real_run = provisioner._run

    def run_then_die(*args, **kwargs):
        real_run(*args, **kwargs)
        raise Crash

    provisioner._run = run_then_die
    with pytest.raises(Crash):
        approvals.approve(record.id, APPROVERS[0])
    assert approvals.store.fetch(record.id).state == "launching" and len(cvm.live()) == 1
    provisioner._run = real_run

    clock.advance(minutes=6)  # the dead owner's lease is over
    assert approvals.orchestration.reconcile() == [record.id]
    done = approvals.store.fetch(record.id)
    (instance,) = cvm.live()
    assert done.state == "running" and done.instance_ids == (instance["InstanceId"],)
    assert len(cvm.runs()) == 1  # found by its tag, not launched again
    trail = {e.action: e.detail for e in approvals.store.audit_trail(record.id)}
    assert "take over" in trail and "found by tag, not launched again" in trail["running"]


def test_sold_out_zones_fail_over_to_the_next_one(cvm, tmp_path, fresh_catalog, clock):
    cvm.sold_out.add("ap-guangzhou-3")
    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    done = approvals.approve(record.id, APPROVERS[0])
    assert done.state == "running" and done.spec.launched_zone == "ap-guangzhou-4"
    running_event = [e for e in approvals.store.audit_trail(record.id) if e.action == "running"][0]
    assert "tried: ap-guangzhou-3: ResourcesSoldOut.SpecifiedInstanceType" in running_event.detail


def test_a_spot_launch_bids_the_approved_ceiling(cvm, tmp_path, fresh_catalog, clock):
    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", "8xV100-32GB 10h spot provider=tencent")
    approvals.approve(record.id, APPROVERS[0])
    (run,) = cvm.runs()
    assert run["InstanceChargeType"] == "SPOTPAID"
    assert run["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"] == "30.5"  # yuan, as CVM takes it
    assert (record.spec.native_currency, record.spec.currency) == ("CNY", "USD")


def test_stop_of_an_instance_gpu_assist_did_not_launch_is_refused(cvm, tmp_path, fresh_catalog, clock):
    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock)
    foreign = cvm.add_foreign()
    with pytest.raises(PolicyError, match=f"not launched by gpu-assist: {foreign}"):
        approvals.submit_stop("slack:U-CAROL", [foreign], "ap-guangzhou")
    with pytest.raises(PolicyError, match="not launched by gpu-assist"):
        approvals.provisioner.stop(Launched("tencent", "ap-guangzhou", (foreign,)))  # the provisioner refuses too
    assert cvm.instances[foreign]["InstanceState"] == "RUNNING"
    assert not [c for c in cvm.calls if c[0] in ("StopInstances", "TerminateInstances")]


def test_a_stop_request_stops_it_and_the_ttl_reaper_ends_another(cvm, tmp_path, fresh_catalog, clock):
    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock, _policy(stop_action="stop"))
    first = approvals.approve(submit_launch(approvals, "slack:U-CAROL", LAUNCH).id, APPROVERS[0])
    second = approvals.approve(submit_launch(approvals, "slack:U-CAROL", LAUNCH).id, APPROVERS[1])

    stop = approvals.submit_stop("slack:U-CAROL", list(first.instance_ids))
    assert stop.spec.provider == "tencent" and stop.spec.region == "ap-guangzhou"
    assert approvals.approve(stop.id, APPROVERS[2]).state == "stopped"
    assert approvals.store.fetch(first.id).state == "stopped"
    assert cvm.instances[first.instance_ids[0]]["InstanceState"] == "STOPPED"

    clock.advance(hours=71, minutes=59)
    assert approvals.orchestration.reap() == []
    clock.advance(minutes=2)  # its 72 h time to live is over
    assert approvals.orchestration.reap() == [second.id]
    assert approvals.store.fetch(second.id).state == "stopped"
    assert cvm.instances[second.instance_ids[0]]["InstanceState"] == "STOPPED"
    (stopped,) = [p for a, _, p in cvm.calls if a == "StopInstances" and p["InstanceIds"] == list(second.instance_ids)]
    assert stopped["StoppedMode"] == "STOP_CHARGING"


def test_with_allowed_providers_unset_nothing_but_aws_launches(cvm, tmp_path, fresh_catalog, clock):
    policy = Policy(approvers=frozenset(APPROVERS), ami_id="ami-12c6146b")
    assert policy.allowed_providers == ("aws",)
    approvals = Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy, clouds(policy), fresh_catalog, clock)
    assert approvals.provisioner.launches == ("aws",)
    with pytest.raises(PolicyError, match="launches on tencent are off: the policy allows aws"):
        submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    with pytest.raises(PolicyError, match="launches on tencent are off"):
        approvals.provisioner.of("tencent", launching=True)
    # a launch planned while the policy allowed Tencent is refused at approval once it no longer does
    allowed = _approvals(cvm, tmp_path, fresh_catalog, clock)
    record = submit_launch(allowed, "slack:U-CAROL", LAUNCH)
    allowed.policy = policy
    with pytest.raises(PolicyError, match="policy refuses it now: launches on tencent are off"):
        allowed.approve(record.id, APPROVERS[0])
    assert cvm.runs() == [] and allowed.store.fetch(record.id).state == "pending"


def test_a_launch_priced_by_the_stale_2021_list_is_refused_unless_the_policy_allows_it(cvm, tmp_path, catalog,
                                                                                      clock):
    approvals = _approvals(cvm, tmp_path, catalog, clock)
    with pytest.raises(PolicyError, match="its only price is a stale list's: refresh the catalog first"):
        submit_launch(approvals, "slack:U-CAROL", "8xV100-32GB 72h provider=tencent")
    assert cvm.runs() == []

    lenient = _approvals(cvm, tmp_path, catalog, clock, _policy(allow_stale_prices=True))
    record = submit_launch(lenient, "slack:U-CAROL", "8xV100-32GB 72h provider=tencent")
    spec = record.spec
    assert spec.price_stale and spec.price_source == "TC-PRICE-20210927 2021-09-27"
    assert spec.region == "ap-guangzhou"  # the list is country-wide: the cloud's configured region
    assert spec.instance_type == "GN10Xp.20XLARGE320" and spec.currency == "USD"
    # a mainland region the list does not name: priced by the country-wide list, launched where asked
    named = submit_launch(lenient, "slack:U-CAROL", "8xV100-32GB 72h provider=tencent region=ap-shanghai").spec
    assert (named.region, named.price_source, named.price_stale) == ("ap-shanghai", spec.price_source, True)


def test_an_approval_card_names_the_cloud_the_account_and_a_stale_price(cvm, tmp_path, catalog, clock):
    from slackbot.blocks import approval_card

    approvals = _approvals(cvm, tmp_path, catalog, clock, _policy(allow_stale_prices=True))
    record = submit_launch(approvals, "slack:U-CAROL", "8xV100-32GB 72h provider=tencent")
    text = "\n".join(b["text"]["text"] for b in approval_card(record) if b["type"] == "section")
    assert "Cloud: Tencent Cloud, account acme-gz · price TC-PRICE-20210927 of 2021-09-27\n" \
           "In CNY: ¥95.84/h per instance, as the cloud bills it" in text
    assert ":warning: price from Tencent Cloud's stale 2021-09-27 list; refresh first: catalog refresh tencent" \
        in text
    print(text)  # the card as it renders, for the report (pytest -s)
    from gpu_assist.render.operations import render_request

    detail = render_request(record)
    assert "  cloud: Tencent Cloud, account acme-gz\n  price from Tencent Cloud's stale 2021-09-27 list" in detail


def test_wrong_keys_are_a_clear_refusal_without_the_secret(cvm, tmp_path, fresh_catalog, clock, monkeypatch):
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "not-the-key")
    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    assert record.spec.checks.dry_run.startswith("refused: Tencent Cloud refused checking the launch (DryRun): "
                                                 "AuthFailure.SignatureFailure")
    assert record.spec.checks.quota.startswith("quota unknown (PostPaidQuotaSet)")
    stored = approvals.store.engine.connect().exec_driver_sql("select * from requests").fetchall()
    assert "not-the-key" not in repr(stored) and SECRET_KEY not in repr(stored)
    assert Decimal(record.spec.hourly) > 0


@pytest.mark.parametrize("currency, hourly, five_hours", [
    ("CNY", Decimal("95.84"), Decimal("479.20")),  # a team that counts in yuan: the list's own figure
    ("USD", Decimal("14.405787"), Decimal("72.028935")),  # converted at the catalog's rate (6.652882 CNY per USD)
])
def test_spend_counts_a_tencent_launch_in_the_teams_currency(cvm, tmp_path, fresh_catalog, clock, currency, hourly,
                                                             five_hours):
    from gpu_assist.team.periods import month_start, parse_period
    from gpu_assist.team.spending import spend_report

    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock, _policy(currency=currency, max_cost=Decimal(90_000)))
    record = approvals.approve(submit_launch(approvals, "slack:U-CAROL", LAUNCH).id, APPROVERS[0])
    assert (record.currency, record.hourly_price) == (currency, hourly)
    clock.advance(hours=5)
    report = spend_report(approvals.store.spend_rows(month_start(clock())), parse_period("mtd").at(clock()), clock(),
                          currency=currency)
    (launch,) = report.launches
    assert (launch.instance_type, launch.hours, launch.cost) == ("GN10Xp.20XLARGE320", Decimal(5), five_hours)
    assert report.groups["requester"] == {"slack:U-CAROL": five_hours}


def test_an_exhausted_quota_is_on_the_card_and_the_launch_fails_with_cvms_reason(cvm, tmp_path, fresh_catalog,
                                                                                clock):
    cvm.quota = 0
    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    assert record.spec.checks.quota == "quota too low: 1 instances needed, 0 of 0 left (PostPaidQuotaSet, " \
                                       "ap-guangzhou-3); ask Tencent Cloud to raise it"
    assert "LimitExceeded.InstanceQuota" in record.spec.checks.dry_run
    failed = approvals.approve(record.id, APPROVERS[0])
    assert failed.state == "failed" and "LimitExceeded.InstanceQuota" in failed.error and cvm.live() == []


def test_the_default_client_finds_the_endpoint_and_keys_in_the_environment_and_rides_out_throttling(
        cvm, tmp_path, fresh_catalog, clock, monkeypatch):
    """What a server does: no client injected; GPU_ASSIST_TENCENT_ENDPOINT and the SDK's own credential chain."""
    monkeypatch.setenv("GPU_ASSIST_TENCENT_ENDPOINT", f"http://{cvm.endpoint}")
    policy = _policy()
    pauses: list[float] = []
    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock, policy, TencentProvisioner(policy, sleep=pauses.append))
    record = submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    cvm.throttle = 2  # RequestLimitExceeded twice: retried with backoff, RunInstances by its ClientToken
    done = approvals.approve(record.id, APPROVERS[0])
    assert done.state == "running", done.error
    assert len(cvm.live()) == 1
    # the lookup by tag, answered the third time, then the check for duplicates once it runs
    assert [a for a, _, _ in cvm.calls].count("DescribeInstances") == 4
    assert pauses == [0.5, 1.0]


def test_an_owner_taken_over_right_before_run_instances_gets_the_same_instance_by_its_client_token(
        cvm, tmp_path, fresh_catalog, clock):
    """What moto cannot show for AWS: the approver passed its ownership check and is about to call RunInstances
    when its lease ends; the reconciler takes over and launches; the old owner's late call, with the same
    ClientToken, gets the same instance from CVM. One instance, nothing to terminate, the old owner gives up."""
    policy = _policy()
    provisioner = TencentProvisioner(policy, client=lambda region: cvm_client(region, cvm.endpoint))
    approvals = _approvals(cvm, tmp_path, fresh_catalog, clock, policy, provisioner)
    record = submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    paused, go_on, real_run = threading.Event(), threading.Event(), provisioner._run

    def pause_first_run(spec, region, zone, ends_at, still_ours, attempts):
        def checked_then_paused() -> bool:
            ours = still_ours()
            if not paused.is_set():
                paused.set()
                assert go_on.wait(60), "the test never let the paused launch go on"
            return ours
        return real_run(spec, region, zone, ends_at, checked_then_paused, attempts)

    provisioner._run = pause_first_run
    results: list = []
    approver = threading.Thread(target=lambda: results.append(approvals.approve(record.id, APPROVERS[0])))
    approver.start()
    assert paused.wait(60)
    clock.advance(minutes=6)  # the approver's lease ends while it waits
    assert approvals.orchestration.reconcile() == [record.id]
    recorded = approvals.store.fetch(record.id).instance_ids
    go_on.set()
    approver.join(60)
    final = approvals.store.fetch(record.id)
    assert final.state == "running" and final.instance_ids == recorded and len(cvm.live()) == 1
    tokens = [run["ClientToken"] for run in cvm.runs()]
    assert len(tokens) == 2 and len(set(tokens)) == 1  # two calls, one key, one instance
    actions = [(e.actor, e.action) for e in approvals.store.audit_trail(record.id)]
    assert (APPROVERS[0], "give up") in actions and not [a for a in actions if a[1] == "terminate duplicates"]


def test_instances_launched_before_a_cloud_was_switched_off_are_still_reaped(cvm, tmp_path, fresh_catalog, clock):
    allowed = _approvals(cvm, tmp_path, fresh_catalog, clock)
    running_launch = allowed.approve(submit_launch(allowed, "slack:U-CAROL", LAUNCH).id, APPROVERS[0])
    switched_off = Policy(approvers=frozenset(APPROVERS), ami_id="ami-12c6146b")
    provisioners = clouds(switched_off)
    provisioners.by_provider["tencent"] = allowed.provisioner.of("tencent")  # the fake's endpoint
    later = Approvals(allowed.store, switched_off, provisioners, fresh_catalog, clock)
    with pytest.raises(PolicyError, match="launches on tencent are off"):
        submit_launch(later, "slack:U-CAROL", LAUNCH)
    clock.advance(hours=73)
    assert later.orchestration.reap() == [running_launch.id]
    assert cvm.instances[running_launch.instance_ids[0]]["InstanceState"] == "SHUTDOWN"
