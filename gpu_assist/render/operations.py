"""What gpu-assist runs and what it costs, as terminal text and JSON: the GPUs in front of you, the team's fleet,
requests, spend and commitments. Registered on `text.render` and `json.payload` for their result types; a face
imports this module with the verbs that produce them, so a quote imports none of their modules. Text is 100
columns, each long line folded under its own start.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from decimal import Decimal
from typing import Any, Sequence

from ..clouds.fleet import FleetReport
from ..commands.objects import RequestDetail
from ..facts import LaunchCloud
from ..host.nvml import IDLE_BELOW_PCT, Snapshot, idle_gpus
from ..lifecycle.records import AuditEvent, RequestRecord, describe
from ..lifecycle.specs import Checks, ExtendSpec, LaunchSpec, to_json
from ..plural import plural
from ..pricing.query import format_duration
from ..team.budgets import BudgetStatus
from ..team.commitments import CommitmentAdvice
from ..team.spending import SpendReport
from . import json
from .commit import commitment_rows, render_commitments
from .comparison import wrap
from .json import iso_dates, plain
from .money import format_money, format_rate, round_money
from .notes import words
from .sharing import sharing_line, sharing_payload
from .spend import budget_line, render_spend
from .tables import table, text_table
from .text import render


def _cents(amount: Decimal | None) -> float | None:
    return round_money(amount, 2)


def _number(value: float | None, unit: str = "", places: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{places}f}{unit}"


@render.register(Snapshot)
def render_snapshot(snapshot: Snapshot, **_options: Any) -> str:
    if not snapshot.gpus:
        return f"no GPUs: {snapshot.reason}"
    rows, processes = [], []
    for gpu in snapshot.gpus:
        memory = "n/a" if gpu.memory_used_mib is None else \
            f"{gpu.memory_used_mib / 1024:,.1f}/{(gpu.memory_total_mib or 0) / 1024:,.0f} GiB"
        power = "n/a" if gpu.power_w is None else \
            f"{gpu.power_w:,.0f}/{_number(gpu.power_limit_w)} W"
        rows.append([str(gpu.index), gpu.name or "?", _number(gpu.utilization_gpu_pct, "%"), memory,
                     _number(gpu.temperature_c, "°C"), power, _number(gpu.sm_clock_mhz, " MHz"),
                     str(len(gpu.processes)), "; ".join(gpu.errors)])
        for p in gpu.processes:
            processes.append([str(gpu.index), str(p.pid), p.name or "(hidden)",
                              _number(None if p.used_memory_mib is None else p.used_memory_mib / 1024, " GiB", 1)])
    lines = [f"{plural(len(snapshot.gpus), 'GPU')} (driver {snapshot.driver_version or '?'})",
             table(["#", "GPU", "util", "memory", "temp", "power", "SM clock", "procs", "errors"], rows,
                   right={0, 2, 4, 6, 7})]
    if processes:
        lines.append(table(["GPU", "pid", "process", "GPU memory"], processes, right={1, 3}))
    idle = idle_gpus([snapshot])
    if idle:
        which = f"GPU {idle[0]}" if len(idle) == 1 else f"GPUs {', '.join(map(str, idle))}"
        lines.append(f"idle now: {which} (below {IDLE_BELOW_PCT:g}% use, no process on "
                     f"{'it' if len(idle) == 1 else 'them'})")
    lines += [f"error: {e}" for e in snapshot.errors]
    return "\n".join(lines)


@render.register(FleetReport)
def render_fleet(report: FleetReport, **_options: Any) -> str:
    window = format_duration(report.window_s)
    if not report.instances:
        return f"no running gpu-assist instances in {report.region}"
    rows = []
    for i in report.instances:
        use = _number(i.gpu_utilization_avg_pct, "%", 1) + (" IDLE" if i.idle else "")
        rows.append([i.instance_id, i.instance_type, i.zone, i.lifecycle, str(i.gpus_reporting), use,
                     "" if i.hourly_cost is None else format_money(i.hourly_cost, i.currency), i.request_id or ""])
    lines = [f"{plural(len(report.instances), 'GPU instance')} in {report.region}, GPU use averaged over {window}",
             text_table(["instance", "type", "zone", "market", "GPUs", "avg util", "per hour", "request"], rows,
                        right={4, 5, 6})]

    for i in report.instances:  # beside the table: a note or an advice is longer than any column should be
        if i.note:
            lines += wrap(f"{i.instance_id}: {i.note}")
        if i.sharing:
            lines += wrap(f"{i.instance_id} could share: {sharing_line(i.sharing, i.currency)}")
    if report.idle:
        currency = report.idle[0].currency
        lines += wrap(f"{len(report.idle)} idle (< {report.threshold_pct:g}% for {window}): "
                      f"{format_money(report.wasted_per_hour, currency)}/hour wasted. Stop with: "
                      + ", ".join(f"stop {i.instance_id}" for i in report.idle))
    return "\n".join(lines)


def render_request(record: RequestRecord, trail: Sequence[AuditEvent] = ()) -> str:
    """A request with its checks and audit trail, each line folded to the width (a dry run's error names an
    SSM parameter; an audit detail may be long)."""
    lines = [describe(record)]
    spec = record.spec
    if isinstance(spec, LaunchSpec):
        lines.append(f"  {format_rate(spec.hourly, record.currency)}/h per instance (ceiling "
                     f"{format_money(spec.ceiling_hourly, record.currency)}/h), price from {spec.price_source}")
        lines += [f"  project {spec.project}"] if spec.project else []
        if spec.provider != "aws" or spec.account:  # which cloud and account, and a stale price's warning
            lines += [f"  cloud: {words(LaunchCloud(spec.provider, spec.account))}"]
            lines += [f"  {words(note)}" for note in spec.price_notes]
        checks = spec.checks or Checks("?", "?")
        lines += [f"  dry run: {checks.dry_run}", f"  quota: {checks.quota}"]
    elif isinstance(spec, ExtendSpec):
        lines.append(f"  {spec.launch_request} was to stop {spec.launch_ends_at:%Y-%m-%d %H:%M} UTC; "
                     f"{format_money(spec.hourly, record.currency)}/h for all its instances")
    lines.append(f"  created {record.created_at:%Y-%m-%d %H:%M} UTC, expires {record.expires_at:%Y-%m-%d %H:%M} UTC")
    if record.approver:
        lines.append(f"  decided by {record.approver} at {record.decided_at:%Y-%m-%d %H:%M} UTC")
    if record.instance_ids:
        ends = f", ends {record.ends_at:%Y-%m-%d %H:%M} UTC" if record.ends_at else ""
        lines.append(f"  instances: {', '.join(record.instance_ids)}{ends}")
    if record.error:
        lines.append(f"  error: {record.error}")
    if trail:
        lines.append("  audit:")
        for event in trail:
            change = f" {event.from_state or '-'}→{event.to_state}" if event.from_state != event.to_state else ""
            detail = f": {event.detail}" if event.detail else ""
            lines.append(f"    {event.at:%Y-%m-%d %H:%M:%S} {event.actor} {event.action} {event.outcome}"
                         f"{change}{detail}")
    # a folded line goes on indented under its own start; the headline's under the detail lines
    return "\n".join(folded for line in lines
                     for folded in wrap(line, " " * ((len(line) - len(line.lstrip())) or 2) + "  "))


@render.register(RequestRecord)
def _request(result: RequestRecord, **_options: Any) -> str:
    return render_request(result)


@render.register(RequestDetail)
def _request_detail(result: RequestDetail, **_options: Any) -> str:
    return render_request(result.record, result.trail)


@render.register(tuple)
def _requests(result: tuple[RequestRecord, ...], **_options: Any) -> str:
    """`requests`: recent requests, one each (folded to the width)."""
    if not all(isinstance(r, RequestRecord) for r in result):
        raise TypeError("no text renderer for a tuple of anything but requests")

    return "\n".join(line for r in result for line in wrap(describe(r), "    ")) if result else "no requests"


@render.register(CommitmentAdvice)
def _commitments(result: CommitmentAdvice, **_options: Any) -> str:
    return render_commitments(result)


@render.register(SpendReport)
def _spend(result: SpendReport, **_options: Any) -> str:
    return render_spend(result)


def request(record: RequestRecord) -> dict[str, Any]:
    """A request with its spec as the store holds it (money as decimal strings, as it always was)."""
    return {**plain(iso_dates(asdict(record))), "spec": to_json(record.spec)}


@json.payload.register(CommitmentAdvice)
def commitments_payload(advice: CommitmentAdvice) -> dict[str, Any]:
    return {"currency": advice.currency, "months": [m.isoformat() for m in advice.months],
            "usage": [{"provider": g.provider, "instance_type": g.instance_type, "region": g.region,
                       "months": [{"month": m.month.isoformat(), "instance_hours": float(m.hours),
                                   "paid": round_money(m.paid, 2)} for m in g.months]} for g in advice.groups],
            "candidates": commitment_rows(advice), "notices": [words(n) for n in advice.notices]}


@json.payload.register(SpendReport)
def spend_payload(report: SpendReport) -> dict[str, Any]:
    """A spend report: money as numbers rounded to the cent, times as ISO 8601."""
    return {
        "period": {"label": report.period.label, "start": report.period.start.isoformat(),
                   "end": report.period.end.isoformat()},
        "currency": report.currency, "total": _cents(report.total), "committed": _cents(report.committed),
        "launches": [{**plain(asdict(launch)), "hourly": round_money(launch.hourly, 6), "hours": float(launch.hours),
                      "cost": _cents(launch.cost), "projected": _cents(launch.projected),
                      "committed": _cents(launch.committed)} for launch in report.launches],
        "groups": {group: {key: _cents(cost) for key, cost in totals.items()}
                   for group, totals in report.groups.items() if not report.by or group == report.by},
        "daily": [{"day": day.isoformat(), "cost": _cents(cost)} for day, cost in report.daily],
        "budgets": [budget(b) for b in report.budgets],
        "actual": None if report.actual is None else {
            **report.actual, "total": _cents(report.actual["total"]),
            "by_tag": {k: _cents(v) for k, v in report.actual["by_tag"].items()}},
        "notes": list(report.notes),
    }


def budget(status: BudgetStatus) -> dict[str, Any]:
    """Where a budget stands, money rounded to the cent: spent this month, committed by running launches, the
    `estimate` of the request being decided (0 in a spend report), what is left, and the line every face shows."""
    return {"name": status.name, "amount": _cents(status.amount), "currency": status.currency,
            "month_to_date": _cents(status.month_to_date), "committed": _cents(status.committed),
            "estimate": _cents(status.estimate), "remaining": _cents(status.remaining), "over": status.over,
            "line": budget_line(status)}


@json.payload.register(RequestRecord)
def request_payload(result: RequestRecord) -> Any:
    return request(result)


@json.payload.register(RequestDetail)
def request_detail_payload(result: RequestDetail) -> Any:
    detail = request(result.record)
    detail["audit"] = [plain(iso_dates(asdict(e))) for e in result.trail]
    return detail


@json.payload.register(tuple)
def requests_payload(result: tuple[RequestRecord, ...]) -> Any:
    if not all(isinstance(r, RequestRecord) for r in result):
        raise TypeError("no JSON renderer for a tuple of anything but requests")
    return [request(r) for r in result]


@json.payload.register(Snapshot)
def snapshot_payload(result: Snapshot) -> Any:
    return plain(result.to_dict())


@json.payload.register(FleetReport)
def fleet_payload(result: FleetReport) -> Any:
    report = plain(asdict(replace(result, instances=tuple(replace(i, sharing=None) for i in result.instances))))
    for usage, instance in zip(result.instances, report["instances"]):
        instance["sharing"] = sharing_payload(usage.sharing) if usage.sharing else None
    report["idle"] = [i.instance_id for i in result.idle]
    report["wasted_per_hour"] = round_money(result.wasted_per_hour, 4)
    return report
