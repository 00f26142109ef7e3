"""Text for what gpu-assist runs and what it costs: the GPUs in front of you, the team's fleet, requests and spend.

Registered on `text.render` like the other results (by name, so a quote imports none of their modules); 100
columns, each long line folded under its own start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..commands.objects import RequestDetail
from ..plural import plural
from ..request import format_duration
from .dispatch import register_by_name
from .money import format_money, format_rate
from .sharing import sharing_line
from .tables import table, text_table
from .text import render

if TYPE_CHECKING:
    from ..fleet import FleetReport
    from ..nvml import Snapshot
    from ..records import RequestRecord
    from ..spending import SpendReport


def _number(value, unit: str = "", places: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{places}f}{unit}"


@register_by_name(render, "gpu_assist.nvml.Snapshot")
def render_snapshot(snapshot: Snapshot, **_options: Any) -> str:
    from ..nvml import IDLE_BELOW_PCT, idle_gpus

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


@register_by_name(render, "gpu_assist.fleet.FleetReport")
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
    from .comparison import wrap

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


def render_request(record, trail=()) -> str:
    """A request with its checks and audit trail, each line folded to 100 columns (a dry run's error names an
    SSM parameter; an audit detail may be long)."""
    from ..records import describe
    from ..specs import Checks, ExtendSpec, LaunchSpec
    from .comparison import wrap

    lines = [describe(record)]
    spec = record.spec
    if isinstance(spec, LaunchSpec):
        lines.append(f"  {format_rate(spec.hourly, record.currency)}/h per instance (ceiling "
                     f"{format_money(spec.ceiling_hourly, record.currency)}/h), price from {spec.price_source}")
        lines += [f"  project {spec.project}"] if spec.project else []
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


@register_by_name(render, "gpu_assist.records.RequestRecord")
def _request(result: RequestRecord, **_options: Any) -> str:
    return render_request(result)


@render.register(RequestDetail)
def _request_detail(result: RequestDetail, **_options: Any) -> str:
    return render_request(result.record, result.trail)


@render.register(tuple)
def _requests(result: tuple[RequestRecord, ...], **_options: Any) -> str:
    """`requests`: recent requests, one each (folded to 100 columns)."""
    from ..records import RequestRecord, describe

    if not all(isinstance(r, RequestRecord) for r in result):
        raise TypeError("no text renderer for a tuple of anything but requests")
    from .comparison import wrap

    return "\n".join(line for r in result for line in wrap(describe(r), "    ")) if result else "no requests"


@register_by_name(render, "gpu_assist.commitments.CommitmentAdvice")
def _commitments(result: Any, **_options: Any) -> str:
    from .commit import render_commitments

    return render_commitments(result)


@register_by_name(render, "gpu_assist.spending.SpendReport")
def _spend(result: SpendReport, **_options: Any) -> str:
    from .spend import render_spend

    return render_spend(result)
