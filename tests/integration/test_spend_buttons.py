"""The idle alert's Stop and Keep 4 h buttons clicked as Slack sends them: signed interactive requests into the
running `gpu-assist slack serve`, instances on the moto server, the alert posted by the jobs leader's round
(`watch_round`, run here against the server's own database) to tests/mock_slack.py."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from slack_client import action_body, command_body, signed_post
from slack_sdk import WebClient

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.fleet import MEMORY_USED, NAMESPACE, UTILIZATION
from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.commands import Context
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import load_policy
from gpu_assist.store import Store
from gpu_assist.team.watch import idle_key
from slackbot.blocks import IDLE_EXTEND, IDLE_KEEP, IDLE_STOP
from slackbot.spend_watch import watch_round


@pytest.fixture
def slack(slack_server, mock_slack, aws):
    mock_slack.clear()
    return slack_server


def _until(check, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout:.0f} s: {what}")


def _click(slack, mock, action_id: str, value: str, user: str) -> str:
    response_url = mock.response_url()
    status, _ = signed_post(slack["url"], action_body(action_id, value, user=user, response_url=response_url))
    assert status == 200
    path = response_url.split(mock.url + "/", 1)[1]
    return mock.wait_for(path)[0]["params"]["text"]


def _state(instance_id: str) -> str:
    (described,) = [i for r in aws_clients.client("ec2").describe_instances(InstanceIds=[instance_id])[
        "Reservations"] for i in r["Instances"]]
    return described["State"]["Name"]


def _idle_alert(slack, mock, catalog):
    """Launch as U-CAROL, approved by U-BOB, an hour of idle GPU samples, one watch round: the alert's post."""
    signed_post(slack["url"], command_body("launch 8xA100 4h region=us-east-1", user="U-CAROL",
                                           response_url=mock.response_url()))
    card = mock.wait_for("chat.postMessage")[0]["params"]
    launch_id = next(b for b in card["blocks"] if b["type"] == "actions")["elements"][0]["value"]
    signed_post(slack["url"], action_body("approve_request", launch_id, user="U-BOB",
                                          response_url=mock.response_url()))
    mock.wait_for("chat.update", 2)
    policy = load_policy(slack["env"])
    store = Store(slack["env"]["GPU_ASSIST_DB_URL"])
    approvals = Approvals(store, policy, AwsProvisioner(policy), catalog)
    (instance,) = store.get(launch_id).instance_ids
    now = dt.datetime.now(dt.timezone.utc)
    dims = [{"Name": "InstanceId", "Value": instance}, {"Name": "index", "Value": "0"},
            {"Name": "name", "Value": "NVIDIA A100-SXM4-40GB"}]
    data = [{"MetricName": name, "Dimensions": dims, "Timestamp": now - dt.timedelta(minutes=m, seconds=30),
             "Value": value} for m in range(61) for name, value in ((UTILIZATION, 1.0), (MEMORY_USED, 1024.0))]
    for offset in range(0, len(data), 500):
        aws_clients.client("cloudwatch").put_metric_data(Namespace=NAMESPACE, MetricData=data[offset:offset + 500])
    context = Context(catalog_loader=lambda: catalog, approvals_factory=lambda _c: approvals)
    posted = watch_round(context, WebClient(token="xoxb-test", base_url=mock.api_url), "C-APPROVALS")
    assert instance in posted["idle"]
    alert = next(p["params"] for p in mock.calls("chat.postMessage")
                 if instance in p["params"]["text"] and "blocks" in p["params"])
    card = store.get(launch_id)  # the server stored where it posted the launch's card: the alert replies there
    assert card.card_channel == "C-APPROVALS" and alert["channel"] == "C-APPROVALS"
    assert card.card_ts and alert["thread_ts"] == card.card_ts
    return launch_id, instance, store, {e["action_id"]: e["value"] for e in alert["blocks"][1]["elements"]}


