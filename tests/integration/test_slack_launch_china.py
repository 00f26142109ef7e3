"""`/gpu launch … provider=tencent` (or `provider=aliyun`) as a team that opted in meets it: the real Slack server
process (its policy file allows the cloud; `GPU_ASSIST_TENCENT_ENDPOINT` / `GPU_ASSIST_ALIYUN_ENDPOINT` point the
official SDK at the local fake of CVM API 2017-03-12 in `cvm_fake.py`, or of ECS API 2014-05-26 in `ecs_fake.py`),
signed requests in, the card and answers read from the mock Web API."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

import pytest

import cvm_fake
import ecs_fake
from slack_client import action_body, command_body, settle, signed_post, start_slack_server
from support import offer, running

APPROVERS = [f"U-APPROVER{n}" for n in range(1, 6)]


@dataclass(frozen=True)
class Cloud:
    """One cloud's story: its fake, keys, catalog row, words and what its fake shows."""

    name: str
    sdk: str
    fake: Callable[[], Any]
    keys: dict[str, str]
    endpoint_variable: str
    row: dict[str, str]
    words: str
    zone: str
    card: str
    ended: Callable[[dict], bool]


TENCENT = Cloud(
    "tencent", "tencentcloud.cvm.v20170312", cvm_fake.FakeCvm,
    {"TENCENTCLOUD_SECRET_ID": cvm_fake.SECRET_ID, "TENCENTCLOUD_SECRET_KEY": cvm_fake.SECRET_KEY},
    "GPU_ASSIST_TENCENT_ENDPOINT",
    offer(provider="tencent", region="ap-guangzhou", instance_type="GN10Xp.20XLARGE320", gpu="V100-32GB",
          gpu_count="8", gpu_memory_gib="32", vcpus="80", currency="CNY", on_demand_hourly="95.84",
          billing_granularity_s="3600", source="tencent-api", as_of="2026-12-01"),
    "launch 8xV100-32GB 72h provider=tencent region=ap-guangzhou", "ap-guangzhou-3",
    "Cloud: Tencent Cloud, account acme · price tencent-api of 2026-12-01",
    lambda instance: instance["InstanceState"] == "SHUTDOWN")
ALIYUN = Cloud(
    "aliyun", "alibabacloud_ecs20140526", ecs_fake.FakeEcs,
    {"ALIBABA_CLOUD_ACCESS_KEY_ID": ecs_fake.ACCESS_KEY_ID,
     "ALIBABA_CLOUD_ACCESS_KEY_SECRET": ecs_fake.ACCESS_KEY_SECRET},
    "GPU_ASSIST_ALIYUN_ENDPOINT",
    offer(provider="aliyun", region="cn-hangzhou", instance_type="ecs.gn6v-c8g1.16xlarge", gpu="V100", gpu_count="8",
          gpu_memory_gib="16", vcpus="64", currency="CNY", on_demand_hourly="210.44", billing_granularity_s="3600",
          source="aliyun-api", as_of="2026-12-01"),
    "launch 8xV100 72h provider=aliyun region=cn-hangzhou", "cn-hangzhou-h",
    "Cloud: Alibaba Cloud, account acme · price aliyun-api of 2026-12-01",
    lambda instance: instance["Status"] == "Deleted")


def _policy(cloud: str) -> str:
    # The server reads the wall clock (moved by `--moved-clock` too): the row's price may be stale by then, and the
    # policy lets it launch so the story is the same at any date (refusals of stale prices: test_launch_tencent.py).
    return (f'[policy]\nallowed_providers = ["aws", "{cloud}"]\nallow_stale_prices = true\n'
            f'[policy.clouds.{cloud}]\naccount = "acme"\nimage_id = "img-gpuassist"\n')


@pytest.fixture(params=[TENCENT, ALIYUN], ids=lambda cloud: cloud.name)
def china_slack(request, moto_server, mock_slack, make_catalog, tmp_path):
    cloud: Cloud = request.param
    pytest.importorskip(cloud.sdk)
    catalog_dir = make_catalog(cloud.row, load=False)
    (tmp_path / "policy.toml").write_text(_policy(cloud.name), encoding="utf-8")
    with running(cloud.fake()) as fake:
        env = {"GPU_ASSIST_CONFIG": str(tmp_path / "policy.toml"), "GPU_ASSIST_CATALOG_DIR": str(catalog_dir),
               "GPU_ASSIST_APPROVERS": ",".join(APPROVERS), **cloud.keys,
               cloud.endpoint_variable: f"http://{fake.endpoint}"}
        state = tmp_path / "state"
        state.mkdir()
        process, info = start_slack_server(moto_server, mock_slack, state, extra_env=env)
        mock_slack.clear()
        try:
            yield cloud, info, fake
        finally:
            process.terminate()
            process.wait(timeout=10)


def _card(post) -> tuple[str, str]:
    """(the card's first section's text, the request id its Approve button carries)."""
    blocks = post["params"]["blocks"]
    actions = next(b for b in blocks if b["type"] == "actions")
    return blocks[0]["text"]["text"], actions["elements"][0]["value"]


def _click_approve_at_once(slack, mock_slack, request_id: str) -> None:
    gate = threading.Barrier(len(APPROVERS))

    def click(user: str) -> None:
        gate.wait()
        signed_post(slack["url"], action_body("approve_request", request_id, user=user,
                                              response_url=mock_slack.response_url()))

    threads = [threading.Thread(target=click, args=(user,)) for user in APPROVERS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)


def test_a_launch_card_approved_by_five_at_once_starts_one_instance_and_stop_ends_it(china_slack, mock_slack):
    cloud, slack, fake = china_slack
    signed_post(slack["url"], command_body(cloud.words, user="U-CAROL", response_url=mock_slack.response_url()))
    text, request_id = _card(mock_slack.wait_for("chat.postMessage")[0])
    assert f"`{cloud.row['instance_type']}`" in text and "Dry run: ok" in text and cloud.card in text
    assert fake.live() == []

    _click_approve_at_once(slack, mock_slack, request_id)
    refusals = mock_slack.wait_for("chat.postEphemeral", 4)
    assert all("already" in r["params"]["text"] for r in refusals)
    assert "Running:" in mock_slack.wait_for("chat.update", 2)[-1]["params"]["text"]
    settle(slack["url"], mock_slack)
    (instance,) = fake.live()
    (run,) = fake.runs()
    assert run["ClientToken"] == f"{request_id}@{cloud.zone}"

    mock_slack.clear()
    signed_post(slack["url"], command_body(f"stop {instance['InstanceId']}", user="U-CAROL",
                                           response_url=mock_slack.response_url()))
    text, stop_id = _card(mock_slack.wait_for("chat.postMessage")[0])
    assert f"*Stop request {stop_id}*" in text and instance["InstanceId"] in text
    signed_post(slack["url"], action_body("approve_request", stop_id, user=APPROVERS[0],
                                          response_url=mock_slack.response_url()))
    assert "Stopped:" in mock_slack.wait_for("chat.update", 2)[-1]["params"]["text"]
    assert cloud.ended(instance) and fake.live() == []  # the default stop action terminates (releases)
    seen = slack["log"].read_text() + repr([c["params"] for c in mock_slack.calls("chat.postMessage")])
    assert not [secret for secret in cloud.keys.values() if secret in seen]  # no key in the log or the messages
