"""The launch flow as Slack shows it, pinned: every Web API call from `/gpu launch` to the instance running.

Through the real server on a real socket with signed requests, answered by the mock Web API, launching on moto.
Request ids, instance ids, Slack timestamps and dates vary per run and are replaced by placeholders.
"""

from __future__ import annotations

import json
import re

import pytest
from slack_client import action_body, command_body, signed_post

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.launch.aws import REQUEST_TAG

pytestmark = pytest.mark.slow  # the real server process, moto and the mock Slack

_VARYING = [
    (re.compile(r"\bi-[0-9a-f]{8,17}\b"), "i-INSTANCE"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?"), "DATETIME"),
    (re.compile(r"\b\d{10}\.\d{6}\b"), "SLACK-TS"),
    (re.compile(r"response/\d+"), "response/N"),  # the mock's counter: how many tests ran before
    # the team's month on the card counts every launch the session's shared server made before this test
    # (its figures are pinned in tests/unit/test_watch.py)
    (re.compile(r"Team this month: [^\"]*"), "Team this month: TEAM-FIGURES"),
]


def _normalised(document, request_id: str) -> str:
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False, default=str).replace(
        request_id, "REQUEST-ID")
    for pattern, placeholder in _VARYING:
        text = pattern.sub(placeholder, text)
    return text + "\n"


def test_launch_card_approval_and_outcome(golden, slack_server, mock_slack, aws):
    mock_slack.clear()
    response_url = mock_slack.response_url()
    status, ack = signed_post(slack_server["url"], command_body("launch 8xA100 4h region=us-east-1", user="U-CAROL",
                                                                response_url=response_url))
    assert status == 200
    (card,) = mock_slack.wait_for("chat.postMessage")
    request_id = next(b for b in card["params"]["blocks"] if b["type"] == "actions")["elements"][0]["value"]
    mock_slack.wait_for("response/")
    refused_url = mock_slack.response_url()
    signed_post(slack_server["url"], action_body("approve_request", request_id, user="U-CAROL",
                                                 response_url=refused_url))
    mock_slack.wait_for("chat.postEphemeral")
    signed_post(slack_server["url"], action_body("approve_request", request_id, user="U-BOB",
                                                 response_url=mock_slack.response_url()))
    mock_slack.wait_for("chat.update", 2)
    mock_slack.wait_for("chat.postMessage", 2)
    calls = sorted(mock_slack.received, key=lambda c: (c["method"].startswith("response/"), c["at"]))
    (launched,) = [i for r in aws_clients.client("ec2").describe_instances(Filters=[
        {"Name": f"tag:{REQUEST_TAG}", "Values": [request_id]}])["Reservations"] for i in r["Instances"]]
    instance = {"InstanceType": launched["InstanceType"], "Zone": launched["Placement"]["AvailabilityZone"],
                "Tags": sorted((t["Key"], t["Value"]) for t in launched.get("Tags", []))}
    golden("slack-launch-flow.json", _normalised({
        "ack": json.loads(ack), "web_api": [{"method": c["method"], "params": c["params"]} for c in calls],
        "instance": instance}, request_id))
