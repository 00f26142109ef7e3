"""Launching on other clouds than AWS (#35), in-process: the grammar, the policy's settings, the spec's stored
form, and `provision.Clouds` handing each call to the right cloud."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

import pytest
from support import OLD_LAUNCH

from gpu_assist.commands.grammar import parse_command
from gpu_assist.errors import ParseError, PolicyError
from gpu_assist.lifecycle.policy import Policy, load_policy
from gpu_assist.catalog.providers import cloud_of
from gpu_assist.lifecycle.ports import Clouds, Launched, stopping
from gpu_assist.lifecycle.specs import ExtendSpec, LaunchSpec, spec_from_json, to_json


def test_a_launch_names_one_cloud_and_its_words_keep_it(gpus):
    command = parse_command("launch 8xV100-32GB 72h provider=tencent region=ap-guangzhou", gpus)
    assert command.what.providers == ("tencent",)
    assert command.words() == "launch 8xV100-32GB 72h on-demand region=ap-guangzhou provider=tencent"
    assert parse_command("launch 8xA100 72h", gpus).what.providers == ("aws",)
    assert parse_command("launch 8xA100 72h", gpus).words() == "launch 8xA100 72h on-demand"  # as before
    assert parse_command("launch 8xH100 24h provider=gcp", gpus).what.providers == ("gcp",)  # through SkyPilot
    with pytest.raises(ParseError, match="cannot launch on hyperstack: Hyperstack has no provisioner of gpu-assist's "
                                         "own and SkyPilot 0.14, the launch engine, does not launch on it"):
        parse_command("launch 8xA100 72h provider=hyperstack", gpus)
    with pytest.raises(ParseError, match="a launch names one cloud"):
        parse_command("launch 8xA100 72h provider=aws,tencent", gpus)


@pytest.mark.parametrize("instance_id, cloud", [
    ("i-0123456789abcdef0", "aws"), ("i-01234567", "aws"), ("ins-a1b2c3d4", "tencent"),
    ("i-bp1g6zv0ce8oghu7k3a4", "aliyun"), ("i-xyz", None), ("ins-1", None)])
def test_an_instance_id_says_its_cloud(instance_id, cloud, gpus):
    assert cloud_of(instance_id) == cloud
    if cloud:
        assert parse_command(f"stop {instance_id}", gpus).instance_ids == (instance_id,)
    else:
        with pytest.raises(ParseError, match="is not an instance id"):
            parse_command(f"stop {instance_id}", gpus)


def test_the_policy_reads_clouds_from_its_file_and_refuses_unknown_ones(tmp_path):
    assert load_policy({}).allowed_providers == ("aws",) and not load_policy({}).allow_stale_prices
    path = tmp_path / "policy.toml"
    path.write_text('[policy]\nallowed_providers = ["aws", "tencent"]\nallow_stale_prices = true\n'
                    '[policy.clouds.tencent]\naccount = "acme-gz"\nimage_id = "img-1"\n', encoding="utf-8")
    policy = load_policy({"GPU_ASSIST_CONFIG": str(path)})
    assert policy.allowed_providers == ("aws", "tencent") and policy.allow_stale_prices
    assert (policy.cloud("tencent", "account"), policy.cloud("tencent", "region")) == ("acme-gz", "ap-guangzhou")
    assert policy.cloud("aliyun", "region") == "cn-hangzhou" and policy.cloud("aliyun", "image_id") is None
    assert load_policy({"GPU_ASSIST_ALLOWED_PROVIDERS": "aws,aliyun"}).allowed_providers == ("aws", "aliyun")
    assert load_policy({"GPU_ASSIST_ALLOWED_PROVIDERS": "aws,gcp"}).allowed_providers == ("aws", "gcp")  # SkyPilot
    with pytest.raises(PolicyError, match=r"gpu-assist launches on aws, gcp, azure, .*huawei, not 'hyperstack'"):
        load_policy({"GPU_ASSIST_ALLOWED_PROVIDERS": "aws,hyperstack"})
    path.write_text('[policy.clouds.tencent]\nsecret_key = "x"\n', encoding="utf-8")
    with pytest.raises(PolicyError, match=r"settings are account, region, image_id"):
        load_policy({"GPU_ASSIST_CONFIG": str(path)})


def _spec(**changes) -> LaunchSpec:
    return dataclasses.replace(spec_from_json("launch", OLD_LAUNCH), **changes)


def test_an_aws_spec_is_stored_as_before_and_a_tencent_one_keeps_its_cloud():
    assert to_json(_spec()) == OLD_LAUNCH  # nothing new written for AWS
    tencent = _spec(provider="tencent", account="acme-gz", price_stale=True, native_currency="CNY",
                    native_ceiling_hourly=Decimal("95.84"), price_source="TC-PRICE-20210927 2021-09-27")
    assert spec_from_json("launch", to_json(tencent)) == tencent


def test_the_policy_refuses_a_cloud_it_does_not_allow_and_a_stale_price_unless_allowed():
    stale = _spec(provider="tencent", instance_type="GN10Xp.20XLARGE320", region="ap-guangzhou", price_stale=True)
    assert Policy().violations(stale)[:2] == [
        "launches on tencent are off: the policy allows aws (allowed_providers)",
        "its only price is a stale list's: refresh the catalog first, or set allow_stale_prices = true in the policy"]
    assert Policy(allowed_providers=("aws", "tencent"), allow_stale_prices=True).violations(stale) == []
    assert Policy().violations(_spec()) == []  # AWS's p4d as before
    extension = ExtendSpec(request_id="r-000000000002", launch_request="r-000000000001", extra_s=3600,
                           launch_ends_at=dt.datetime(2026, 12, 5, tzinfo=dt.timezone.utc), ttl_s=7200,
                           hourly=Decimal(14), estimated_total=Decimal(14), gpu="V100-32GB", gpus=8,
                           instance_type="GN10Xp.20XLARGE320", instances=1, pricing_model="on-demand",
                           region="ap-guangzhou", provider="tencent")
    assert Policy().violations(extension) == ["launches on tencent are off: the policy allows aws (allowed_providers)"]
    assert spec_from_json("extend", to_json(extension)) == extension


class _Cloud:
    def __init__(self, name):
        self.name, self.calls = name, []

    def stop(self, launched):
        self.calls.append(("stop", launched.instance_ids, launched.region))
        return list(launched.instance_ids)

    def dry_run(self, spec):
        return f"ok on {self.name}"


def test_clouds_hand_each_call_to_the_cloud_of_the_launch_record():
    aws, tencent = _Cloud("aws"), _Cloud("tencent")
    clouds = Clouds({"aws": aws, "tencent": tencent})
    assert repr(clouds) == "Clouds(aws, tencent; launches on aws, tencent)"
    clouds.stop(Launched("tencent", "ap-guangzhou", ("ins-a1b2c3d4",)))
    clouds.stop(Launched("aws", "us-east-1", ("i-0123456789abcdef0",)))
    assert tencent.calls == [("stop", ("ins-a1b2c3d4",), "ap-guangzhou")]
    assert aws.calls == [("stop", ("i-0123456789abcdef0",), "us-east-1")]
    assert clouds.dry_run(_spec(provider="tencent")) == "ok on tencent"
    with pytest.raises(PolicyError, match="launches on aliyun are off: the policy allows aws, tencent"):
        clouds.stop(Launched("aliyun", "cn-hangzhou", ("i-bp1g6zv0ce8oghu7k3a4",)))
    aws_only = Clouds({"aws": aws, "tencent": tencent}, launches=("aws",))
    aws_only.stop(Launched("tencent", "ap-guangzhou", ("ins-a1b2c3d4",)))  # what it launched can still be stopped
    with pytest.raises(PolicyError, match="launches on tencent are off: the policy allows aws"):
        aws_only.dry_run(_spec(provider="tencent"))


def test_a_record_places_instances_and_an_ids_form_is_only_the_fallback():
    assert stopping(["ins-a1b2c3d4"], None, "ap-guangzhou") == Launched("tencent", "ap-guangzhou", ("ins-a1b2c3d4",))
    # an id of no native form, placed by the launch record that holds it
    assert stopping(["node-7"], "aws", "us-east-1").provider == "aws"
    with pytest.raises(PolicyError, match="not instances of one cloud"):
        stopping(["ins-a1b2c3d4", "i-0123456789abcdef0"], None, "ap-guangzhou")


def test_an_aws_card_names_the_account_only_when_the_policy_gives_it_an_alias():
    from slackbot.request_cards import _cloud_lines

    assert _cloud_lines(_spec()) == ""  # as it always read
    assert _cloud_lines(_spec(account="acme-prod")) == \
        "\nCloud: AWS, account acme-prod · price skypilot-aws of 2026-12-01"


def test_the_leaders_idle_round_asks_cloudwatch_about_aws_launches_only():
    from types import SimpleNamespace

    from slackbot.spend_watch import _fleet

    asked = []
    context = SimpleNamespace(approvals=SimpleNamespace(policy=Policy()), catalog=None,
                              aws_client=lambda service, region: asked.append((service, region)))
    tencent = SimpleNamespace(state="running", spec=_spec(provider="tencent", region="ap-guangzhou",
                                                          launched_region=None))
    assert _fleet(context, [tencent], now=None) == [] and asked == []  # never "idle": no GPU metrics asked


def test_a_spot_bid_is_in_the_clouds_own_currency_whatever_the_team_counts_in():
    from gpu_assist.clouds.launch.aws import AwsProvisioner

    aws = AwsProvisioner(Policy(ami_id="ami-12c6146b"))
    cny_team = _spec(pricing_model="spot", currency="CNY", ceiling_hourly=Decimal("80.5"), native_currency="USD",
                     native_ceiling_hourly=Decimal("12.100000"))
    usd_team = _spec(pricing_model="spot", ceiling_hourly=Decimal("12.1"))
    bids = [aws.cloud.launch_args(spec, "us-east-1")["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"]
            for spec in (cny_team, usd_team)]
    assert bids == ["12.1", "12.1"]
