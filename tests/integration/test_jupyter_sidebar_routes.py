"""The routes the JupyterLab sidebar calls besides quote, on a real jupyter_server with AWS as a moto server over
HTTP: `spend` as the server's authenticated user asks it, `util?fleet=1` with the idle instances called out, `stop`
for one of them, `requests` saying who may decide each and its budgets, every bad input a JSON 400 with an example,
and a POST from a browser cookie without its XSRF token refused."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import pytest
from jupyter_context import pin_context
from jupyter_users import TokenUsers, auth
from support import Clock
from tornado.httpclient import HTTPClientError

from gpu_assist.clouds.sdk.aws import REQUEST_TAG, client
from gpu_assist.catalog.providers import REGISTRY
from gpu_assist.clouds.fleet import NAMESPACE, UTILIZATION
from gpu_assist.commands import Context
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.render import csv as render_csv


@pytest.fixture
def jp_server_config(aws, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path / 'state.db'}")
    monkeypatch.setenv("GPU_ASSIST_APPROVERS", "jupyter:bob")
    monkeypatch.setenv("GPU_ASSIST_AMI_ID", "ami-12c6146b")
    (tmp_path / "policy.toml").write_text('[policy.budgets]\nmonthly = { "*" = 20000 }\n', encoding="utf-8")
    monkeypatch.setenv("GPU_ASSIST_CONFIG", str(tmp_path / "policy.toml"))
    return {"ServerApp": {"jpserver_extensions": {"gpu_assist.jupyter": True}, "identity_provider_class": TokenUsers}}


@pytest.fixture
def clock(jp_serverapp, catalog):
    pinned = Clock()
    pin_context(jp_serverapp, catalog, pinned)
    return pinned


async def _call(jp_fetch, *path, user="carol", body=None, params=None, headers=None):
    """(status, JSON answer) of a route; a POST when there is a body (a string is sent as it is)."""
    post = {"method": "POST", "body": body if isinstance(body, str) else json.dumps(body)} if body is not None else {}
    try:
        response = await jp_fetch("gpu-assist", "api", *path, params=params,
                                  headers=auth(user) if headers is None else headers, **post)
        return response.code, json.loads(response.body)
    except HTTPClientError as error:
        return error.code, json.loads(error.response.body) if error.response.body.startswith(b"{") else {}


async def test_the_providers_route_is_the_registry_which_the_sidebars_filter_lists(jp_fetch, clock):
    code, answer = await _call(jp_fetch, "providers")
    assert code == 200
    assert answer["providers"] == [{"name": p.name, "display": p.display} for p in REGISTRY]
    assert (await _call(jp_fetch, "providers", headers={"Authorization": ""}))[0] == 403


async def test_spend_reports_the_launches_approved_through_the_routes_as_their_requester(jp_fetch, clock):
    code, record = await _call(jp_fetch, "launch", body={"q": "8xA100 2h region=us-east-1 project=vision"})
    code, running = await _call(jp_fetch, "requests", record["id"], "approve", user="bob", body={})
    assert code == 200 and running["state"] == "running"
    clock.advance(hours=1)

    code, report = await _call(jp_fetch, "spend", user="bob")

    hourly = running["hourly_price"]
    assert code == 200 and report["period"]["label"] == "2026-12 to date" and report["currency"] == "USD"
    assert report["total"] == round(hourly, 2) > 0
    assert report["groups"]["requester"] == {"jupyter:carol": report["total"]}
    assert report["groups"]["project"] == {"vision": report["total"]}
    assert report["daily"][-1] == {"day": "2026-12-02", "cost": report["total"]}
    (team,) = report["budgets"]
    assert (team["month_to_date"], team["estimate"]) == (report["total"], 0.0)
    assert team["line"].startswith(f"budget team $20,000.00/month: ${report['total']:,.2f} spent + $")
    ((launch,),) = [report["launches"]]
    assert (launch["request_id"], launch["hours"], launch["state"]) == (record["id"], 1.0, "running")
    code, by_project = await _call(jp_fetch, "spend", params={"q": "today by=project"})
    assert code == 200 and list(by_project["groups"]) == ["project"]
    assert by_project["period"]["label"] == "2026-12-02 so far"
    assert (await _call(jp_fetch, "spend", headers={"Authorization": ""}))[0] == 403


async def test_requests_say_who_may_decide_each_and_the_budgets_it_counts_against(jp_fetch, clock):
    code, record = await _call(jp_fetch, "launch", body={"q": "8xA100 2h region=us-east-1"})
    seen = {}
    for user in ("carol", "bob", "alice"):
        code, listed = await _call(jp_fetch, "requests", user=user)
        (seen[user],) = [r for r in listed if r["id"] == record["id"]]

    assert (seen["bob"]["may_decide"], seen["bob"]["why_not"]) == (True, "")
    assert (seen["carol"]["may_decide"], seen["carol"]["why_not"]) == (
        False, "requesters cannot approve or reject their own request")
    assert (seen["alice"]["may_decide"], seen["alice"]["why_not"]) == (False, "jupyter:alice is not an approver")
    (team,) = seen["bob"]["budgets"]
    estimate = round(record["estimated_cost"], 2)
    assert (team["name"], team["amount"], team["estimate"], team["over"]) == ("*", 20000.0, estimate, False)
    assert team["line"].startswith("budget team $20,000.00/month: $0.00 spent + $0.00 committed + $")
    code, detail = await _call(jp_fetch, "requests", user="bob", params={"q": record["id"]})
    assert code == 200 and detail["may_decide"] and [e["action"] for e in detail["audit"]] == ["submit"]
    await _call(jp_fetch, "requests", record["id"], "reject", user="bob", body={})
    code, rejected = await _call(jp_fetch, "requests", user="bob", params={"q": record["id"]})
    assert (rejected["may_decide"], rejected["why_not"], rejected["budgets"]) == (False, "it is rejected", [])
    code, waiting = await _call(jp_fetch, "launch", body={"q": "8xA100 2h region=us-east-1"})
    clock.advance(days=30)
    code, late = await _call(jp_fetch, "requests", user="bob", params={"q": waiting["id"]})
    assert (late["state"], late["may_decide"], late["why_not"]) == ("pending", False, "it has expired")


async def test_the_quote_routes_comparison_is_the_clis_table_row_for_row(jp_fetch, clock, catalog):
    code, answer = await _call(jp_fetch, "quote", params={"q": "8xA100 72h", "view": "compare"})

    pinned = Context(catalog_loader=lambda: catalog, today=lambda: clock().date())
    cli = list(csv.DictReader(io.StringIO(render_csv.render(run(parse_command("quote 8xA100 72h", catalog.gpus),
                                                                     pinned)))))
    shown = answer["rows"] + answer["untrusted"]
    assert code == 200 and len(shown) == len(cli) > 10 and answer["title"].startswith("8×A100 40 GB for 72h — ")
    assert [(r["rank"], r["provider"], r["instance_type"], r["instances"], r["where"], r["best"]) for r in shown] == [
        (int(c["rank"]) if c["rank"] else None, c["provider"], c["instance_type"], int(c["instances"]), c["where"],
         c["best"]) for c in cli]
    assert [r["totals"] for r in shown] == [{m: float(c[m]) if c[m] else None for m in answer["columns"]} for c in cli]
    assert answer["columns"] == ["on-demand", "spot", "reserved-1y", "reserved-3y"]
    markers = {m for r in shown for m in r["markers"]}
    assert markers == set(answer["footnotes"]) and markers
    assert all(f"{m} {answer['footnotes'][m]}" in answer["legend"] for m in markers)
    code, bad = await _call(jp_fetch, "quote", params={"q": "8xA100 72h", "view": "table"})
    assert code == 400 and bad["example"] == "quote?q=8xA100+72h&view=compare"


def _running(ec2, count: int) -> list[str]:
    reservation = ec2.run_instances(
        ImageId="ami-12c6146b", InstanceType="p4d.24xlarge", MinCount=count, MaxCount=count,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": REQUEST_TAG, "Value": "r-0123456789ab"}]}])
    return [instance["InstanceId"] for instance in reservation["Instances"]]


def _report_use(cloudwatch, instance_id: str, percent: float, now: dt.datetime) -> None:
    """Thirty minutes of one GPU's use, one sample a minute up to `now`, as the CloudWatch agent sends them."""
    dimensions = [{"Name": "InstanceId", "Value": instance_id}, {"Name": "index", "Value": "0"},
                  {"Name": "name", "Value": "NVIDIA A100-SXM4-40GB"}]
    cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=[
        {"MetricName": UTILIZATION, "Dimensions": dimensions, "Value": percent, "Unit": "Percent",
         "Timestamp": now - dt.timedelta(minutes=minute)} for minute in range(30)])


