"""JSON for the CLI's `--format json` and the REST routes: plain numbers, rounded here.

`render` picks the payload for the result's type (`functools.singledispatch` over `payload`); the types of other
verbs than quote are registered by name (`dispatch.register_by_name`), so a quote does not import their modules.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, replace
from decimal import Decimal
from functools import singledispatch
from typing import TYPE_CHECKING, Any

from ..commands.objects import HelpCommand, RequestDetail
from ..compare import Comparison, ComparisonRow, compare
from ..facts import Fact
from ..pricing import Quote
from .dispatch import register_by_name, registered_for
from .money import round_money
from .notes import words
from .sharing import sharing_payload

if TYPE_CHECKING:
    from ..budgets import BudgetStatus
    from ..fleet import FleetReport
    from ..recommendation import Recommendation
    from ..records import RequestRecord
    from ..spending import SpendReport
    from ..tco import TcoResult
    from ..nvml import Snapshot

_PLACES = {"hourly": 6, "total": 2, "per_gpu_hour": 6, "billed_hours": 4, "savings_vs_on_demand": 4}


def render(result: object, **_options: Any) -> str:
    """Any command result as JSON text."""
    return json.dumps(payload(result), ensure_ascii=False, indent=2)


@singledispatch
def payload(result: object) -> Any:
    """A command result as plain JSON values."""
    if registered_for(payload, type(result)):
        return payload(result)
    raise TypeError(f"no JSON renderer for {type(result).__name__}")


@payload.register(Quote)
@payload.register(Comparison)
def quote_options(result: Quote | Comparison) -> list[dict[str, Any]]:
    """The flat list of options, each with `group`: the key (`provider/instance_type`) of the comparison row
    that shows it, so a tool can rebuild the comparison. A comparison gives the options of the rows it shows."""
    comparison = result if isinstance(result, Comparison) else compare(result)
    options = result.options if isinstance(result, Quote) else [
        o for o in result.quote.options
        if comparison.group_of(o) in {r.key for r in comparison.rows + comparison.untrusted}]
    items = []
    for option in options:
        item = option.to_dict()
        item["group"] = comparison.group_of(option)
        for key, places in _PLACES.items():
            item[key] = round_money(item[key], places)
        item["notes"] = [words(note) for note in option.notes]
        item.pop("parts", None)
        if option.parts is not None:
            item.update(whole_parts(option))
        items.append(item)
    return items


def whole_parts(option: Any) -> dict[str, Any]:
    """The whole bill's fields (#33), only where job data was asked for: `total` stays the GPUs' total;
    `storage_total`/`transfer_total` are null when a source is missing; `job_total` is GPUs + the known parts."""
    parts = option.parts
    return {"storage_total": round_money(parts.part("storage"), 2) if parts.part("storage") is not None else None,
            "transfer_total": round_money(parts.part("transfer"), 2) if parts.part("transfer") is not None else None,
            "job_total": round_money(option.whole, 2), "parts_known": parts.complete,
            "parts": [words(cost) for cost in parts.costs]}


def quote_answer(result: Quote | Comparison) -> dict[str, Any]:
    """The options with what the reader must know: notices, and why there are none when there are none
    (the REST answer; the CLI's `--format json` is the bare option list, with the reason on stderr)."""
    quote = result.quote if isinstance(result, Comparison) else result
    return {"request": quote.request.describe(), "currency": quote.currency, "options": quote_options(result),
            "notices": [words(notice) for notice in quote.notices],
            "empty_reason": words(quote.empty_reason) if quote.empty_reason else None}


def comparison_answer(result: Comparison) -> dict[str, Any]:
    """The comparison as the CLI's table lays it out (`render/comparison.layout`), for a client that draws it:
    the title, the pricing-model columns, rows with each model's total for the job (null: not offered), the
    cheapest model and where that price is, the notes with their footnote markers, and the legend. Ranked rows
    carry their rank; unverified or stale ones come apart, as in every other face."""
    from .comparison import layout, said, shared_notes

    laid, (shared, everywhere) = layout(result), shared_notes(result)
    footnotes: dict[str, str] = {}

    def row_of(row: ComparisonRow, line: tuple[str, ...]) -> dict[str, Any]:
        shared_here = shared if row.ranked or everywhere else ()
        markers = [mark for mark in line[-1].split(",") if mark]
        footnotes.update(zip(markers, [note for note in said(row) if note not in shared_here]))
        best = row.best
        return {"rank": int(line[0]) if row.ranked else None, "key": row.key, "provider": row.provider,
                "instance_type": row.instance_type, "instances": row.instances, "where": best.zone or best.region,
                "totals": {model: round_money(cell.whole, 2) if (cell := row.cell(model)) else None
                           for model in result.columns},
                **({"data_parts": whole_parts(best)} if best.parts is not None else {}),
                "best": best.pricing_model, "verified": row.trusted, "notes": list(said(row)), "markers": markers}

    rows = [row_of(row, line) for row, line in zip(result.rows, laid.rows)]
    untrusted = [row_of(row, line) for row, line in zip(result.untrusted, laid.untrusted)]
    return {"request": result.request.describe(), "currency": result.currency, "title": laid.title,
            "columns": list(result.columns), "rows": rows, "untrusted": untrusted, "more": result.more,
            "footnotes": footnotes, "legend": list(laid.legend), "notices": list(laid.notices),
            "empty_reason": words(result.quote.empty_reason) if result.quote.empty_reason else None}


def _plain(value: Any) -> Any:
    """Decimals as rounded numbers, tuples as lists, dataclasses as dicts, facts in words, for json.dumps."""
    if isinstance(value, Fact):
        return words(value)
    if isinstance(value, Decimal):
        return round_money(value, 6)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _dates(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, dt.datetime) else v for k, v in item.items()}


