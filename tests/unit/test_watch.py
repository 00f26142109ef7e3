"""Idle alerts, budget crossings and the digest from records and a fleet report: pure, with a fixed clock."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from gpu_assist.clouds.fleet import FleetReport, InstanceUsage
from gpu_assist.lifecycle.records import RequestRecord
from gpu_assist.lifecycle.specs import LaunchSpec
from gpu_assist.render.spend import budget_line, idle_alert, render_digest
from gpu_assist.team.budgets import Budgets, crossings, over_budget_problem, standing
from gpu_assist.team.watch import build_digest, digest_due, idle_alerts

NOW = dt.datetime(2026, 12, 3, 9, 0, tzinfo=dt.timezone.utc)


def launch(request_id, *, state="running", hours_ago=5, ttl_h=72, hourly="21.957642", requester="slack:U-CAROL",
           instance="i-0abc000000000001", estimate=None, project=None):
    started = NOW - dt.timedelta(hours=hours_ago)
    spec = LaunchSpec(
        request_id=request_id, requester=requester, text=f"launch 8xA100-40GB {ttl_h}h", gpu="A100-40GB", gpus=8,
        instance_type="p4d.24xlarge", instances=1, vcpus=96, region="us-east-1", zone="", pricing_model="on-demand",
        duration_s=ttl_h * 3600, hourly=Decimal(hourly), ceiling_hourly=Decimal(hourly),
        estimated_total=Decimal(hourly) * ttl_h, currency="USD", candidates=(), price_source="skypilot-aws 2026-12-01",
        project=project)
    return RequestRecord(
        id=request_id, kind="launch", requester=requester, spec=spec,
        estimated_cost=estimate if estimate is not None else Decimal(hourly) * ttl_h, currency="USD", state=state,
        created_at=started, expires_at=started + dt.timedelta(days=1), approver="slack:U-BOB", decided_at=started,
        instance_ids=(instance,) if state != "pending" else (), ends_at=started + dt.timedelta(hours=ttl_h)
        if state != "pending" else None, error=None, version=3, hourly_price=Decimal(hourly),
        launched_at=started if state != "pending" else None, stopped_at=None)


def usage(instance, request_id, utilization, idle):
    return InstanceUsage(instance_id=instance, instance_type="p4d.24xlarge", region="us-east-1", zone="us-east-1a",
                         lifecycle="on-demand", request_id=request_id, gpus_reporting=8,
                         gpu_utilization_avg_pct=utilization, gpu_memory_used_avg_mib=100.0, coverage=1.0, idle=idle,
                         hourly_cost=Decimal("21.96"), currency="USD")


def test_only_idle_instances_gpu_assist_runs_get_an_alert_and_busy_ones_end_their_idle_period():
    records = [launch("r-000000000001"), launch("r-000000000002", instance="i-0abc000000000002")]
    report = FleetReport("us-east-1", 3600, 10.0, (
        usage("i-0abc000000000001", "r-000000000001", 1.5, True),
        usage("i-0abc000000000002", "r-000000000002", 85.0, False),
        usage("i-0fff000000000009", None, 0.0, True)))  # not launched by gpu-assist
    alerts, busy = idle_alerts(report, records, NOW)
    assert [a.instance_id for a in alerts] == ["i-0abc000000000001"] and busy == ["idle:i-0abc000000000002"]
    (alert,) = alerts
    assert alert.key == "idle:i-0abc000000000001" and alert.cost_so_far == 5 * Decimal("21.957642")
    text = idle_alert(alert)
    assert "1.5% GPU use over the last 1h" in text and "cost $109.79 so far" in text and "$21.96 per hour" in text


def test_budget_standing_over_budget_needs_the_over_budget_approvers_and_crossings_come_once_each():
    budgets = Budgets({"*": Decimal(2000), "llm": Decimal(500)}, "USD", "escalate", frozenset({"slack:U-CFO"}))
    running = launch("r-000000000001", project="llm", hours_ago=20)
    request = launch("r-000000000003", state="pending", project="llm", estimate=Decimal(900))
    rows = standing(budgets, [running], NOW, request=request)
    assert [r.name for r in rows] == ["llm", "*"]
    llm = rows[0]
    assert llm.month_to_date == 20 * Decimal("21.957642") and llm.over
    assert "OVER BUDGET by" in budget_line(llm)
    assert over_budget_problem(budgets, rows, "slack:U-BOB").endswith("only an over-budget approver may approve it")
    assert over_budget_problem(budgets, rows, "slack:U-CFO") is None
    refusing = Budgets(budgets.monthly, "USD", "refuse")
    assert "refuses over-budget requests" in over_budget_problem(refusing, rows, "slack:U-CFO")
    assert [t for _, t in crossings(llm, NOW)] == [50, 80]  # 439/500 = 88 % month to date
    assert crossings(llm, NOW)[0][0] == "budget:llm:2026-12:50"


def test_the_digest_lists_running_owners_spend_idle_ttls_ending_and_waiting_requests():
    from gpu_assist.lifecycle.records import describe

    budgets = Budgets({"*": Decimal(20000)}, "USD")
    records = [launch("r-000000000001", hours_ago=30), launch("r-000000000002", hours_ago=60, ttl_h=72,
                                                               requester="slack:U-DAN", instance="i-0abc000000000002")]
    pending = [launch("r-000000000003", state="pending")]
    digest = build_digest(records, pending, NOW, currency="USD", budgets=tuple(standing(budgets, records, NOW)),
                          idle_requests={"r-000000000001"}, describe=describe)
    hourly = Decimal("21.957642")
    assert digest.yesterday == (21 + 24) * hourly  # the first started at 03:00 on the 2nd
    assert digest.month_to_date == (30 + 57) * hourly  # the second since 1 December 00:00
    text = render_digest(digest)
    assert "r-000000000001 p4d.24xlarge by slack:U-CAROL" in text and "IDLE" in text
    assert "TTL ends in the next 24 h: r-000000000002 at 21:00 UTC" in text
    assert "waiting for approval (1):" in text and "r-000000000003 [pending]" in text
    assert all(len(line) <= 100 for line in text.splitlines())
    assert digest_due(9, NOW) == "digest:2026-12-03" and digest_due(10, NOW) is None and digest_due(None, NOW) is None


def test_the_approval_card_shows_the_teams_month_without_any_budget():
    from gpu_assist.team.standing import team_standing
    from slackbot.blocks import approval_card

    records = [launch("r-000000000001", hours_ago=10, project="llm"),
               launch("r-000000000002", hours_ago=30, ttl_h=72, instance="i-0abc000000000002")]
    pending = [launch("r-000000000003", state="pending")]
    team = team_standing(records, pending, NOW, currency="USD", idle_instances=1)
    hourly = Decimal("21.957642")
    assert team.month_to_date == {"llm": 10 * hourly, "(none)": 30 * hourly} and team.hourly == 2 * hourly
    assert team.total_committed == (62 + 42) * hourly and team.pending == {"launch": 1} and not team.budgets
    card = approval_card(pending[0], team=team)
    lines = [element["text"] for block in card if block["type"] == "context" for element in block["elements"]]
    assert "Team this month: $878.31 spent + $2,283.59 committed to TTLs · 2 launches running at $43.92/h" in lines
    assert not any("Team this month" in line for block in approval_card(pending[0], decided="Approved", team=team)
                   if block["type"] == "context" for line in [block["elements"][0]["text"]])
