"""The engine against a real SkyPilot API server and a real cloud, on request: the dry run (SkyPilot's client
checks the task against its catalog, the server validates it, its admin policy too), and, only when asked for
with its own switch, one real launch of the smallest GPU machine the team names, found again by its name, then
brought down. A change in what SkyPilot's server answers shows up here before a buyer's launch does.

Outside `tests/` on purpose (the test suite reaches loopback only). Opt in:

    GPU_ASSIST_SMOKE=1 SKYPILOT_API_SERVER_ENDPOINT=https://skypilot.example.com \\
    SKYPILOT_SERVICE_ACCOUNT_TOKEN=sky_… GPU_ASSIST_SMOKE_SKYPILOT=gcp/us-central1/g2-standard-4 \\
    python -m pytest smoke/test_real_skypilot_api_server.py -v -rs

Skipped without SKYPILOT_API_SERVER_ENDPOINT, or without GPU_ASSIST_SMOKE_SKYPILOT (cloud/region/instance type:
one the API server's cloud credentials may launch); the token is what the server asks for (none on a server
without auth). GPU_ASSIST_SMOKE_SKYPILOT_LAUNCH=1 also launches it for real (billed for a few minutes; its
autodown is 10 minutes, and the test downs it at the end).
"""

from __future__ import annotations

import os
import uuid

import pytest

from gpu_assist.clouds.launch.skypilot import SkyPilotProvisioner
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.lifecycle.ports import Launched
from gpu_assist.lifecycle.specs import LaunchSpec, spec_from_json


@pytest.fixture
def spec() -> LaunchSpec:
    if os.environ.get("GPU_ASSIST_SMOKE") != "1":
        pytest.skip("opt in with GPU_ASSIST_SMOKE=1 (calls a real SkyPilot API server)")
    if not os.environ.get("SKYPILOT_API_SERVER_ENDPOINT"):
        pytest.skip("no SKYPILOT_API_SERVER_ENDPOINT")
    target = os.environ.get("GPU_ASSIST_SMOKE_SKYPILOT", "")
    if target.count("/") != 2:
        pytest.skip("no GPU_ASSIST_SMOKE_SKYPILOT (cloud/region/instance type, e.g. gcp/us-central1/g2-standard-4)")
    provider, region, instance_type = target.split("/")
    request_id = "r-" + uuid.uuid4().hex[:12]
    made = spec_from_json("launch", {
        "request_id": request_id, "requester": "smoke", "text": "smoke", "gpu": "any", "gpus": 1,
        "instance_type": instance_type, "instances": 1, "vcpus": None, "region": region, "zone": "",
        "pricing_model": "on-demand", "duration_s": 600, "hourly": "1", "ceiling_hourly": "1",
        "estimated_total": "1", "currency": "USD", "candidates": [{"region": region, "zone": None, "hourly": "1"}],
        "price_source": "smoke", "provider": provider, "project": "smoke"})
    assert isinstance(made, LaunchSpec)
    return made


def test_the_real_api_server_validates_the_engines_task(spec: LaunchSpec) -> None:
    assert SkyPilotProvisioner(spec.provider, Policy()).dry_run(spec) == "ok"


def test_a_real_launch_is_found_by_its_name_and_brought_down(spec: LaunchSpec) -> None:
    if os.environ.get("GPU_ASSIST_SMOKE_SKYPILOT_LAUNCH") != "1":
        pytest.skip("a real launch is billed: opt in with GPU_ASSIST_SMOKE_SKYPILOT_LAUNCH=1")
    engine = SkyPilotProvisioner(spec.provider, Policy())
    launched = engine.launch(spec, ends_at="", still_ours=lambda: True)
    try:
        again = engine.launch(spec, ends_at="", still_ours=lambda: True)
        assert again.reused and again.instance_ids == launched.instance_ids
        assert engine.require_managed(Launched(spec.provider, spec.region, tuple(launched.instance_ids)))
    finally:
        engine.stop(Launched(spec.provider, spec.region, tuple(launched.instance_ids)))
    assert engine.cloud.find_tagged(spec.region, spec.request_id) == []
