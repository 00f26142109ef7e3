"""Spend, budgets, idle alerts and the daily digest as text: the words every face shows (Slack wraps them in
blocks, the notebook in HTML), so the numbers read the same everywhere."""

from __future__ import annotations

import textwrap
from decimal import Decimal
from functools import partial

from ..plural import plural
from ..team.budgets import BudgetStatus
from ..team.interruptions import Interruption
from ..team.spending import SpendReport
from ..team.standing import TeamStanding
from ..team.watch import Digest, IdleAlert
from .money import format_hours, format_money, format_percent
from .sharing import sharing_line
from .tables import table, width

GROUP_TITLES = {"requester": "by requester", "project": "by project", "instance-type": "by instance type",
                "pricing": "by pricing model"}


def _table(headers: list[str], rows: list[list[str]], right: set[int]) -> str:
    return table(headers, rows, right)


def budget_line(status: BudgetStatus) -> str:
    """`budget llm: $1,200.00 spent + $300.00 committed + $400.00 this request of $2,000.00: $100.00 left`."""
    money = partial(format_money, currency=status.currency)
    parts = [f"{money(status.month_to_date)} spent", f"{money(status.committed)} committed"]
    if status.estimate:
        parts.append(f"{money(status.estimate)} this request")
    left = f"{money(status.remaining)} left" if not status.over else f"OVER BUDGET by {money(-status.remaining)}"
    name = "team" if status.name == "*" else status.name
    return f"budget {name} {money(status.amount)}/month: " + " + ".join(parts) + f"; {left}"


def team_line(team: TeamStanding) -> str:
    """`Team this month: $1,200.00 spent + $300.00 committed to TTLs · 2 launches running at $65.87/h`: the
    team's month beside every decision, also where the policy sets no budget."""
    money = partial(format_money, currency=team.currency)
    line = (f"Team this month: {money(team.total_month_to_date)} spent + {money(team.total_committed)} committed "
            f"to TTLs · {plural(len(team.running), 'launch', 'launches')} running")
    if team.running:
        line += f" at {money(team.hourly)}/h"
    return line


def _wrapped(line: str, indent: str = "  ") -> list[str]:
    return textwrap.wrap(line, width(), initial_indent=indent, subsequent_indent=indent + "  ")


def render_spend(report: SpendReport) -> str:
    money = partial(format_money, currency=report.currency)
    lines = [f"gpu-assist spend, {report.period.label}: {money(report.total)} "
             f"({plural(len(report.launches), 'launch', 'launches')})",
             f"running launches have {money(report.committed)} more committed to their TTL"]
    if report.launches:
        rows = [[launch.request_id, launch.requester, launch.instance_type, launch.state, money(launch.hourly),
                 f"{launch.hours:.1f}", money(launch.cost), money(launch.projected)] for launch in report.launches]
        lines.append(_table(["request", "requester", "type", "state", "per hour", "hours", "cost", "to TTL"], rows,
                            {4, 5, 6, 7}))
    for group in ([report.by] if report.by else list(report.groups)):
        totals = report.groups.get(group, {})
        if totals and (report.by or len(totals) > 1 or group == "project"):
            lines.append(f"{GROUP_TITLES[group]}: " + ", ".join(f"{key} {money(cost)}" for key, cost in totals.items()))
    if report.actual is not None:
        lines.append(_actual(report))
    lines.extend(budget_line(status) for status in report.budgets)
    lines.extend(f"note: {note}" for note in report.notes)
    return "\n".join(lines)


def _actual(report: SpendReport) -> str:
    """Cost Explorer's cost beside ours (`spend … source=aws`): the report has one then."""
    actual = report.actual or {}
    if actual.get("note"):
        return f"Cost Explorer: {actual['note']}"
    ours = {launch.request_id: launch.cost for launch in report.launches}
    rows = [[key, format_money(ours.get(key, Decimal(0)), report.currency), format_money(cost, actual["currency"])]
            for key, cost in actual["by_tag"].items()]
    label = " (estimated)" if actual.get("estimated") else ""
    return f"Cost Explorer{label}, by tag {actual['tag']}: {format_money(actual['total'], actual['currency'])}\n" + \
        _table([actual["tag"], "gpu-assist", "Cost Explorer"], rows, {1, 2})


def idle_alert(alert: IdleAlert) -> str:
    """The message an idle instance gets in its request's thread."""
    use = "no" if alert.utilization_pct is None else f"{alert.utilization_pct:.1f}%"
    return (f"{alert.instance_id} ({alert.instance_type}, {alert.request_id} by {alert.requester}) has been idle: "
            f"{use} GPU use over the last {alert.window}. It has cost {format_money(alert.cost_so_far, alert.currency)}"
            f" so far and costs {format_money(alert.hourly, alert.currency)} per hour; its TTL ends "
            f"{alert.ends_at:%Y-%m-%d %H:%M} UTC." + (f" It could share: {sharing_line(alert.sharing, alert.currency)}."
                                                       if alert.sharing else ""))


def interruption_line(event: Interruption) -> str:
    """The post in a launch's thread when EC2 took one of its spot instances back."""
    what = "the launch has stopped" if event.all_gone else "the launch's other instances still run"
    return (f"{event.instance_id} ({event.instance_type} spot in {event.zone or 'its zone'}, {event.request_id} by "
            f"{event.requester}) was interrupted by EC2 ({event.reason}) after {format_hours(float(event.ran_hours))}; "
            f"{what}. It cost {format_money(event.cost_so_far, event.currency)} so far. Relaunch asks the approvers "
            f"for the same instance type again.")


def crossing_line(status: BudgetStatus, threshold: int) -> str:
    name = "the team budget" if status.name == "*" else f"budget {status.name}"
    return (f"{name} has reached {threshold}% this month: {format_money(status.month_to_date, status.currency)} of "
            f"{format_money(status.amount, status.currency)} ({format_percent(status.used_fraction)})")


def render_digest(digest: Digest) -> str:
    money = partial(format_money, currency=digest.currency)
    lines = [f"gpu-assist daily digest, {digest.day:%Y-%m-%d}",
             f"spend yesterday {money(digest.yesterday)}; month to date {money(digest.month_to_date)}"]
    for status in digest.budgets:
        lines.extend(_wrapped(budget_line(status)))
    lines.append(f"running ({len(digest.running)}):" if digest.running else "running: none")
    for row in digest.running:
        idle = " IDLE" if row.request_id in digest.idle else ""
        lines.append(f"  {row.request_id} {row.instance_type} by {row.requester}, {money(row.hourly)}/h, "
                     f"TTL ends {row.ends_at:%Y-%m-%d %H:%M} UTC{idle}")
    lines.append(("idle: " + ", ".join(sorted(digest.idle))) if digest.idle else "idle: none")
    lines.append(("TTL ends in the next 24 h: " + ", ".join(digest.ending)) if digest.ending
                 else "TTL ends in the next 24 h: none")
    lines.append(f"waiting for approval ({len(digest.waiting)}):" if digest.waiting else "waiting for approval: none")
    for line in digest.waiting:
        lines.extend(_wrapped(line))
    return "\n".join(lines)