@pytest.mark.clock
async def test_the_fleet_route_calls_out_the_idle_instances_from_cloudwatch(jp_fetch, clock, catalog):
    ec2, cloudwatch = client("ec2"), client("cloudwatch")
    idle, busy = _running(ec2, 2)
    _report_use(cloudwatch, idle, 2.0, clock())
    _report_use(cloudwatch, busy, 90.0, clock())

    code, fleet = await _call(jp_fetch, "util", params={"fleet": "1", "window": "30m", "threshold": "10"})

    hourly = min(o.on_demand_hourly for o in catalog.offers_of_type("aws", "p4d.24xlarge") if o.region == "us-east-1")
    assert code == 200 and (fleet["region"], fleet["window_s"], fleet["threshold_pct"]) == ("us-east-1", 1800, 10.0)
    assert fleet["idle"] == [idle] and fleet["wasted_per_hour"] == round(float(hourly), 4)
    usage = {i["instance_id"]: i for i in fleet["instances"]}
    assert set(usage) == {idle, busy} and usage[busy]["gpu_utilization_avg_pct"] == 90.0
    assert usage[idle]["hourly_cost"] == round(float(hourly), 6) and usage[idle]["request_id"] == "r-0123456789ab"
    code, in_words = await _call(jp_fetch, "util", params={"q": "fleet region=us-east-1 threshold=95"})
    assert code == 200 and sorted(in_words["idle"]) == sorted([idle, busy])
    code, unknown = await _call(jp_fetch, "util", params={"q": "fleet i-0123456789abcdef0"})
    assert code == 502  # AWS refused: the message says what it said
    assert unknown["error"].startswith("AWS said InvalidInstanceID.NotFound while reading the GPU fleet")
    code, here = await _call(jp_fetch, "util", params={"fleet": "0"})
    assert code == 200 and here["gpus"] == [] and here["reason"]  # this server's GPUs: none on a test machine


