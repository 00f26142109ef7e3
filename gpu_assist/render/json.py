"""JSON for the CLI's `--format json` and the REST routes: plain numbers, rounded here."""

from __future__ import annotations

import json
from dataclasses import asdict

from ..pricing import Quote
from .money import round_money

_PLACES = {"hourly": 6, "total": 2, "per_gpu_hour": 6, "billed_hours": 4, "savings_vs_on_demand": 4}


def quote_options(result) -> list[dict]:
    """The flat list of options, each with `group`: the key (`provider/instance_type`) of the comparison row
    that shows it, so a tool can rebuild the comparison. A comparison gives the options of the rows it shows."""
    from ..compare import Comparison, compare

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
        item["notes"] = list(item["notes"])
        items.append(item)
    return items


def quote_answer(result) -> dict:
    """The options with what the reader must know: notices, and why there are none when there are none
    (the REST answer; the CLI's `--format json` is the bare option list, with the reason on stderr)."""
    quote = getattr(result, "quote", result)
    return {"request": quote.request.describe(), "currency": quote.currency, "options": quote_options(result),
            "notices": list(quote.notices), "empty_reason": quote.empty_reason}


def _plain(value):
    """Decimals as rounded numbers, tuples as lists, dataclasses as dicts, for json.dumps."""
    from decimal import Decimal

    if isinstance(value, Decimal):
        return round_money(value, 6)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _dates(item: dict) -> dict:
    import datetime as dt

    return {k: v.isoformat() if isinstance(v, dt.datetime) else v for k, v in item.items()}


def request(record):
    """A request with its spec as the store holds it (money as decimal strings, as it always was)."""
    from ..specs import to_json

    return {**_plain(_dates(asdict(record))), "spec": to_json(record.spec)}


def recommendation(result) -> dict:
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
        "reasoning": list(result.reasoning),
        "assumptions": assumptions,
    }


def tco(result) -> dict:
    item = _plain(asdict(result))
    item["break_even_utilisation"] = round_money(result.break_even_utilisation, 4)
    item["cheaper"] = result.cheaper
    return item


def spend(report) -> dict:
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
        "budgets": [{"name": b.name, "amount": cents(b.amount), "currency": b.currency,
                     "month_to_date": cents(b.month_to_date), "committed": cents(b.committed),
                     "remaining": cents(b.remaining), "over": b.over} for b in report.budgets],
        "actual": None if report.actual is None else {
            **report.actual, "total": cents(report.actual["total"]),
            "by_tag": {k: cents(v) for k, v in report.actual["by_tag"].items()}},
        "notes": list(report.notes),
    }


def render(result, **_options) -> str:
    """Any command result as JSON text."""
    from ..commands import HelpCommand
    from ..fleet import FleetReport
    from ..recommend import Recommendation
    from ..tco import TcoResult
    from ..utilization import Snapshot

    from ..commands import RequestDetail
    from ..records import RequestRecord

    if isinstance(result, RequestRecord):
        payload = request(result)
    elif isinstance(result, RequestDetail):
        payload = request(result.record)
        payload["audit"] = [_plain(_dates(asdict(e))) for e in result.trail]
    elif isinstance(result, tuple) and all(isinstance(r, RequestRecord) for r in result):
        payload = [request(r) for r in result]
    elif type(result).__name__ == "SpendReport":
        payload = spend(result)
    elif isinstance(result, Snapshot):
        payload = _plain(result.to_dict())
    elif isinstance(result, FleetReport):
        payload = _plain(asdict(result))
        payload["idle"] = [i.instance_id for i in result.idle]
        payload["wasted_per_hour"] = round_money(result.wasted_per_hour, 4)
    elif isinstance(result, Quote) or type(result).__name__ == "Comparison":
        payload = quote_options(result)
    elif isinstance(result, Recommendation):
        payload = recommendation(result)
    elif isinstance(result, TcoResult):
        payload = tco(result)
    elif isinstance(result, HelpCommand):
        payload = {"help": result.text}
    else:
        raise TypeError(f"no JSON renderer for {type(result).__name__}")
    return json.dumps(payload, ensure_ascii=False, indent=2)
