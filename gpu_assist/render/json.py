"""JSON for the CLI's `--format json` and the REST routes: plain numbers, rounded here.

`render` picks the payload for the result's type (`functools.singledispatch` over `payload`). Quotes are
registered here; the other verbs' results in `plans.py` and `operations.py`, which a face imports with the verb,
so a quote imports none of their modules.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from functools import singledispatch
from typing import Any

from ..commands.objects import HelpCommand
from ..facts import Fact
from ..pricing.compare import Comparison, ComparisonRow, compare
from ..pricing.quote import Quote
from .comparison import layout, said, shared_notes
from .money import round_money
from .notes import where, words

_PLACES = {"hourly": 6, "total": 2, "per_gpu_hour": 6, "billed_hours": 4, "savings_vs_on_demand": 4}


def render(result: object, **_options: Any) -> str:
    """Any command result as JSON text."""
    return json.dumps(payload(result), ensure_ascii=False, indent=2)


@singledispatch
def payload(result: object) -> Any:
    """A command result as plain JSON values."""
    raise TypeError(f"no JSON renderer for {type(result).__name__}")


@payload.register(Quote)
@payload.register(Comparison)
def quote_options(result: Quote | Comparison) -> list[dict[str, Any]]:
    """The flat list of options, each with `group`: the key (`provider/instance_type`) of the comparison row
    that shows it, so a tool can rebuild the comparison, and `rank`: that row's number in the text (null: not
    ranked). A comparison gives the options of the rows it shows, in its rows' order."""
    comparison = result if isinstance(result, Comparison) else compare(result)
    options = result.options if isinstance(result, Quote) else [
        o for o in result.quote.options
        if comparison.group_of(o) in {r.key for r in comparison.rows + comparison.untrusted}]
    items = []
    for option in options:
        item = option.to_dict()
        item["group"] = comparison.group_of(option)
        item["rank"] = comparison.rank_of(item["group"])
        for key, places in _PLACES.items():
            item[key] = round_money(item[key], places)
        item["notes"] = [words(note) for note in option.notes]
        item.pop("parts", None)
        if option.parts is not None:
            item.update(whole_parts(option))
        items.append(item)
    if isinstance(result, Quote):
        return items  # the flat list, in its own order (`list`)
    return sorted(items, key=lambda item: (item["rank"] is None, item["rank"] or 0))


def whole_parts(option: Any) -> dict[str, Any]:
    """The whole bill's fields, only where job data was asked for: `total` stays the GPUs' total;
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
    laid, (shared, everywhere) = layout(result), shared_notes(result)
    footnotes: dict[str, str] = {}

    def row_of(row: ComparisonRow, line: tuple[str, ...]) -> dict[str, Any]:
        shared_here = shared if row.ranked or everywhere else ()
        markers = [mark for mark in line[-1].split(",") if mark]
        footnotes.update(zip(markers, [note for note in said(row) if note not in shared_here]))
        best = row.best
        return {"rank": int(line[0]) if row.ranked else None, "key": row.key, "provider": row.provider,
                "instance_type": row.instance_type, "instances": row.instances, "where": where(best),
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


def plain(value: Any) -> Any:
    """Decimals as rounded numbers, tuples as lists, dataclasses as dicts, facts in words, for json.dumps."""
    if isinstance(value, Fact):
        return words(value)
    if isinstance(value, Decimal):
        return round_money(value, 6)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def iso_dates(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, dt.datetime) else v for k, v in item.items()}


@payload.register(HelpCommand)
def _help(result: HelpCommand) -> Any:
    return {"help": result.text}
