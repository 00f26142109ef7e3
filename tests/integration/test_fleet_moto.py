"""Idle detection through the real code path: boto3 → moto server over HTTP → CloudWatch metrics we put."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from support import NOON as NOW

from gpu_assist.cli import main
from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.fleet import MEMORY_USED, NAMESPACE, REQUEST_TAG, UTILIZATION, fleet_usage
from gpu_assist.errors import ProvisionError

IMAGE = "ami-12c6146b"  # one of moto's built-in AMIs


def _launch(ec2, instance_type: str, request_id: str | None) -> str:
    tags = [{"ResourceType": "instance", "Tags": [{"Key": REQUEST_TAG, "Value": request_id}]}] if request_id else []
    reservation = ec2.run_instances(ImageId=IMAGE, InstanceType=instance_type, MinCount=1, MaxCount=1,
                                    TagSpecifications=tags)
    return reservation["Instances"][0]["InstanceId"]


def _put_gpu_metrics(cloudwatch, instance_id: str, gpus: int, utilization: float, now: dt.datetime,
                     minutes: int = 30, memory_mib: float = 1024.0) -> None:
    data = []
    for minute in range(minutes):
        stamp = now - dt.timedelta(minutes=minute, seconds=30)
        for index in range(gpus):
            dims = [{"Name": "InstanceId", "Value": instance_id}, {"Name": "index", "Value": str(index)},
                    {"Name": "name", "Value": "NVIDIA A100-SXM4-40GB"}]
            data.append({"MetricName": UTILIZATION, "Dimensions": dims, "Timestamp": stamp, "Value": utilization,
                         "Unit": "Percent"})
            data.append({"MetricName": MEMORY_USED, "Dimensions": dims, "Timestamp": stamp, "Value": memory_mib,
                         "Unit": "Megabytes"})
    for offset in range(0, len(data), 500):
        cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=data[offset:offset + 500])


@pytest.fixture
def fleet(aws):
    ec2, cloudwatch = aws_clients.client("ec2"), aws_clients.client("cloudwatch")
    now = NOW
    busy = _launch(ec2, "p4d.24xlarge", "req-busy")
    idle = _launch(ec2, "p4d.24xlarge", "req-idle")
    silent = _launch(ec2, "p4d.24xlarge", "req-silent")
    untagged = _launch(ec2, "p4d.24xlarge", None)
    _put_gpu_metrics(cloudwatch, busy, 8, 90.0, now)
    _put_gpu_metrics(cloudwatch, idle, 8, 2.0, now)
    _put_gpu_metrics(cloudwatch, untagged, 8, 0.0, now)
    return {"ec2": ec2, "cloudwatch": cloudwatch, "now": now, "busy": busy, "idle": idle, "silent": silent,
            "untagged": untagged}


def test_only_the_idle_instance_is_reported_with_its_wasted_cost(fleet, catalog):
    report = fleet_usage(fleet["ec2"], fleet["cloudwatch"], catalog, region="us-east-1", now=fleet["now"])
    by_id = {i.instance_id: i for i in report.instances}
    assert set(by_id) == {fleet["busy"], fleet["idle"], fleet["silent"]}  # only gpu-assist's own instances
    assert [i.instance_id for i in report.idle] == [fleet["idle"]]
    idle, busy = by_id[fleet["idle"]], by_id[fleet["busy"]]
    assert idle.gpu_utilization_avg_pct == pytest.approx(2.0) and idle.gpus_reporting == 8
    assert idle.request_id == "req-idle" and idle.coverage == 1.0
    assert busy.gpu_utilization_avg_pct == pytest.approx(90.0) and not busy.idle
    offers = catalog.offers
    expected = offers[(offers.instance_type == "p4d.24xlarge") & (offers.region == "us-east-1")].on_demand_hourly.min()
    assert float(idle.hourly_cost) == pytest.approx(expected)
    assert report.wasted_per_hour == idle.hourly_cost
    silent = by_id[fleet["silent"]]
    assert not silent.idle and "install the CloudWatch agent" in silent.note


def test_named_instances_and_a_short_window(fleet, catalog):
    report = fleet_usage(fleet["ec2"], fleet["cloudwatch"], catalog, region="us-east-1", now=fleet["now"],
                         instance_ids=[fleet["untagged"]], window_s=600)
    (usage,) = report.instances
    assert usage.idle and usage.request_id is None


def test_partial_coverage_is_not_called_idle(aws, catalog):
    ec2, cloudwatch = aws_clients.client("ec2"), aws_clients.client("cloudwatch")
    now = NOW
    fresh = _launch(ec2, "p4d.24xlarge", "req-fresh")
    _put_gpu_metrics(cloudwatch, fresh, 8, 0.0, now, minutes=5)
    (usage,) = fleet_usage(ec2, cloudwatch, catalog, region="us-east-1", now=now).instances
    assert not usage.idle and "too little to call it idle" in usage.note


def test_cli_fleet_json_and_errors(fleet, capsys, monkeypatch, pinned_wall_clock):  # the CLI reads the clock
    assert main(["util", "--fleet", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [i["instance_id"] for i in report["instances"] if i["idle"]] == [fleet["idle"]]
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    assert main(["util", "--fleet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot reach AWS while reading the GPU fleet") and "Traceback" not in err


def test_aws_errors_become_provision_errors(aws, catalog):
    ec2, cloudwatch = aws_clients.client("ec2"), aws_clients.client("cloudwatch")
    with pytest.raises(ProvisionError, match="AWS said InvalidInstanceID"):
        fleet_usage(ec2, cloudwatch, catalog, region="us-east-1", now=NOW,
                    instance_ids=["i-0000000000000000f"])


def test_a_lightly_used_a100_instance_gets_mig_profiles_that_fit_and_a_cheaper_instance(aws, catalog):
    """An A100 at 8 GB and 15 % use (#37): MIG profiles from NVIDIA's MIG User Guide (Supported MIG Profiles: the
    A100-SXM4-40GB's 2g.10gb holds 10 GB and 2 of 7 compute slices, 3 to a GPU), and the cheapest 8-GPU instance in
    the region whose GPUs hold the memory and the compute, priced from the bundled catalog."""
    from gpu_assist.facts import PricingModel
    from gpu_assist.render import operations as _operations  # noqa: F401 - registers the fleet's text
    from gpu_assist.render.tables import fits
    from gpu_assist.render.text import render

    ec2, cloudwatch = aws_clients.client("ec2"), aws_clients.client("cloudwatch")
    light = _launch(ec2, "p4d.24xlarge", "req-light")
    _put_gpu_metrics(cloudwatch, light, 8, 15.0, NOW, memory_mib=8 * 1024)
    (usage,) = fleet_usage(ec2, cloudwatch, catalog, region="us-east-1", now=NOW).instances
    advice = usage.sharing
    assert advice is not None and advice.use.gpu.name == "A100" and advice.use.gpus == 8
    assert advice.mig is not None and (advice.mig.profile.name, advice.mig.copies) == ("2g.10gb", 3)
    smaller = advice.smaller
    assert smaller is not None and smaller.offer.gpu_count == 8 and smaller.offer.region == "us-east-1"
    spec = catalog.gpus.find(smaller.offer.gpu)
    assert spec.memory_gib >= 8 * 1.2 and (spec.bf16_tflops or spec.fp16_tflops) * 0.8 >= 0.15 * 312 * 1.2
    current = min(o.on_demand_hourly for o in catalog.offers_of_type("aws", "p4d.24xlarge")
                  if o.region == "us-east-1" and o.on_demand_hourly is not None)
    assert smaller.saving_per_month == (current - smaller.hourly) * 730 and smaller.saving_per_month > 0
    cheaper = [o.price(PricingModel.ON_DEMAND) for o in catalog.offers_in("aws", "us-east-1")
               if o.gpu_count == 8 and o.verified and o.instance_type == smaller.offer.instance_type]
    assert smaller.hourly == min(cheaper)
    text = render(fleet_usage(ec2, cloudwatch, catalog, region="us-east-1", now=NOW))
    line = f"{light} could share: 8×A100 at 15% use, 8.0 GiB at most: MIG 3× 2g.10gb per GPU"
    assert line in text.replace("\n", " ") and smaller.offer.instance_type in text
    assert fits(text)
