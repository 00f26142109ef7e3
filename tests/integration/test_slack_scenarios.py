"""The Slack app as a user meets it: signed requests into the real server, answers read from a mock Web API."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
import urllib.request

import pytest
from slack_client import SIGNING_SECRET, action_body, command_body, settle, signed_post
from support import TODAY

from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.clouds.launch.aws import REQUEST_TAG
from gpu_assist.pricing.compare import compare, refine
from gpu_assist.pricing.query_parser import parse_request
from gpu_assist.pricing.quote import quote
from gpu_assist.render.comparison import format_total
from gpu_assist.render.notes import words


@pytest.fixture
def slack(slack_server, mock_slack, aws):
    mock_slack.clear()
    return slack_server


def _command(slack, mock, text, user="U-CAROL"):
    response_url = mock.response_url()
    status, body = signed_post(slack["url"], command_body(text, user=user, response_url=response_url))
    return status, body, response_url


def _responses(mock, response_url, count=1):
    path = response_url.split(mock.url + "/", 1)[1]
    return [r["params"] for r in mock.wait_for(path, count)]


def _card_request_id(post) -> str:
    actions = next(b for b in post["params"]["blocks"] if b["type"] == "actions")
    return actions["elements"][0]["value"]


def _tagged(request_id):
    ec2 = aws_clients.client("ec2")
    return [i for r in ec2.describe_instances(Filters=[{"Name": f"tag:{REQUEST_TAG}", "Values": [request_id]}])[
        "Reservations"] for i in r["Instances"]]


def test_health_endpoint(slack):
    with urllib.request.urlopen(slack["base"] + "/healthz", timeout=5) as response:
        assert response.status == 200 and json.loads(response.read())["offers"] > 3000


def _servers_today() -> dt.date:
    """The date the started server quotes on: it reads the wall clock itself, as a deployed server does, and this
    process shares that clock (moved with it under `--moved-clock`). A price's age, and so which rows rank, follows
    that date: the card is compared with the core on the same day, whatever day the suite runs."""
    return dt.date.today()


def test_quote_card_matches_the_core_and_offers_launch_buttons(slack, mock_slack, catalog):
    status, body, response_url = _command(slack, mock_slack, "quote 8xA100 72h")
    assert status == 200 and body == ""  # a quote takes milliseconds: no "Working on…" before it
    (answer,) = _responses(mock_slack, response_url)
    card = json.dumps(answer["blocks"], ensure_ascii=False)
    assert "--" not in card  # Slack's grammar (include-flagged, top=20), never CLI flags
    core = compare(refine(quote(parse_request("8xA100 72h", catalog.gpus), catalog, today=_servers_today())))
    rows = [b for b in answer["blocks"] if b["type"] == "section" and "accessory" in b or
            b["type"] == "section" and b["text"]["text"][:1] == "*" and ". " in b["text"]["text"][:6]]
    assert 0 < len(rows) <= 8
    for row, section in zip(core.rows, rows):
        assert row.instance_type in section["text"]["text"]
        assert format_total(row.best.total, "USD") in section["text"]["text"]
    buttons = [b["accessory"] for b in rows if "accessory" in b]
    aws_rows = [r for r in core.rows[:8] if r.provider == "aws"]
    assert buttons and len(buttons) == len(aws_rows)
    asked = json.loads(buttons[0]["value"])  # data, not words to parse again
    assert asked["option"].startswith("aws:p4d.24xlarge:") and asked["duration_s"] == 72 * 3600


def test_a_quote_rows_launch_button_asks_for_that_option_for_the_quoted_time(slack, mock_slack):
    _, _, response_url = _command(slack, mock_slack, "quote 8xA100 72h")
    (answer,) = _responses(mock_slack, response_url)
    button = next(b["accessory"] for b in answer["blocks"] if "accessory" in b)
    clicked = mock_slack.response_url()
    signed_post(slack["url"], action_body(button["action_id"], button["value"], user="U-CAROL",
                                          response_url=clicked))
    (card,) = mock_slack.wait_for("chat.postMessage")
    option = json.loads(button["value"])["option"]
    _, instance_type, region, pricing = option.split(":")
    asked = card["params"]["blocks"][0]["text"]["text"]
    assert f"1× `{instance_type}` (8×A100) *{pricing}* in {region} for 72h" in asked
    (told,) = _responses(mock_slack, clicked)
    assert told["text"] == f"Request `{_card_request_id(card)}` is waiting for an approver."
    stale = mock_slack.response_url()  # a card posted by an earlier version carried words, not data
    signed_post(slack["url"], action_body(button["action_id"], f"{option} 72h", user="U-CAROL", response_url=stale))
    (refused,) = _responses(mock_slack, stale)
    assert refused["text"] == "Not requested: that button is out of date — quote again and use the new card"
    assert len(mock_slack.calls("chat.postMessage")) == 1


def test_the_more_button_shows_the_next_rows(slack, mock_slack, catalog):
    _, _, response_url = _command(slack, mock_slack, "quote 1xA100 72h top=3")
    (answer,) = _responses(mock_slack, response_url)
    more = next(e for b in answer["blocks"] if b["type"] == "actions" for e in b["elements"]
                if e["action_id"] == "quote_more")
    # the command itself, as fields with a version: the card's own top=3 cut the rest, so it asks for 11 rows
    assert json.loads(more["value"]) == {"v": 1, "quote": {"gpu": "A100", "duration_s": 259200,
                                                           "variants": ["A100-80GB"], "top": 11}, "start": 3}
    again = mock_slack.response_url()
    status, _ = signed_post(slack["url"], action_body("quote_more", more["value"], user="U-CAROL",
                                                      response_url=again))
    assert status == 200
    (page,) = _responses(mock_slack, again)
    assert page["blocks"][0]["text"]["text"].endswith("(from #4)")
    core = compare(refine(quote(parse_request("1xA100 72h", catalog.gpus), catalog, today=_servers_today())), top=11)
    assert core.rows[3].instance_type in page["blocks"][1]["text"]["text"]


@pytest.mark.parametrize("value", [
    json.dumps({"q": "quote 1xA100 72h top=11", "start": 3}),  # a card from before buttons carried the command
    json.dumps({"v": 2, "quote": {"gpu": "A100"}, "start": 3}),  # a version this server does not know
    json.dumps({"v": 1, "quote": {"gpu": "A100", "top": 0}, "start": 3}),  # a value no quote command has
    json.dumps({"v": 1, "quote": {"gpu": "A100", "providers": ["nowhere"]}, "start": 3}),
    json.dumps({"v": 1, "quote": {"gpu": "A100"}, "start": -1}),
    "quote 1xA100 72h",  # not JSON at all
])
def test_an_old_or_malformed_more_button_is_out_of_date(slack, mock_slack, value):
    response_url = mock_slack.response_url()
    status, _ = signed_post(slack["url"], action_body("quote_more", value, user="U-CAROL", response_url=response_url))
    assert status == 200
    (answer,) = _responses(mock_slack, response_url)
    assert answer["text"] == "That button is out of date." and "blocks" not in answer


def test_an_empty_quote_card_says_which_filter_removed_what(slack, mock_slack, catalog):
    _, _, response_url = _command(slack, mock_slack, "quote 8xH100 1mo monthly")
    (answer,) = _responses(mock_slack, response_url)
    reason = words(quote(parse_request("8xH100 1mo monthly", catalog.gpus), catalog, today=TODAY).empty_reason)
    assert reason.startswith("no monthly prices for H100")
    assert answer["blocks"][1]["text"]["text"] == f"No offer matches: {reason}."


def test_the_ack_comes_before_the_slow_work(slack, mock_slack):
    started = time.monotonic()
    status, body, response_url = _command(slack, mock_slack, "recommend train 70B tokens=1T deadline=30d")
    acked = time.monotonic()
    assert status == 200 and "Working on" in body
    (answer,) = _responses(mock_slack, response_url)
    arrived = mock_slack.calls(response_url.split(mock_slack.url + "/", 1)[1])[0]["at"]
    assert started < acked < arrived  # the HTTP answer to Slack did not wait for the plan
    assert answer["blocks"][0]["text"]["text"].startswith("Plan: train 70B")


def test_bad_input_is_answered_at_once_with_an_example(slack, mock_slack):
    status, body, _ = _command(slack, mock_slack, "quote 8xA1000 72h")
    assert status == 200
    answer = json.loads(body)
    assert answer["response_type"] == "ephemeral"
    assert answer["text"] == "unknown GPU 'A1000' — did you mean A100? — example: 8xA100 72h"
    status, body, _ = _command(slack, mock_slack, "help")
    assert "quote 8xA100 72h" in json.loads(body)["text"] and "recommend" in json.loads(body)["text"]


def test_launch_goes_to_the_approval_channel_and_runs_once_after_approval(slack, mock_slack):
    status, _, response_url = _command(slack, mock_slack, "launch 8xA100 4h region=us-east-1")
    assert status == 200
    (card,) = mock_slack.wait_for("chat.postMessage")
    assert card["params"]["channel"] == "C-APPROVALS"
    text = card["params"]["blocks"][0]["text"]["text"]
    assert "from <@U-CAROL>" in text and "p4d.24xlarge" in text and "Dry run: ok" in text
    request_id = _card_request_id(card)
    (told,) = _responses(mock_slack, response_url)
    assert request_id in told["text"]

    for user in ("U-CAROL", "U-MALLORY"):  # the requester and a non-approver
        signed_post(slack["url"], action_body("approve_request", request_id, user=user,
                                              response_url=mock_slack.response_url()))
    refusals = mock_slack.wait_for("chat.postEphemeral", 2)
    assert {r["params"]["user"] for r in refusals} == {"U-CAROL", "U-MALLORY"}
    assert any("cannot approve" in r["params"]["text"] for r in refusals)
    assert _tagged(request_id) == []

    status, _ = signed_post(slack["url"], action_body("approve_request", request_id, user="U-BOB",
                                                      response_url=mock_slack.response_url()))
    assert status == 200
    updates = mock_slack.wait_for("chat.update", 2)
    assert "Approved by <@U-BOB> — launching" in updates[0]["params"]["text"]
    assert "Running:" in updates[1]["params"]["text"]
    assert len(_tagged(request_id)) == 1
    thread = mock_slack.wait_for("chat.postMessage", 2)[1]["params"]
    assert thread["thread_ts"] == "1700000000.000001" and thread["text"].startswith("<@U-CAROL>")


def test_a_double_click_on_approve_launches_once(slack, mock_slack):
    _command(slack, mock_slack, "launch 8xA100 4h region=us-east-1")
    request_id = _card_request_id(mock_slack.wait_for("chat.postMessage")[0])
    clicks = [threading.Thread(target=signed_post, args=(slack["url"], action_body(
        "approve_request", request_id, user=user, response_url=mock_slack.response_url())))
        for user in ("U-BOB", "U-ALICE", "U-BOB")]
    for click in clicks:
        click.start()
    for click in clicks:
        click.join()
    refusals = mock_slack.wait_for("chat.postEphemeral", 2)
    assert all("already" in r["params"]["text"] for r in refusals)
    updates = mock_slack.wait_for("chat.update", 2)
    assert "Running:" in updates[-1]["params"]["text"]
    settle(slack["url"], mock_slack)
    assert len(mock_slack.calls("chat.update")) == 2  # one decision, one outcome
    assert len(_tagged(request_id)) == 1


def test_a_slack_user_named_like_a_jupyter_approver_is_not_that_approver(slack, mock_slack):
    """The server's approvers are slack:U-ALICE, slack:U-BOB and jupyter:dave: no Slack user is dave."""
    _command(slack, mock_slack, "launch 8xA100 4h region=us-east-1")
    request_id = _card_request_id(mock_slack.wait_for("chat.postMessage")[0])
    for user, username in (("U-DAVE", "dave"), ("dave", "dave"), ("jupyter:dave", "dave")):
        signed_post(slack["url"], action_body("approve_request", request_id, user=user, username=username,
                                              response_url=mock_slack.response_url()))
    refusals = mock_slack.wait_for("chat.postEphemeral", 3)
    assert sorted(r["params"]["text"] for r in refusals) == sorted(
        f"Not done: slack:{user} is not an approver" for user in ("U-DAVE", "dave", "jupyter:dave"))
    settle(slack["url"], mock_slack)
    assert mock_slack.calls("chat.update") == [] and _tagged(request_id) == []


