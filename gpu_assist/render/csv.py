"""CSV for spreadsheets: the comparison (one row per offer, a column per pricing model), the flat list, the plans.
Numbers are plain (no currency symbol, no thousands separator); blank where there is no price."""

from __future__ import annotations

import csv
import io
from functools import singledispatch
from typing import Any

from ..errors import GpuAssistError
from ..pricing.compare import COLUMNS, Comparison
from ..pricing.quote import Quote
from .notes import where, words
from .tabular import quote_table


def csv_text(headers: list[str], rows: list[list[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(rows)
    return buffer.getvalue().rstrip("\n")


@singledispatch
def render(result: object, **_options: Any) -> str:
    """Quotes (comparison or list) and recommendations (`plans.py`) as CSV; anything else is refused."""
    raise GpuAssistError("--format csv is for quote and recommend", example="quote 8xA100 72h --format csv")


@render.register(Comparison)
def render_comparison(result: Comparison, **_options: Any) -> str:
    headers = ["rank", "provider", "instance_type", "instances", "where", *COLUMNS, "best", "currency",
               "verified", "notes"]
    rows = []
    for rank, row in enumerate(result.rows + result.untrusted, 1):
        best = row.best
        cells = [f"{cell.whole:.2f}" if (cell := row.cell(m)) else "" for m in COLUMNS]  # the whole job
        rows.append([rank if row.ranked else "", row.provider, row.instance_type, row.instances,
                     where(best), *cells, best.pricing_model, result.currency,
                     "yes" if row.trusted else "no", "; ".join(map(words, row.notes))])
    return csv_text(headers, rows)


@render.register(Quote)
def _quote(result: Quote, **_options: Any) -> str:
    return csv_text(*quote_table(result, plain=True))
