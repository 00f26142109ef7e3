"""Spend from gpu-assist's own records and from Cost Explorer: boto3 against the real moto server over HTTP,
an injected clock, a SQLite store. moto's Cost Explorer returns the results queued through its
/moto-api/static/ce/cost-and-usage-results endpoint, in the real response format."""

from __future__ import annotations

import datetime as dt
import json
import urllib.request
from decimal import Decimal

import pytest
from support import Clock, submit_launch

from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.commands import Context, SpendCommand
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.errors import ParseError, PolicyError
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.render import json as render_json  # noqa: F401
from gpu_assist.render import operations as _operations  # noqa: F401
from gpu_assist.render import text as render_text
from gpu_assist.store import Store
from gpu_assist.team.budgets import Budgets
from gpu_assist.team.periods import parse_period

IMAGE = "ami-12c6146b"


@pytest.fixture
def clock():
    return Clock()


def _approvals(tmp_path, catalog, clock, **policy):
    settings = dict(approvers=frozenset({"slack:U-ALICE", "slack:U-BOB"}), ami_id=IMAGE, max_cost=Decimal(20_000))
    policy = Policy(**{**settings, **policy})
    return Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy, AwsProvisioner(policy), catalog, clock)


def _context(approvals, clock, catalog):
    return Context(catalog_loader=lambda: catalog, now=clock, approvals_factory=lambda _context: approvals)


def test_five_hours_running_cost_five_times_the_approved_hourly_price(aws, tmp_path, catalog, clock):
    approvals = _approvals(tmp_path, catalog, clock)
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 72h region=us-east-1")
    hourly = record.spec.hourly * record.spec.instances
    assert approvals.store.get(record.id).hourly_price == hourly  # recorded on the request at submit
    running = approvals.approve(record.id, "slack:U-BOB")
    assert running.launched_at == clock.now
    clock.advance(hours=2)
    context = _context(approvals, clock, catalog)
    so_far = run(parse_command("spend", catalog.gpus), context)
    assert so_far.total == 2 * hourly and so_far.committed == 70 * hourly
    assert so_far.launches[0].projected == 72 * hourly
    clock.advance(hours=3)
    stop = approvals.submit_stop("slack:U-CAROL", list(running.instance_ids))
    approvals.approve(stop.id, "slack:U-ALICE")
    assert approvals.store.get(record.id).stopped_at == clock.now
    clock.advance(hours=10)  # stopped instances cost nothing more
    report = run(parse_command("spend mtd", catalog.gpus), context)
    assert report.total == 5 * hourly and report.committed == 0
    assert report.groups["requester"] == {"slack:U-CAROL": 5 * hourly}
    assert report.groups["instance-type"] == {"p4d.24xlarge": 5 * hourly}
    assert dict(report.daily)[dt.date(2026, 12, 2)] == 5 * hourly
    assert run(parse_command("spend 2026-11", catalog.gpus), context).total == 0
    text = render_text.render(report)
    assert f"${5 * hourly:,.2f} (1 launch)" in text and all(len(line) <= 100 for line in text.splitlines())
    assert json.loads(render_json.render(report))["total"] == float(round(5 * hourly, 2))


def test_a_launch_across_midnight_of_a_month_end_is_split_between_the_months(aws, tmp_path, catalog):
    clock = Clock(dt.datetime(2026, 11, 30, 22, 0, tzinfo=dt.timezone.utc))  # 2 h before December begins
    approvals = _approvals(tmp_path, catalog, clock)
    running = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 10h region=us-east-1").id,
                                "slack:U-BOB")
    clock.advance(hours=5)  # 03:00 UTC on the 1st: 2 h were November's, 3 h are December's
    context = _context(approvals, clock, catalog)
    december = run(parse_command("spend mtd", catalog.gpus), context)
    assert december.total == 3 * running.hourly_price and december.committed == 5 * running.hourly_price
    assert dict(december.daily) == {dt.date(2026, 12, 1): 3 * running.hourly_price}
    assert run(parse_command("spend 2026-11", catalog.gpus), context).total == 2 * running.hourly_price


def _queue_cost_explorer(moto_url: str, results: list[dict]) -> None:
    body = json.dumps({"results": results}).encode()
    request = urllib.request.Request(f"{moto_url}/moto-api/static/ce/cost-and-usage-results", data=body,
                                     method="POST", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()


def test_source_aws_shows_cost_explorer_beside_the_records(aws, tmp_path, catalog, clock):
    approvals = _approvals(tmp_path, catalog, clock)
    record = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 72h region=us-east-1").id,
                               "slack:U-BOB")
    clock.advance(hours=4)
    _queue_cost_explorer(aws, [{"ResultsByTime": [{
        "TimePeriod": {"Start": "2026-12-01", "End": "2026-12-03"}, "Total": {}, "Estimated": True,
        "Groups": [{"Keys": [f"gpu-assist:request-id${record.id}"],
                    "Metrics": {"UnblendedCost": {"Amount": "120.5", "Unit": "USD"}}},
                   {"Keys": ["gpu-assist:request-id$"], "Metrics": {"UnblendedCost": {"Amount": "3", "Unit": "USD"}}}],
    }]}])
    report = run(parse_command("spend mtd source=aws", catalog.gpus), _context(approvals, clock, catalog))
    assert report.actual["by_tag"] == {record.id: Decimal("120.5"), "(untagged)": Decimal(3)}
    assert report.actual["estimated"] is True and report.actual["total"] == Decimal("123.5")
    text = render_text.render(report)
    assert "Cost Explorer (estimated), by tag gpu-assist:request-id: $123.50" in text
    assert record.id in text.split("by tag")[1]


