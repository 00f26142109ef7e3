"""JSON for the CLI's `--format json` and the REST routes: plain numbers, rounded here."""

from __future__ import annotations

import json

from ..pricing import Quote
from .money import round_money

_PLACES = {"hourly": 6, "total": 2, "per_gpu_hour": 6, "billed_hours": 4, "savings_vs_on_demand": 4}


def quote_options(result: Quote) -> list[dict]:
    options = []
    for option in result.options:
        item = option.to_dict()
        for key, places in _PLACES.items():
            item[key] = round_money(item[key], places)
        item["notes"] = list(item["notes"])
        options.append(item)
    return options


def render_quote(result: Quote) -> str:
    return json.dumps(quote_options(result), ensure_ascii=False, indent=2)
