"""Spot interruptions seen from the fleet: a spot launch made through the approval path (boto3 against the real moto
server over HTTP), its instance then taken back by "EC2" (injected in moto's backend: terminated with the
`Server.SpotInstanceTermination` state reason EC2 reports, EC2 API Reference, StateReason), and the jobs leader's
round run by two replicas at once over one store: exactly one post in the launch's thread, the launch recorded as
stopped (its spend stops), and a Relaunch button that asks for the same instance type through the approval path.
"""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends
from moto.ec2.models.instances import StateReason
from slack_sdk import WebClient
from support import Clock, submit_launch

from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.commands import Context, LaunchCommand
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.store import Store
from slackbot.blocks import launch_button_choice
from slackbot.interruptions import interruption_round

pytestmark = pytest.mark.slow


def _replica(url: str, catalog, clock) -> Context:
    policy = Policy(approvers=frozenset({"slack:U-ALICE", "slack:U-BOB"}), ami_id="ami-12c6146b",
                    max_cost=Decimal(40_000))
    approvals = Approvals(Store(url), policy, AwsProvisioner(policy), catalog, clock)
    return Context(catalog_loader=lambda: catalog, now=clock, approvals_factory=lambda _c: approvals)


def _take_back(instance_id: str, region: str) -> None:
    """What EC2 does at a spot interruption, as DescribeInstances then shows it."""
    instance = ec2_backends[DEFAULT_ACCOUNT_ID][region].get_instance(instance_id)
    instance.terminate()
    instance.state_reason = StateReason("Server.SpotInstanceTermination: Spot instance termination",
                                        "Server.SpotInstanceTermination")


def test_an_interruption_is_posted_once_across_two_replicas_with_a_relaunch(aws, tmp_path, catalog, mock_slack):
    clock = Clock()
    url = f"sqlite:///{tmp_path / 'state.db'}"
    first, second = _replica(url, catalog, clock), _replica(url, catalog, clock)
    approvals = first.approvals
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 72h spot region=us-east-1")
    running = approvals.approve(record.id, "slack:U-BOB")
    approvals.store.set_card(running.id, "C-APPROVALS", "1700000000.000100")
    clock.advance(hours=5)
    client = WebClient(token="xoxb-test", base_url=mock_slack.api_url)
    assert interruption_round(first, client, "C-APPROVALS") == []  # nothing taken back yet: nothing said
    _take_back(running.instance_ids[0], running.spec.launched_region or running.spec.region)
    mock_slack.clear()

    barrier, posted = threading.Barrier(2), []

    def leader(context):
        barrier.wait()
        posted.extend(interruption_round(context, client, "C-APPROVALS"))

    threads = [threading.Thread(target=leader, args=(c,)) for c in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert posted == [running.instance_ids[0]]
    (post,) = [call["params"] for call in mock_slack.calls("chat.postMessage")]
    assert post["thread_ts"] == "1700000000.000100" and post["channel"] == "C-APPROVALS"
    hourly = running.hourly_price
    assert "was interrupted by EC2 (Server.SpotInstanceTermination) after 5.0 h" in post["text"]
    assert f"It cost ${5 * hourly:,.2f} so far" in post["text"] and "the launch has stopped" in post["text"]
    stopped = approvals.store.fetch(running.id)
    assert stopped.state == "stopped" and stopped.stopped_at == clock.now  # spend stops at the interruption
    assert [e.action for e in approvals.store.audit_trail(running.id)].count("interrupted") == 1
    assert interruption_round(second, client, "C-APPROVALS") == []  # the next round: no longer running

    (button,) = post["blocks"][1]["elements"]
    option, duration_s = launch_button_choice(button["value"])
    assert (option.instance_type, option.pricing_model, duration_s) == (running.spec.instance_type, "spot", 72 * 3600)
    relaunch = approvals.submit_launch("slack:U-CAROL", LaunchCommand(option, duration_s))
    assert relaunch.state == "pending" and relaunch.spec.instance_type == running.spec.instance_type
