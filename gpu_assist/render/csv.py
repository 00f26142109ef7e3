"""CSV for spreadsheets: the comparison (one row per offer, a column per pricing model), the flat list, the plans.
Numbers are plain (no currency symbol, no thousands separator); blank where there is no price."""

from __future__ import annotations

import csv
import io

from ..compare import COLUMNS, Comparison
from ..pricing import Quote


def _write(headers, rows) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(rows)
    return buffer.getvalue().rstrip("\n")


def render_comparison(result: Comparison) -> str:
    headers = ["rank", "provider", "instance_type", "instances", "where", *COLUMNS, "best", "currency",
               "verified", "notes"]
    rows = []
    for rank, row in enumerate(result.rows + result.untrusted, 1):
        best = row.best
        cells = [f"{cell.total:.2f}" if (cell := row.cell(m)) else "" for m in COLUMNS]
        rows.append([rank if row.ranked else "", row.provider, row.instance_type, row.instances,
                     best.zone or best.region, *cells, best.pricing_model, result.currency,
                     "yes" if row.trusted else "no", "; ".join(row.notes)])
    return _write(headers, rows)


def render(result, **_options) -> str:
    """Quotes (comparison or list) and recommendations as CSV; anything else is refused."""
    from ..recommend import Recommendation
    from .tabular import plan_table, quote_table

    if isinstance(result, Comparison):
        return render_comparison(result)
    if isinstance(result, Quote):
        return _write(*quote_table(result, plain=True))
    if isinstance(result, Recommendation):
        return _write(*plan_table(result, plain=True))
    from ..errors import GpuAssistError

    raise GpuAssistError("--format csv is for quote and recommend", example="quote 8xA100 72h --format csv")