async def test_a_stop_of_a_fleet_instance_is_asked_as_the_user_and_only_for_gpu_assists_own(jp_fetch, clock):
    ec2 = client("ec2")
    (ours,) = _running(ec2, 1)
    (foreign,) = [i["InstanceId"] for i in ec2.run_instances(ImageId="ami-12c6146b", InstanceType="p4d.24xlarge",
                                                              MinCount=1, MaxCount=1)["Instances"]]

    code, record = await _call(jp_fetch, "stop", body={"q": f"{ours} region=us-east-1"})

    assert code == 200 and (record["kind"], record["state"], record["requester"]) == ("stop", "pending",
                                                                                      "jupyter:carol")
    assert record["instance_ids"] == [ours]
    code, refused = await _call(jp_fetch, "stop", body={"q": f"{foreign} region=us-east-1"})
    assert code == 403 and refused["error"].startswith(f"not launched by gpu-assist: {foreign}")
    code, stopped = await _call(jp_fetch, "requests", record["id"], "approve", user="bob", body={})
    assert code == 200 and stopped["state"] == "stopped"
    with pytest.raises(HTTPClientError) as raised:
        await jp_fetch("gpu-assist", "api", "stop", headers=auth("carol"))
    assert raised.value.code == 405  # a GET never asks for anything


@pytest.mark.parametrize(("path", "params", "body", "example"), [
    ("util", {"fleet": "maybe"}, None, "util?fleet=1"),
    ("util", {"fleet": "1", "window": "soon"}, None, "util fleet window=30m"),
    ("util", {"fleet": "1", "threshold": "200"}, None, "util fleet threshold=10"),
    ("util", {"fleet": "1", "region": "mars"}, None, "util?fleet=1&region=us-east-1"),
    ("util", {"q": "fleet idle"}, None, "util fleet region=us-east-1"),
    ("spend", {"q": "by=colour"}, None, "spend mtd by=project"),
    ("spend", {"q": "last-week"}, None, "spend 2026-11"),
    ("spend", None, "{not json", '{"q": "8xA100 72h"}'),
    ("launch", None, {"q": "8xA1000 2h"}, "8xA100 72h"),
    ("launch", None, {"q": "8xA100 2h region=us-east-1 project=a!b"}, "launch 8xA100 72h project=vision"),
    ("extend", None, {"q": "r-xyz 24h"}, "extend r-0123456789ab 24h"),
    ("requests", {"q": "r-nothex"}, None, "requests r-0123456789ab"),
    ("stop", None, {"q": "i-nothex"}, "stop i-0123456789abcdef0"),
])
async def test_bad_input_is_a_json_400_with_an_example(jp_fetch, clock, path, params, body, example):
    code, answer = await _call(jp_fetch, path, params=params, body=body)
    assert code == 400 and answer["example"] == example
    assert answer["error"].endswith(f"example: {example}") and "Traceback" not in answer["error"]


async def _browser_cookies(jp_fetch, user: str) -> dict[str, str]:
    """The cookies a browser holds after opening a Jupyter page as `user`: the login cookie and `_xsrf`, which
    Jupyter sets with any page it renders (JupyterLab's /lab; this test server, without JupyterLab, its 404 page)."""
    try:
        page = (await jp_fetch("lab", headers=auth(user))).headers
    except HTTPClientError as error:
        page = error.response.headers
    return {c.split("=", 1)[0]: c.split(";")[0].split("=", 1)[1] for c in page.get_list("Set-Cookie")}


async def test_a_post_from_a_cookie_needs_its_xsrf_token(jp_fetch, clock):
    """bob's browser session may ask for a launch, as bob, only with the XSRF token beside its cookies: without it,
    or with a forged one (a cross-site POST), Jupyter refuses it before the route runs."""
    cookies = await _browser_cookies(jp_fetch, "bob")
    browser = {"Authorization": "", "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}
    launch = {"q": "8xA100 2h region=us-east-1"}
    assert (await _call(jp_fetch, "launch", body=launch, headers=browser))[0] == 403
    assert (await _call(jp_fetch, "launch", body=launch, headers={**browser, "X-XSRFToken": "2|forged"}))[0] == 403
    assert (await _call(jp_fetch, "requests"))[1] == []  # nothing was asked for
    code, record = await _call(jp_fetch, "launch", body=launch, headers={**browser, "X-XSRFToken": cookies["_xsrf"]})
    assert code == 200 and record["requester"] == "jupyter:bob"