def test_keep_snoozes_the_alert_and_stop_by_the_requester_goes_through_an_approver(slack, mock_slack, catalog):
    launch_id, instance, store, buttons = _idle_alert(slack, mock_slack, catalog)
    assert buttons == {IDLE_STOP: instance, IDLE_KEEP: instance, IDLE_EXTEND: launch_id}

    assert _click(slack, mock_slack, IDLE_KEEP, instance, "U-CAROL") == "Kept: no idle alert for 4 h."
    snoozed = _until(lambda: (store.notice(idle_key(instance)) or {}).get("until"), "the alert's snooze")
    assert snoozed.replace(tzinfo=dt.timezone.utc) > dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=3)
    assert "keep idle 4h" in [e.action for e in store.audit_trail(launch_id)]

    cards_before = len(mock_slack.calls("chat.postMessage"))
    answer = _click(slack, mock_slack, IDLE_STOP, instance, "U-CAROL")
    assert answer.startswith("Stop request `") and answer.endswith(": pending")  # no auto-approval in this policy
    stop_id = answer.split("`")[1]
    stop_card = mock_slack.wait_for("chat.postMessage", cards_before + 1)[-1]["params"]
    assert stop_card["channel"] == "C-APPROVALS" and stop_id in str(stop_card["blocks"])
    assert _state(instance) == "running"
    signed_post(slack["url"], action_body("approve_request", stop_id, user="U-BOB",
                                          response_url=mock_slack.response_url()))
    _until(lambda: _state(instance) in ("stopping", "stopped", "shutting-down", "terminated"), "the stop")
    assert _until(lambda: store.get(stop_id).state == "stopped", "the stop request's state")
    assert _until(lambda: store.get(launch_id).state == "stopped", "the launch request's state")
    assert ("slack:U-BOB", "approve") in [(e.actor, e.action) for e in store.audit_trail(stop_id)]


def test_a_stop_click_by_someone_else_is_refused_and_changes_nothing(slack, mock_slack, catalog):
    launch_id, instance, store, _buttons = _idle_alert(slack, mock_slack, catalog)
    pending_before = len(store.list(states=("pending",), limit=1000))
    answer = _click(slack, mock_slack, IDLE_STOP, instance, "U-MALLORY")
    assert answer == (f"Not done: slack:U-MALLORY neither launched {instance} nor is an approver: "
                      "ask the requester or an approver")
    assert len(store.list(states=("pending",), limit=1000)) == pending_before
    assert ("slack:U-MALLORY", "submit stop", "refused") in [
        (e.actor, e.action, e.outcome) for e in store.audit_trail(launch_id)]
    assert _state(instance) == "running" and store.get(launch_id).state == "running"


def test_extend_ttl_goes_through_another_approver_and_its_outcome_lands_in_the_launchs_thread(slack, mock_slack,
                                                                                               catalog):
    launch_id, instance, store, buttons = _idle_alert(slack, mock_slack, catalog)
    ends_at = store.get(launch_id).ends_at
    cards_before = len(mock_slack.calls("chat.postMessage"))
    answer = _click(slack, mock_slack, IDLE_EXTEND, buttons[IDLE_EXTEND], "U-CAROL")
    assert answer.startswith("Extension request `") and answer.endswith("`: pending")
    extension_id = answer.split("`")[1]
    card = mock_slack.wait_for("chat.postMessage", cards_before + 1)[-1]["params"]
    assert card["channel"] == "C-APPROVALS" and card["text"].startswith(f"extend request {extension_id}")
    assert f"Time to live of {launch_id}" in card["blocks"][0]["text"]["text"]

    ephemerals = len(mock_slack.calls("chat.postEphemeral"))
    signed_post(slack["url"], action_body("approve_request", extension_id, user="U-CAROL",
                                          response_url=mock_slack.response_url()))
    refusal = mock_slack.wait_for("chat.postEphemeral", ephemerals + 1)[-1]["params"]
    assert refusal["text"] == "Not done: requesters cannot approve or reject their own request"
    assert store.get(launch_id).ends_at == ends_at

    signed_post(slack["url"], action_body("approve_request", extension_id, user="U-BOB",
                                          response_url=mock_slack.response_url()))
    assert _until(lambda: store.get(extension_id).state == "extended", "the extension")
    assert store.get(launch_id).ends_at == ends_at + dt.timedelta(hours=24)
    (described,) = [i for r in aws_clients.client("ec2").describe_instances(InstanceIds=[instance])[
        "Reservations"] for i in r["Instances"]]
    expiry = {t["Key"]: t["Value"] for t in described["Tags"]}["gpu-assist:expires-at"]
    assert expiry == f"{ends_at + dt.timedelta(hours=24):%Y-%m-%dT%H:%M:%SZ}"
    outcome = _until(lambda: [p["params"] for p in mock_slack.calls("chat.postMessage")
                              if p["params"]["text"].startswith(f"<@U-CAROL> {extension_id}: Approved")], "outcome")
    assert outcome[0]["thread_ts"] == store.get(launch_id).card_ts and "Extended:" in outcome[0]["text"]
