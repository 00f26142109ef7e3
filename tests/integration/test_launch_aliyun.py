"""Approval-gated launches on Alibaba Cloud, through the same lifecycle as AWS: the official SDK
(alibabacloud-ecs20140526) over HTTP to a local fake of ECS API version 2014-05-26 (`ecs_fake.py`: RunInstances with
DryRun and ClientToken, tags, DescribeInstances by tag, DescribeZones, DescribeAccountAttributes, StopInstances,
DeleteInstances, TagResources, out-of-stock zones; requests signed with ACS3-HMAC-SHA256 and checked). SQLite store,
injected clock.
"""

from __future__ import annotations

import threading

import pytest
from ecs_fake import ACCESS_KEY_ID, ACCESS_KEY_SECRET, FakeEcs
from support import Clock, offer, running, submit_launch

from gpu_assist.clouds.launch.aliyun import AlibabaProvisioner
from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.errors import PolicyError
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.lifecycle.ports import Clouds
from gpu_assist.store import Store

pytest.importorskip("alibabacloud_ecs20140526")

from gpu_assist.clouds.sdk.aliyun import ecs_client  # noqa: E402

APPROVERS = [f"slack:U-APPROVER{n}" for n in range(1, 6)]
ALIYUN = {"account": "acme-hz", "image_id": "ubuntu_22_04_x64_20G_alibase_gpu", "vswitch_id": "vsw-bp1test"}
LAUNCH = "8xV100 72h provider=aliyun region=cn-hangzhou"


def _policy(**rules) -> Policy:
    return Policy(**{"approvers": frozenset(APPROVERS), "allowed_providers": ("aws", "aliyun"),
                     "clouds": {"aliyun": dict(ALIYUN)}, "ami_id": "ami-12c6146b", **rules})


@pytest.fixture
def ecs(monkeypatch):
    """The SDK's credential chain reads its environment variables once, at import (`auth_util`): set both."""
    from alibabacloud_credentials.utils import auth_util

    for name, value in (("access_key_id", ACCESS_KEY_ID), ("access_key_secret", ACCESS_KEY_SECRET)):
        monkeypatch.setattr(auth_util, f"environment_{name}", value)
        monkeypatch.setenv(f"ALIBABA_CLOUD_{name.upper()}", value)
    with running(FakeEcs()) as server:
        yield server


@pytest.fixture
def fresh_catalog(make_catalog):
    """A catalog as `catalog refresh aliyun` leaves it (ECS's own prices, dated the day before)."""
    row = dict(provider="aliyun", instance_type="ecs.gn6v-c8g1.16xlarge", gpu="V100", gpu_count="8",
               gpu_memory_gib="16", vcpus="64", memory_gib="256", currency="CNY", billing_granularity_s="3600",
               source="aliyun-api", as_of="2026-12-01")
    return make_catalog(offer(region="cn-hangzhou", on_demand_hourly="210.44", spot_hourly="52.6", **row),
                        offer(region="cn-beijing", on_demand_hourly="212.5", **row))


@pytest.fixture
def clock():
    return Clock()


def _approvals(ecs, tmp_path, catalog, clock, policy=None) -> Approvals:
    policy = policy or _policy()
    provisioner = AlibabaProvisioner(policy, client=lambda region: ecs_client(region, ecs.endpoint))
    return Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy,
                     Clouds({"aws": AwsProvisioner(policy), "aliyun": provisioner}), catalog, clock)


def _tags(instance) -> dict[str, str]:
    return {t["TagKey"]: t["TagValue"] for t in instance["Tags"]["Tag"]}