def test_reject_updates_the_card(slack, mock_slack):
    _command(slack, mock_slack, "launch 8xA100 4h region=us-east-1")
    request_id = _card_request_id(mock_slack.wait_for("chat.postMessage")[0])
    signed_post(slack["url"], action_body("reject_request", request_id, user="U-ALICE",
                                          response_url=mock_slack.response_url()))
    (update,) = mock_slack.wait_for("chat.update")
    assert update["params"]["text"].endswith("Rejected by <@U-ALICE>")
    assert _tagged(request_id) == []


@pytest.mark.parametrize("case", ["wrong secret", "old timestamp", "tampered body", "no signature"])
def test_forged_requests_get_401_and_change_nothing(slack, mock_slack, case):
    body = command_body("launch 8xA100 4h", user="U-CAROL", response_url=mock_slack.response_url())
    if case == "wrong secret":
        status, _ = signed_post(slack["url"], body, secret="not-the-secret")
    elif case == "old timestamp":
        status, _ = signed_post(slack["url"], body, timestamp=int(time.time()) - 301)
    elif case == "tampered body":
        from slack_sdk.signature import SignatureVerifier

        stamp = int(time.time())
        signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=str(stamp), body=body)
        status, _ = signed_post(slack["url"], body.replace("4h", "400h"), timestamp=stamp, signature=signature)
    else:
        status, _ = signed_post(slack["url"], body, signature="v0=")
    assert status == 401
    marker = settle(slack["url"], mock_slack)
    assert [r for r in mock_slack.received if r["method"] != marker] == []