def request(record: RequestRecord) -> dict[str, Any]:
    """A request with its spec as the store holds it (money as decimal strings, as it always was)."""
    from ..specs import to_json

    return {**_plain(_dates(asdict(record))), "spec": to_json(record.spec)}


@register_by_name(payload, "gpu_assist.recommendation.Recommendation")
def recommendation(result: Recommendation) -> dict[str, Any]:
    assumptions = list(result.assumptions)
    plans = []
    for plan in result.plans:
        item = _plain(plan.to_dict())
        item["total"] = round_money(plan.total, 2)
        item["assumptions"] = assumptions
        plans.append(item)
    return {
        "workload": _plain(asdict(result.workload)),
        "currency": result.currency,
        "memory_bytes": _plain(result.memory.parts),
        "plans": plans,
        "rejected": [_plain(p.to_dict()) for p in result.rejected],
        "not_planned": list(result.not_planned),
        "reasoning": list(result.reasoning),
        "assumptions": assumptions,
    }


@register_by_name(payload, "gpu_assist.tco.TcoResult")
def tco(result: TcoResult) -> dict[str, Any]:
    item = _plain(asdict(result))
    item["break_even_utilisation"] = round_money(result.break_even_utilisation, 4)
    item["cheaper"] = result.cheaper
    return item


@register_by_name(payload, "gpu_assist.commitments.CommitmentAdvice")
def _commitments(advice: Any) -> dict[str, Any]:
    from .commit import commitment_rows

    return {"currency": advice.currency, "months": [m.isoformat() for m in advice.months],
            "usage": [{"provider": g.provider, "instance_type": g.instance_type, "region": g.region,
                       "months": [{"month": m.month.isoformat(), "instance_hours": float(m.hours),
                                   "paid": round_money(m.paid, 2)} for m in g.months]} for g in advice.groups],
            "candidates": commitment_rows(advice), "notices": [words(n) for n in advice.notices]}


@register_by_name(payload, "gpu_assist.spending.SpendReport")
def spend(report: SpendReport) -> dict[str, Any]:
    """A spend report: money as numbers rounded to the cent, times as ISO 8601."""
    cents = lambda amount: round_money(amount, 2)  # noqa: E731
    return {
        "period": {"label": report.period.label, "start": report.period.start.isoformat(),
                   "end": report.period.end.isoformat()},
        "currency": report.currency, "total": cents(report.total), "committed": cents(report.committed),
        "launches": [{**_plain(asdict(launch)), "hourly": round_money(launch.hourly, 6), "hours": float(launch.hours),
                      "cost": cents(launch.cost), "projected": cents(launch.projected),
                      "committed": cents(launch.committed)} for launch in report.launches],
        "groups": {group: {key: cents(cost) for key, cost in totals.items()}
                   for group, totals in report.groups.items() if not report.by or group == report.by},
        "daily": [{"day": day.isoformat(), "cost": cents(cost)} for day, cost in report.daily],
        "budgets": [budget(b) for b in report.budgets],
        "actual": None if report.actual is None else {
            **report.actual, "total": cents(report.actual["total"]),
            "by_tag": {k: cents(v) for k, v in report.actual["by_tag"].items()}},
        "notes": list(report.notes),
    }


def budget(status: BudgetStatus) -> dict[str, Any]:
    """Where a budget stands, money rounded to the cent: spent this month, committed by running launches, the
    `estimate` of the request being decided (0 in a spend report), what is left, and the line every face shows."""
    from .spend import budget_line

    cents = lambda amount: round_money(amount, 2)  # noqa: E731
    return {"name": status.name, "amount": cents(status.amount), "currency": status.currency,
            "month_to_date": cents(status.month_to_date), "committed": cents(status.committed),
            "estimate": cents(status.estimate), "remaining": cents(status.remaining), "over": status.over,
            "line": budget_line(status)}


@register_by_name(payload, "gpu_assist.records.RequestRecord")
def _request(result: RequestRecord) -> Any:
    return request(result)


@payload.register(RequestDetail)
def _request_detail(result: RequestDetail) -> Any:
    detail = request(result.record)
    detail["audit"] = [_plain(_dates(asdict(e))) for e in result.trail]
    return detail


@payload.register(tuple)
def _requests(result: tuple[RequestRecord, ...]) -> Any:
    from ..records import RequestRecord

    if not all(isinstance(r, RequestRecord) for r in result):
        raise TypeError("no JSON renderer for a tuple of anything but requests")
    return [request(r) for r in result]


@register_by_name(payload, "gpu_assist.nvml.Snapshot")
def _snapshot(result: Snapshot) -> Any:
    return _plain(result.to_dict())


@register_by_name(payload, "gpu_assist.fleet.FleetReport")
def _fleet(result: FleetReport) -> Any:
    report = _plain(asdict(replace(result, instances=tuple(replace(i, sharing=None) for i in result.instances))))
    for usage, instance in zip(result.instances, report["instances"]):
        instance["sharing"] = sharing_payload(usage.sharing) if usage.sharing else None
    report["idle"] = [i.instance_id for i in result.idle]
    report["wasted_per_hour"] = round_money(result.wasted_per_hour, 4)
    return report


@payload.register(HelpCommand)
def _help(result: HelpCommand) -> Any:
    return {"help": result.text}
