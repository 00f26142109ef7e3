"""Each native cloud's fake, and the engine's, behind one face for the conformance suite
(`test_launch_conformance.py`): moto for EC2 (it keeps ClientTokens but does not deduplicate by them), `cvm_fake`
for CVM, `ecs_fake` for Alibaba's ECS, `huawei_ecs_fake` for Huawei's, and `skypilot_api_fake` (SkyPilot's API
server, for Google Cloud through the engine: every engine cloud runs the same code). A harness says what the cloud
holds (`live`), and makes what the scenarios need: a sold-out zone, throttling, a foreign instance, a duplicate
tagged with a request. Not a test module."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable

from support import offer, running

from gpu_assist.clouds.tags import REQUEST_TAG
from gpu_assist.lifecycle.policy import Policy

APPROVERS = [f"slack:U-APPROVER{n}" for n in range(1, 6)]


@dataclass
class Harness:
    provider: str
    region: str
    words: str                           # what the buyer asks for: `launch <words>`
    row: dict[str, str]                  # the catalog's offer it launches
    settings: dict[str, str]             # [policy.clouds.<provider>]
    zones: list[str]                     # the region's zones, in the order the cloud lists them
    provisioner: Callable[[Policy, Callable[[float], None]], Any]
    live: Callable[[], dict[str, str]]   # instance id → request tag (None: foreign), of what runs or is stopped
    stopped: Callable[[str], bool]
    sell_out: Callable[[str], None]
    throttle: Callable[[int], None]
    add_foreign: Callable[[], str]
    add_tagged: Callable[[str], str]     # a duplicate carrying a request's tag, as a lost first answer leaves
    runs: Callable[[], int]
    tokens: bool = True                  # the fake returns the same instances for a token it has seen
    pauses: list[float] = field(default_factory=list)
    not_applicable: dict[str, str] = field(default_factory=dict)  # scenario → why it does not apply to this cloud

    def policy(self, **rules: Any) -> Policy:
        return Policy(**{"approvers": frozenset(APPROVERS), "allowed_providers": ("aws", self.provider),
                         "clouds": {self.provider: dict(self.settings)}, "ami_id": "ami-12c6146b", **rules})


@contextlib.contextmanager
def aws_harness(request: Any) -> Any:
    from botocore.awsrequest import AWSResponse

    from gpu_assist.clouds.sdk import aws as aws_clients
    from gpu_assist.clouds.launch.aws import AwsProvisioner

    request.getfixturevalue("aws")
    ec2 = aws_clients.client("ec2", "us-east-1")
    sold_out: set[str] = set()
    throttled = [0]

    class _Raw:
        def __init__(self, body: bytes):
            self.body = body

        def stream(self, **_: Any) -> Any:
            yield self.body

    def refuse(request: Any, **_: Any) -> Any:
        body = request.body.decode() if isinstance(request.body, bytes) else str(request.body or "")
        if throttled[0]:
            throttled[0] -= 1
            code = "RequestLimitExceeded"
        elif any(f"Placement.AvailabilityZone={zone}" in body for zone in sold_out):
            code = "InsufficientInstanceCapacity"
        else:
            return None
        xml = f"<Response><Errors><Error><Code>{code}</Code><Message>{code}</Message></Error></Errors></Response>"
        return AWSResponse(request.url, 503 if code == "RequestLimitExceeded" else 500, {}, _Raw(xml.encode()))

    ec2.meta.events.register("before-send.ec2.RunInstances", refuse)

    def client(service: str, region: str | None = None) -> Any:
        return ec2 if service == "ec2" else aws_clients.client(service, region)

    def instances(**params: Any) -> list[dict[str, Any]]:
        return [i for r in aws_clients.client("ec2").describe_instances(**params)["Reservations"]
                for i in r["Instances"]]

    def live() -> dict[str, str]:
        return {i["InstanceId"]: {t["Key"]: t["Value"] for t in i.get("Tags", [])}.get(REQUEST_TAG)
                for i in instances(Filters=[{"Name": "instance-state-name",
                                             "Values": ["pending", "running", "stopping", "stopped"]}])}

    def make(tags: list[dict[str, str]]) -> str:
        made = aws_clients.client("ec2").run_instances(
            ImageId="ami-12c6146b", InstanceType="p4d.24xlarge", MinCount=1, MaxCount=1,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}] if tags else [])
        return str(made["Instances"][0]["InstanceId"])

    zones = [z["ZoneName"] for z in ec2.describe_availability_zones()["AvailabilityZones"]]
    yield Harness(
        "aws", "us-east-1", "8xA100 4h region=us-east-1", offer(), {"account": "acme-aws"}, zones,
        lambda policy, sleep: AwsProvisioner(policy, client=client), live,
        lambda i: instances(InstanceIds=[i])[0]["State"]["Name"] in ("stopping", "stopped"),
        sold_out.add, lambda n: throttled.__setitem__(0, n), lambda: make([{"Key": "team", "Value": "x"}]),
        lambda request_id: make([{"Key": REQUEST_TAG, "Value": request_id}]),
        lambda: sum(1 for i in live()), tokens=False)


@contextlib.contextmanager
def tencent_harness(request: Any) -> Any:
    from cvm_fake import SECRET_ID, SECRET_KEY, ZONES, FakeCvm

    from gpu_assist.clouds.launch.tencent import TencentProvisioner
    from gpu_assist.clouds.sdk.tencent import cvm_client

    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", SECRET_ID)
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", SECRET_KEY)
    with running(FakeCvm()) as cvm:
        def tag(instance: dict[str, Any]) -> str | None:
            return {t["Key"]: t["Value"] for t in instance["Tags"]}.get(REQUEST_TAG)

        def make(tags: list[dict[str, str]]) -> str:
            with cvm.lock:
                return cvm._make("ap-guangzhou", "ap-guangzhou-3", "GN10Xp.20XLARGE320", tags)[0]

        yield Harness(
            "tencent", "ap-guangzhou", "8xV100-32GB 72h provider=tencent region=ap-guangzhou",
            offer(provider="tencent", region="ap-guangzhou", instance_type="GN10Xp.20XLARGE320", gpu="V100-32GB",
                  gpu_count="8", gpu_memory_gib="32", vcpus="80", currency="CNY", on_demand_hourly="95.84",
                  billing_granularity_s="3600", source="tencent-api", as_of="2026-12-01"),
            {"account": "acme-gz", "image_id": "img-gpuassist", "region": "ap-guangzhou"},
            [f"ap-guangzhou{z}" for z in ZONES],
            lambda policy, sleep: TencentProvisioner(policy, client=lambda region: cvm_client(region, cvm.endpoint),
                                                     sleep=sleep),
            lambda: {i["InstanceId"]: tag(i) for i in cvm.live()},
            lambda i: cvm.instances[i]["InstanceState"] == "STOPPED", cvm.sold_out.add,
            lambda n: setattr(cvm, "throttle", n), cvm.add_foreign,
            lambda request_id: make([{"Key": REQUEST_TAG, "Value": request_id}]), lambda: len(cvm.runs()))


@contextlib.contextmanager
def aliyun_harness(request: Any) -> Any:
    from alibabacloud_credentials.utils import auth_util
    from ecs_fake import ACCESS_KEY_ID, ACCESS_KEY_SECRET, ZONES, FakeEcs

    from gpu_assist.clouds.launch.aliyun import AlibabaProvisioner
    from gpu_assist.clouds.sdk.aliyun import ecs_client

    monkeypatch = request.getfixturevalue("monkeypatch")
    for name, value in (("access_key_id", ACCESS_KEY_ID), ("access_key_secret", ACCESS_KEY_SECRET)):
        monkeypatch.setattr(auth_util, f"environment_{name}", value)
        monkeypatch.setenv(f"ALIBABA_CLOUD_{name.upper()}", value)
    with running(FakeEcs()) as ecs:
        def tag(instance: dict[str, Any]) -> str | None:
            return {t["TagKey"]: t["TagValue"] for t in instance["Tags"]["Tag"]}.get(REQUEST_TAG)

        def make(tags: list[dict[str, str]]) -> str:
            with ecs.lock:
                return ecs._make("cn-hangzhou", "cn-hangzhou-h", "ecs.gn6v-c8g1.16xlarge", tags)[0]

        yield Harness(
            "aliyun", "cn-hangzhou", "8xV100 72h provider=aliyun region=cn-hangzhou",
            offer(provider="aliyun", region="cn-hangzhou", instance_type="ecs.gn6v-c8g1.16xlarge", gpu="V100",
                  gpu_count="8", gpu_memory_gib="16", vcpus="64", memory_gib="256", currency="CNY",
                  on_demand_hourly="210.44", billing_granularity_s="3600", source="aliyun-api", as_of="2026-12-01"),
            {"account": "acme-hz", "image_id": "ubuntu_22_04_x64_20G_alibase_gpu", "vswitch_id": "vsw-bp1test"},
            [f"cn-hangzhou{z}" for z in ZONES],
            lambda policy, sleep: AlibabaProvisioner(policy, client=lambda region: ecs_client(region, ecs.endpoint),
                                                     sleep=sleep),
            lambda: {i["InstanceId"]: tag(i) for i in ecs.live()},
            lambda i: ecs.instances[i]["Status"] == "Stopped", ecs.sold_out.add,
            lambda n: setattr(ecs, "throttle", n), ecs.add_foreign,
            lambda request_id: make([{"TagKey": REQUEST_TAG, "TagValue": request_id}]), lambda: len(ecs.runs()))


@contextlib.contextmanager
def huawei_harness(request: Any) -> Any:
    from huawei_ecs_fake import ACCESS_KEY, PROJECT, SECRET_KEY, ZONES, FakeHuaweiEcs

    from gpu_assist.clouds.launch.huawei import HuaweiProvisioner
    from gpu_assist.clouds.sdk.huawei import ecs_client

    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("HUAWEICLOUD_SDK_AK", ACCESS_KEY)
    monkeypatch.setenv("HUAWEICLOUD_SDK_SK", SECRET_KEY)
    monkeypatch.setenv("HUAWEICLOUD_SDK_PROJECT_ID", PROJECT)
    with running(FakeHuaweiEcs()) as ecs:
        def tag(server: dict[str, Any]) -> str | None:
            return dict(t.split("=", 1) for t in server["tags"]).get(REQUEST_TAG)

        def make(tags: list[str]) -> str:
            with ecs.lock:
                return ecs._make("cn-north-4a", "p2s.16xlarge.8", tags, 1)[0]

        yield Harness(
            "huawei", "cn-north-4", "8xV100-32GB 72h provider=huawei region=cn-north-4",
            offer(provider="huawei", region="cn-north-4", instance_type="p2s.16xlarge.8", gpu="V100-32GB",
                  gpu_count="8", gpu_memory_gib="32", vcpus="64", memory_gib="512", currency="CNY",
                  on_demand_hourly="183.75", billing_granularity_s="3600", source="huawei-api", as_of="2026-12-01"),
            {"account": "acme-bj", "image_id": "img-gpu-ubuntu", "vpc_id": "vpc-1", "subnet_id": "subnet-1"},
            [f"cn-north-4{z}" for z in ZONES],
            lambda policy, sleep: HuaweiProvisioner(policy, client=lambda region: ecs_client(region, ecs.endpoint),
                                                    sleep=sleep),
            lambda: {s["id"]: tag(s) for s in ecs.live()},
            lambda i: ecs.servers[i]["status"] == "SHUTOFF", ecs.sold_out.add,
            lambda n: setattr(ecs, "throttle", n), ecs.add_foreign,
            lambda request_id: make([f"{REQUEST_TAG}={request_id}"]), lambda: len(ecs.runs()))


# The scenarios the engine cannot run, and why (the suite skips them with the reason).
ENGINE_NOT_APPLICABLE = {
    "test_a_sold_out_zone_fails_over_to_the_next_one":
        "the engine pins the region and SkyPilot fails over between its zones on the API server, out of sight; "
        "gpu-assist's own failover, across candidate regions, is test_launch_skypilot's",
    "test_surplus_instances_of_a_request_are_terminated_and_the_recorded_ones_kept":
        "a request is one cluster whose name the API server holds once: there is no duplicate of it to terminate, "
        "and another cluster carrying a copied label is not gpu-assist's launch",
    "test_throttling_is_ridden_out_and_ends_with_exactly_the_requests_instances":
        "SkyPilot's SDK rides out a busy server (503) itself, waiting 5 s and more on the wall clock, not on "
        "gpu-assist's backoff",
}


@contextlib.contextmanager
def skypilot_harness(request: Any) -> Any:
    from skypilot_api_fake import SERVICE_TOKEN, SKY_HOME, shared_server

    from gpu_assist.clouds.launch.skypilot import REQUEST_LABEL, SkyPilotProvisioner

    monkeypatch = request.getfixturevalue("monkeypatch")
    server = shared_server()
    monkeypatch.setenv("HOME", str(SKY_HOME))
    monkeypatch.setenv("SKYPILOT_API_SERVER_ENDPOINT", server.endpoint)
    monkeypatch.setenv("SKYPILOT_SERVICE_ACCOUNT_TOKEN", SERVICE_TOKEN)
    yield Harness(
        "gcp", "us-central1", "8xH100 24h provider=gcp region=us-central1",
        offer(provider="gcp", region="us-central1", instance_type="a3-highgpu-8g", gpu="H100", gpu_count="8",
              gpu_memory_gib="80", vcpus="208", memory_gib="1872", on_demand_hourly="88.25", source="skypilot-gcp",
              as_of="2026-12-02"),
        {"account": "acme-gcp"}, ["us-central1-a"],
        lambda policy, sleep: SkyPilotProvisioner("gcp", policy),
        lambda: {name: c["labels"].get(REQUEST_LABEL) for name, c in server.clusters.items()},
        lambda name: name not in server.clusters, server.sold_out.add, lambda n: setattr(server, "throttle", n),
        lambda: server.add_cluster("team-notebook", "us-central1", {"team": "vision"}),
        lambda request_id: server.add_cluster(f"copy-of-{request_id}", "us-central1", {REQUEST_LABEL: request_id}),
        lambda: len(server.launches()), not_applicable=ENGINE_NOT_APPLICABLE)


HARNESSES = {"aws": aws_harness, "tencent": tencent_harness, "aliyun": aliyun_harness, "huawei": huawei_harness,
             "skypilot": skypilot_harness}
