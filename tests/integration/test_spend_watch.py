"""Idle alerts, budget crossings and the digest the jobs leader posts: boto3 against the moto server over HTTP
(EC2 launches, CloudWatch GPU metrics we put), the Slack Web API as tests/mock_slack.py over HTTP through
slack_sdk, an injected clock. The buttons' handlers are called as the Bolt listeners call them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from slack_sdk import WebClient
from support import Clock, submit_launch

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.fleet import MEMORY_USED, NAMESPACE, UTILIZATION
from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.commands import Context
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.identity import AUTO_APPROVE
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.store import Store
from gpu_assist.team.budgets import Budgets
from slackbot.blocks import IDLE_EXTEND, IDLE_KEEP, IDLE_STOP
from slackbot.listeners.idle_alerts import on_idle_extend, on_idle_keep, on_idle_stop
from slackbot.spend_watch import watch_round

IMAGE = "ami-12c6146b"
# 09:00 UTC on an ordinary weekday, mid-month: the 7 hours the first test moves its clock stay inside one day and
# one month, so the jobs leader posts exactly the one digest (digest_hour=0) and the budget crossings of one month.
WATCH_START = dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.timezone.utc)


def _put_gpu_use(instance_id: str, utilization: float, now: dt.datetime, minutes: int = 60) -> None:
    data = []
    for minute in range(minutes):
        dims = [{"Name": "InstanceId", "Value": instance_id}, {"Name": "index", "Value": "0"},
                {"Name": "name", "Value": "NVIDIA A100-SXM4-40GB"}]
        stamp = now - dt.timedelta(minutes=minute, seconds=30)
        data += [{"MetricName": UTILIZATION, "Dimensions": dims, "Timestamp": stamp, "Value": utilization},
                 {"MetricName": MEMORY_USED, "Dimensions": dims, "Timestamp": stamp, "Value": 1024.0}]
    for offset in range(0, len(data), 500):
        aws_clients.client("cloudwatch").put_metric_data(Namespace=NAMESPACE, MetricData=data[offset:offset + 500])


@pytest.fixture
def watched(aws, tmp_path, catalog, mock_slack):
    clock = Clock(WATCH_START)
    policy = Policy(approvers=frozenset({"slack:U-BOB"}), ami_id=IMAGE, max_cost=Decimal(20_000),
                    auto_approve_own_stop=True, idle_window_s=3600, digest_hour=0,
                    budgets=Budgets({"*": Decimal(60)}, "USD", "escalate", frozenset({"slack:U-BOB"})))
    approvals = Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy, AwsProvisioner(policy), catalog,
                          clock)
    context = Context(catalog_loader=lambda: catalog, now=clock, approvals_factory=lambda _c: approvals)
    mock_slack.clear()
    return context, approvals, clock, WebClient(token="xoxb-test", base_url=mock_slack.api_url), mock_slack


def test_an_idle_instance_gets_one_alert_keep_snoozes_it_and_stop_ends_in_a_stopped_instance(watched):
    context, approvals, clock, client, slack = watched
    launch = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 24h region=us-east-1").id,
                               "slack:U-BOB")
    (instance,) = launch.instance_ids
    clock.advance(hours=2)
    _put_gpu_use(instance, 1.0, clock.now)
    first = watch_round(context, client, "C-APPROVALS")
    assert first["idle"] == [instance]
    month = f"{clock.now:%Y-%m}"
    assert first["budget"] == [f"budget:*:{month}:50"]  # 2 h of a p4d: $43.92 of $60
    assert first["digest"] == [f"digest:{clock.now:%Y-%m-%d}"]
    assert watch_round(context, client, "C-APPROVALS") == {"idle": [], "budget": [], "digest": []}  # once each
    posts = slack.calls("chat.postMessage")
    alert = next(p["params"] for p in posts if "has been idle" in p["params"]["text"])
    assert [e["action_id"] for e in alert["blocks"][1]["elements"]] == [IDLE_STOP, IDLE_KEEP, IDLE_EXTEND]
    assert alert["channel"] == "C-APPROVALS" and "thread_ts" not in alert  # no card stored: the channel itself
    digest = next(p["params"]["text"] for p in posts if p["params"]["text"].startswith("gpu-assist daily digest"))
    assert f"{launch.id} p4d.24xlarge by slack:U-CAROL" in digest and "IDLE" in digest
    assert f"idle: {launch.id}" in digest and "waiting for approval: none" in digest

    assert on_idle_keep(context, "U-CAROL", instance)
    clock.advance(hours=1)
    _put_gpu_use(instance, 1.0, clock.now)
    snoozed = watch_round(context, client, "C-APPROVALS")
    assert snoozed["idle"] == [] and snoozed["budget"] == [f"budget:*:{month}:80", f"budget:*:{month}:100"]
    clock.advance(hours=4)
    _put_gpu_use(instance, 1.0, clock.now)
    again = watch_round(context, client, "C-APPROVALS")
    assert again == {"idle": [instance], "budget": [], "digest": []}  # the snooze is over; crossings were posted

    stop = on_idle_stop(context, "U-CAROL", instance)
    assert stop.state == "stopped"  # her own idle instance: auto_approve_own_stop, still audited
    assert approvals.store.get(launch.id).state == "stopped"
    (described,) = [i for r in aws_clients.client("ec2").describe_instances(InstanceIds=[instance])["Reservations"]
                    for i in r["Instances"]]
    assert described["State"]["Name"] in ("shutting-down", "terminated", "stopping", "stopped")
    actions = [(e.actor, e.action) for e in approvals.store.audit_trail(stop.id)]
    assert (AUTO_APPROVE, "approve") in actions
    launch_trail = [e.action for e in approvals.store.audit_trail(launch.id)]
    assert launch_trail.count("idle alert") == 2 and "keep idle 4h" in launch_trail


def test_without_the_switch_a_stop_from_the_alert_waits_for_an_approver(watched):
    context, approvals, clock, client, _slack = watched
    strict = Approvals(approvals.store, Policy(**{**vars(approvals.policy), "auto_approve_own_stop": False}),
                       approvals.provisioner, approvals.catalog, clock)
    context._approvals = strict
    launch = strict.approve(submit_launch(strict, "slack:U-CAROL", "8xA100 24h region=us-east-1").id,
                            "slack:U-BOB")
    stop = on_idle_stop(context, "U-CAROL", launch.instance_ids[0])
    assert stop.state == "pending"
    assert strict.approve(stop.id, "slack:U-BOB").state == "stopped"


def test_extend_ttl_from_the_alert_in_the_requests_thread_moves_the_ttl_through_another_approver(watched):
    from gpu_assist.errors import PolicyError
    from slackbot.blocks import approval_card

    context, approvals, clock, client, slack = watched
    launch = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 24h region=us-east-1").id,
                               "slack:U-BOB")
    approvals.store.set_card(launch.id, "C-APPROVALS", "1700000000.000100")  # as the app does when it posts a card
    (instance,) = launch.instance_ids
    clock.advance(hours=2)
    _put_gpu_use(instance, 1.0, clock.now)
    assert watch_round(context, client, "C-OTHER")["idle"] == [instance]
    alert = next(p["params"] for p in slack.calls("chat.postMessage") if "has been idle" in p["params"]["text"])
    assert (alert["channel"], alert["thread_ts"]) == ("C-APPROVALS", "1700000000.000100")  # the request's thread
    button = alert["blocks"][1]["elements"][2]
    assert (button["action_id"], button["value"], button["text"]["text"]) == (IDLE_EXTEND, launch.id,
                                                                               "Extend TTL 24 h")

    with pytest.raises(PolicyError, match="slack:U-MALLORY neither launched"):
        on_idle_extend(context, "U-MALLORY", launch.id)
    extension = on_idle_extend(context, "U-CAROL", button["value"])
    assert extension.kind == "extend" and extension.state == "pending"
    (budget,) = approvals.budget_standing(extension)  # 2 h spent + 22 h committed + 24 h more, of $60
    assert budget.estimate == 24 * launch.hourly_price and budget.committed == 22 * launch.hourly_price
    card = approval_card(extension, budgets=[budget])
    assert f"Time to live of {launch.id}" in card[0]["text"]["text"] and "*+24h*" in card[0]["text"]["text"]
    assert card[1]["text"]["text"].startswith(":red_circle: *budget team $60.00/month: ")
    with pytest.raises(PolicyError, match="requesters cannot approve or reject their own request"):
        approvals.approve(extension.id, "slack:U-CAROL")
    done = approvals.approve(extension.id, "slack:U-BOB")  # an over-budget approver too
    assert done.state == "extended"
    assert approvals.store.get(launch.id).ends_at == launch.ends_at + dt.timedelta(hours=24)
    clock.advance(hours=23)  # past the first TTL: the reaper honours the new one
    assert approvals.orchestration.reap() == []
    clock.advance(hours=24)
    assert approvals.orchestration.reap() == [launch.id]
