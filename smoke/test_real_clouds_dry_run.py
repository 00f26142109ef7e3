"""Real clouds on request: each native cloud's dry run against its real API, so a change in what the clouds answer
shows up before a buyer's launch does. Nothing starts: EC2's, CVM's and Alibaba ECS's `DryRun`, Huawei ECS's
`dry_run`; each answers "ok" only when the cloud says the launch would be accepted.

Outside `tests/` on purpose (the test suite reaches loopback only). Opt in, with the team's own keys:

    GPU_ASSIST_SMOKE=1 python -m pytest smoke/ -v

A cloud is skipped without its keys (the variables its SDK's chain reads) or its image setting:
- aws: AWS_ACCESS_KEY_ID (or a profile), GPU_ASSIST_AMI_ID optional; GPU_ASSIST_SMOKE_AWS_REGION (us-east-1)
- tencent: TENCENTCLOUD_SECRET_ID/KEY and GPU_ASSIST_SMOKE_TENCENT_IMAGE (a GPU image of ap-guangzhou)
- aliyun: ALIBABA_CLOUD_ACCESS_KEY_ID/SECRET, GPU_ASSIST_SMOKE_ALIYUN_IMAGE and GPU_ASSIST_SMOKE_ALIYUN_VSWITCH
- huawei: HUAWEICLOUD_SDK_AK/SK, GPU_ASSIST_SMOKE_HUAWEI_IMAGE, GPU_ASSIST_SMOKE_HUAWEI_VPC, _SUBNET
"""

from __future__ import annotations

import os

import pytest

from gpu_assist.catalog.providers import NATIVE_PROVIDERS
from gpu_assist.commands.lifecycle import PROVISIONERS
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.lifecycle.specs import spec_from_json

# cloud → (keys its SDK reads, region, instance type, [policy.clouds.<cloud>] from the environment)
CLOUDS = {
    "aws": (("AWS_ACCESS_KEY_ID",), os.environ.get("GPU_ASSIST_SMOKE_AWS_REGION", "us-east-1"), "g5.xlarge", {}),
    "tencent": (("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY"), "ap-guangzhou", "GN7.2XLARGE32",
                {"image_id": "GPU_ASSIST_SMOKE_TENCENT_IMAGE"}),
    "aliyun": (("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"), "cn-hangzhou",
               "ecs.gn6i-c4g1.xlarge", {"image_id": "GPU_ASSIST_SMOKE_ALIYUN_IMAGE",
                                        "vswitch_id": "GPU_ASSIST_SMOKE_ALIYUN_VSWITCH"}),
    "huawei": (("HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK"), "cn-north-4", "pi2.2xlarge.4",
               {"image_id": "GPU_ASSIST_SMOKE_HUAWEI_IMAGE", "vpc_id": "GPU_ASSIST_SMOKE_HUAWEI_VPC",
                "subnet_id": "GPU_ASSIST_SMOKE_HUAWEI_SUBNET"}),
}


def test_every_native_cloud_has_a_smoke_check():
    assert set(CLOUDS) == set(NATIVE_PROVIDERS)  # the engine's clouds: test_real_skypilot_api_server.py


@pytest.mark.parametrize("provider", NATIVE_PROVIDERS)
def test_the_real_cloud_accepts_a_dry_run(provider):
    if os.environ.get("GPU_ASSIST_SMOKE") != "1":
        pytest.skip("opt in with GPU_ASSIST_SMOKE=1 (dry runs against the real clouds)")
    keys, region, instance_type, settings = CLOUDS[provider]
    missing = [name for name in (*keys, *settings.values()) if not os.environ.get(name)]
    if missing:
        pytest.skip(f"no {', '.join(missing)}")
    policy = Policy(allowed_providers=("aws", provider), ami_id=os.environ.get("GPU_ASSIST_AMI_ID"),
                    clouds={provider: {k: os.environ[v] for k, v in settings.items()}} if settings else {})
    spec = spec_from_json("launch", {
        "request_id": "r-000000000000", "requester": "smoke", "text": "smoke", "gpu": "any", "gpus": 1,
        "instance_type": instance_type, "instances": 1, "vcpus": 4, "region": region, "zone": "",
        "pricing_model": "on-demand", "duration_s": 3600, "hourly": "1", "ceiling_hourly": "1",
        "estimated_total": "1", "currency": "USD", "candidates": [{"region": region, "zone": None, "hourly": "1"}],
        "price_source": "smoke", "provider": provider})
    answer = PROVISIONERS[provider](policy).dry_run(spec)
    print(f"{provider} {region} {instance_type}: {answer}")
    assert answer == "ok"