def test_util_shows_the_fleet_with_stop_buttons_for_idle_instances(slack, mock_slack):
    from gpu_assist.clouds.fleet import NAMESPACE, UTILIZATION

    _command(slack, mock_slack, "launch 8xA100 4h region=us-east-1")
    request_id = _card_request_id(mock_slack.wait_for("chat.postMessage")[0])
    signed_post(slack["url"], action_body("approve_request", request_id, user="U-BOB",
                                          response_url=mock_slack.response_url()))
    mock_slack.wait_for("chat.update", 2)
    (instance,) = _tagged(request_id)
    now = dt.datetime.now(dt.timezone.utc)
    cloudwatch = aws_clients.client("cloudwatch")
    cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=[
        {"MetricName": UTILIZATION, "Timestamp": now - dt.timedelta(minutes=m), "Value": 1.0,
         "Dimensions": [{"Name": "InstanceId", "Value": instance["InstanceId"]}, {"Name": "index", "Value": "0"},
                        {"Name": "name", "Value": "NVIDIA A100"}]} for m in range(31)])
    _, _, response_url = _command(slack, mock_slack, "util")
    (answer,) = _responses(mock_slack, response_url)
    buttons = [e for b in answer["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert [b["value"] for b in buttons] == [instance["InstanceId"]]
    assert "IDLE" in answer["blocks"][0]["text"]["text"]


def test_secrets_never_reach_the_server_log(slack):
    log = slack["log"].read_text()
    for secret in (slack["env"]["SLACK_BOT_TOKEN"], SIGNING_SECRET, slack["env"]["AWS_SECRET_ACCESS_KEY"]):
        assert secret not in log
