"""`/gpu launch … provider=tencent` as a team that opted in meets it: the real Slack server process (its policy file
allows Tencent Cloud, `GPU_ASSIST_TENCENT_ENDPOINT` points the CVM SDK at the local fake of CVM API 2017-03-12 in
`cvm_fake.py`), signed requests in, the card and answers read from the mock Web API."""

from __future__ import annotations

import threading

import pytest

from cvm_fake import SECRET_ID, SECRET_KEY, FakeCvm
from slack_client import action_body, command_body, settle, signed_post, start_slack_server
from support import offer, running

pytest.importorskip("tencentcloud.cvm.v20170312")

APPROVERS = [f"U-APPROVER{n}" for n in range(1, 6)]
# The server reads the wall clock (moved by `--moved-clock` too): the row's price may be stale by then, and the
# policy lets it launch so the story is the same at any date (refusals of stale prices: test_launch_tencent.py).
POLICY = """[policy]
allowed_providers = ["aws", "tencent"]
allow_stale_prices = true
[policy.clouds.tencent]
account = "acme-gz"
image_id = "img-gpuassist"
"""


@pytest.fixture
def tencent_slack(moto_server, mock_slack, make_catalog, tmp_path):
    catalog_dir = make_catalog(
        offer(provider="tencent", region="ap-guangzhou", instance_type="GN10Xp.20XLARGE320", gpu="V100-32GB",
              gpu_count="8", gpu_memory_gib="32", vcpus="80", currency="CNY", on_demand_hourly="95.84",
              billing_granularity_s="3600", source="tencent-api", as_of="2026-12-01"), load=False)
    (tmp_path / "policy.toml").write_text(POLICY, encoding="utf-8")
    with running(FakeCvm()) as cvm:
        env = {"GPU_ASSIST_CONFIG": str(tmp_path / "policy.toml"), "GPU_ASSIST_CATALOG_DIR": str(catalog_dir),
               "GPU_ASSIST_APPROVERS": ",".join(APPROVERS), "TENCENTCLOUD_SECRET_ID": SECRET_ID,
               "TENCENTCLOUD_SECRET_KEY": SECRET_KEY, "GPU_ASSIST_TENCENT_ENDPOINT": f"http://{cvm.endpoint}"}
        state = tmp_path / "state"
        state.mkdir()
        process, info = start_slack_server(moto_server, mock_slack, state, extra_env=env)
        mock_slack.clear()
        try:
            yield info, cvm
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


def test_a_tencent_launch_card_approved_by_five_at_once_starts_one_cvm_instance_and_stop_ends_it(tencent_slack,
                                                                                              mock_slack):
    slack, cvm = tencent_slack
    signed_post(slack["url"], command_body("launch 8xV100-32GB 72h provider=tencent region=ap-guangzhou",
                                           user="U-CAROL", response_url=mock_slack.response_url()))
    text, request_id = _card(mock_slack.wait_for("chat.postMessage")[0])
    assert "`GN10Xp.20XLARGE320` (8×V100-32GB) *on-demand* in ap-guangzhou" in text
    assert "Dry run: ok" in text and "Cloud: Tencent Cloud, account acme-gz · price tencent-api of 2026-12-01" in text
    assert cvm.live() == []

    _click_approve_at_once(slack, mock_slack, request_id)
    refusals = mock_slack.wait_for("chat.postEphemeral", 4)
    assert all("already" in r["params"]["text"] for r in refusals)
    assert "Running:" in mock_slack.wait_for("chat.update", 2)[-1]["params"]["text"]
    settle(slack["url"], mock_slack)
    (instance,) = cvm.live()
    (run,) = cvm.runs()
    assert run["ClientToken"] == f"{request_id}@ap-guangzhou-3"
    assert {t["Key"]: t["Value"] for t in instance["Tags"]}["gpu-assist:request-id"] == request_id

    mock_slack.clear()
    signed_post(slack["url"], command_body(f"stop {instance['InstanceId']}", user="U-CAROL",
                                           response_url=mock_slack.response_url()))
    text, stop_id = _card(mock_slack.wait_for("chat.postMessage")[0])
    assert f"*Stop request {stop_id}*" in text and instance["InstanceId"] in text
    signed_post(slack["url"], action_body("approve_request", stop_id, user=APPROVERS[0],
                                          response_url=mock_slack.response_url()))
    assert "Stopped:" in mock_slack.wait_for("chat.update", 2)[-1]["params"]["text"]
    assert instance["InstanceState"] == "SHUTDOWN" and cvm.live() == []  # the default stop action terminates
    seen = slack["log"].read_text() + repr([c["params"] for c in mock_slack.calls("chat.postMessage")])
    assert SECRET_KEY not in seen and SECRET_ID not in seen  # nothing of the keys in the log or the messages