def test_five_concurrent_approver_clicks_launch_one_ecs_instance_with_tags_and_token(ecs, tmp_path,
                                                                                   fresh_catalog, clock):
    approvals = _approvals(ecs, tmp_path, fresh_catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    spec = record.spec
    assert (spec.provider, spec.account, spec.region, spec.instance_type) == \
        ("aliyun", "acme-hz", "cn-hangzhou", "ecs.gn6v-c8g1.16xlarge")
    assert spec.checks.dry_run == "ok"
    assert spec.checks.quota == "ok: 64 vCPUs of 1000 (max-postpaid-instance-vcpu-count)"
    assert ecs.live() == []

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
    (instance,) = ecs.live()
    (run,) = ecs.runs()
    assert run["ClientToken"] == f"{record.id}@cn-hangzhou-h"
    assert (run["InstanceChargeType"], run["VSwitchId"], run["Amount"]) == ("PostPaid", "vsw-bp1test", "1")
    assert _tags(instance) == {"gpu-assist:request-id": record.id, "gpu-assist:requester": "slack:U-CAROL",
                               "gpu-assist:expires-at": "2026-12-05T12:00:00Z"}
    assert approvals.store.fetch(record.id).instance_ids == (instance["InstanceId"],)


class Crash(BaseException):
    """The approver's process dying right after ECS made the instance."""


def test_a_crash_after_run_instances_is_finished_by_the_reconciler_without_a_second_instance(ecs, tmp_path,
                                                                                          fresh_catalog, clock):
    approvals = _approvals(ecs, tmp_path, fresh_catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    provisioner = approvals.provisioner.of("aliyun")
    real_run = provisioner._run

    def run_then_die(*args, **kwargs):
        real_run(*args, **kwargs)
        raise Crash

    provisioner._run = run_then_die
    with pytest.raises(Crash):
        approvals.approve(record.id, APPROVERS[0])
    provisioner._run = real_run
    clock.advance(minutes=6)
    assert approvals.orchestration.reconcile() == [record.id]
    (instance,) = ecs.live()
    done = approvals.store.fetch(record.id)
    assert done.state == "running" and done.instance_ids == (instance["InstanceId"],) and len(ecs.runs()) == 1


def test_out_of_stock_zones_fail_over_and_spot_bids_the_ceiling_in_yuan(ecs, tmp_path, fresh_catalog, clock):
    ecs.sold_out.add("cn-hangzhou-h")
    approvals = _approvals(ecs, tmp_path, fresh_catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", "8xV100 10h spot provider=aliyun")
    done = approvals.approve(record.id, APPROVERS[0])
    assert done.state == "running" and done.spec.launched_zone == "cn-hangzhou-i"
    runs = ecs.runs()
    assert [r["ZoneId"] for r in runs] == ["cn-hangzhou-h", "cn-hangzhou-i"] and len(ecs.live()) == 1
    assert (runs[-1]["SpotStrategy"], runs[-1]["SpotPriceLimit"]) == ("SpotWithPriceLimit", "52.6")


def test_stop_of_a_foreign_instance_is_refused_and_stop_ttl_and_extension_act_on_ours(ecs, tmp_path,
                                                                                    fresh_catalog, clock):
    approvals = _approvals(ecs, tmp_path, fresh_catalog, clock)
    foreign = ecs.add_foreign()
    with pytest.raises(PolicyError, match=f"not launched by gpu-assist: {foreign}"):
        approvals.submit_stop("slack:U-CAROL", [foreign], "cn-hangzhou")
    assert ecs.instances[foreign]["Status"] == "Running"

    first = approvals.approve(submit_launch(approvals, "slack:U-CAROL", LAUNCH).id, APPROVERS[0])
    second = approvals.approve(submit_launch(approvals, "slack:U-CAROL", LAUNCH).id, APPROVERS[1])
    stop = approvals.submit_stop("slack:U-CAROL", list(first.instance_ids))
    assert approvals.approve(stop.id, APPROVERS[2]).state == "stopped"
    assert ecs.instances[first.instance_ids[0]]["Status"] == "Deleted"  # the default stop action releases it

    extension = approvals.submit_extend("slack:U-CAROL", second.id, 3600)
    assert approvals.approve(extension.id, APPROVERS[3]).state == "extended"
    assert _tags(ecs.instances[second.instance_ids[0]])["gpu-assist:expires-at"] == "2026-12-05T13:00:00Z"
    clock.advance(hours=72, minutes=30)
    assert approvals.orchestration.reap() == []  # extended by an hour
    clock.advance(hours=1)
    assert approvals.orchestration.reap() == [second.id]
    assert ecs.instances[second.instance_ids[0]]["Status"] == "Deleted"


def test_the_shipped_article_prices_never_launch(ecs, tmp_path, catalog, clock):
    """Alibaba's rows in the shipped catalog are articles' claims (unverified): a launch needs a refreshed price."""
    approvals = _approvals(ecs, tmp_path, catalog, clock, _policy(allow_stale_prices=True))
    with pytest.raises(PolicyError, match="no verified aliyun offer matches"):
        submit_launch(approvals, "slack:U-CAROL", "1xA10 10h provider=aliyun")
    assert ecs.runs() == []


def test_the_default_client_finds_the_endpoint_and_keys_in_the_environment_and_rides_out_throttling(
        ecs, tmp_path, fresh_catalog, clock, monkeypatch):
    """What a server does: no client injected; GPU_ASSIST_ALIYUN_ENDPOINT and the SDK's own credential chain."""
    monkeypatch.setenv("GPU_ASSIST_ALIYUN_ENDPOINT", f"http://{ecs.endpoint}")
    policy, pauses = _policy(), []
    approvals = Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy,
                          Clouds({"aliyun": AlibabaProvisioner(policy, sleep=pauses.append)}), fresh_catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", LAUNCH)
    ecs.throttle = 2
    done = approvals.approve(record.id, APPROVERS[0])
    assert done.state == "running", done.error
    assert len(ecs.live()) == 1 and pauses == [0.5, 1.0]