def test_budget_standing_counts_spent_committed_and_the_request(aws, tmp_path, catalog, clock):
    budgets = Budgets({"*": Decimal(2000)}, "USD", "escalate", frozenset({"slack:U-BOB"}))
    approvals = _approvals(tmp_path, catalog, clock, budgets=budgets)
    first = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 10h region=us-east-1").id,
                              "slack:U-ALICE")
    clock.advance(hours=4)
    report = run(parse_command("spend", catalog.gpus), _context(approvals, clock, catalog))
    (status,) = report.budgets
    assert status.month_to_date == 4 * first.hourly_price and status.committed == 6 * first.hourly_price
    assert status.remaining == 2000 - 10 * first.hourly_price


def test_bad_spend_words_are_clear(catalog):
    for text, words in (("spend 2026-13", "unknown period '2026-13'"), ("spend fortnight", "unknown period"),
                        ("spend by=color", "cannot group spend by 'color'"), ("spend source=gcp", "unknown spend "
                                                                                 "source")):
        with pytest.raises(ParseError, match=words) as caught:
            parse_command(text, catalog.gpus)
        assert "example: spend" in caught.value.user_message()


def test_bad_budgets_in_the_policy_are_clear(tmp_path):
    from gpu_assist.lifecycle.policy import load_policy

    for table, words in (('monthly = { "*" = -5 }', "budget '\\*' must be a number of USD that is 0 or more"),
                         ('currency = "XYZ"\nmonthly = { "*" = 5 }', "budget currency 'XYZ' is unknown"),
                         ('monthly = { "*" = 5 }\non_over_budget = "shrug"', "on_over_budget must be escalate or "
                                                                             "refuse")):
        path = tmp_path / "policy.toml"
        path.write_text(f"[policy.budgets]\n{table}\n", encoding="utf-8")
        with pytest.raises(PolicyError, match=words) as caught:
            load_policy({"GPU_ASSIST_CONFIG": str(path)})
        assert "example: [policy.budgets]" in caught.value.user_message()


def test_the_notebook_gets_a_dataframe_and_a_panel_with_the_budget_line(aws, tmp_path, catalog, clock):
    import gpu_assist
    from gpu_assist.jupyter.spend_panel import SpendPanel

    budgets = Budgets({"*": Decimal(500)}, "USD", "escalate", frozenset({"slack:U-BOB"}))
    approvals = _approvals(tmp_path, catalog, clock, budgets=budgets)
    record = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 72h region=us-east-1").id,
                               "slack:U-BOB")
    clock.advance(hours=3)
    context = _context(approvals, clock, catalog)
    frame = gpu_assist.spend("mtd", context=context)
    assert list(frame.request_id) == [record.id]
    assert frame.cost.dtype == "float64" and frame.cost.iloc[0] == pytest.approx(float(3 * record.hourly_price))
    assert frame.attrs["budgets"][0]["amount"] == 500  # as `spend --format json` says it
    assert frame.attrs["budgets"][0]["line"].startswith("budget team $500.00/month")
    panel = SpendPanel(context)
    panel.period.value, panel.by.value = "7d", "requester"
    assert panel.command() == SpendCommand(period=parse_period("7d"), by="requester")  # `spend 7d by=requester`
    assert panel.run().total == 3 * record.hourly_price and panel.error.value == ""
    panel.period.value = "fortnight"
    assert panel.run() is None and "unknown period" in panel.error.value
    with pytest.raises(ParseError, match="unknown period"):
        gpu_assist.spend("fortnight", context=context)


def test_an_over_budget_request_shows_the_overrun_and_needs_an_over_budget_approver(aws, tmp_path, catalog, clock):
    from slackbot.blocks import approval_card

    budgets = Budgets({"*": Decimal(1000)}, "USD", "escalate", frozenset({"slack:U-CFO"}))
    approvals = _approvals(tmp_path, catalog, clock, budgets=budgets,
                           approvers=frozenset({"slack:U-BOB", "slack:U-CFO"}))
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 72h region=us-east-1")
    (status,) = approvals.budget_standing(record)
    assert status.over and status.remaining == 1000 - record.estimated_cost
    card = approval_card(record, budgets=[status])
    budget_text = card[1]["text"]["text"]
    assert budget_text.startswith(":red_circle: *budget team $1,000.00/month: $0.00 spent + $0.00 committed + ")
    assert f"OVER BUDGET by ${record.estimated_cost - 1000:,.2f}" in budget_text
    with pytest.raises(PolicyError, match="only an over-budget approver may approve it"):
        approvals.approve(record.id, "slack:U-BOB")
    assert approvals.store.get(record.id).state == "pending"
    refused = [e for e in approvals.store.audit_trail(record.id) if e.outcome == "refused"]
    assert refused and "would be over by" in refused[0].detail
    assert approvals.approve(record.id, "slack:U-CFO").state == "running"
