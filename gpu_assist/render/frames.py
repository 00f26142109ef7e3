"""The notebook's DataFrames of quotes, comparisons and plans: the core's records as columns, notes in words.

The core keeps money and billed hours as exact `Decimal`s (JSON and the faces print them exactly). In a
DataFrame a column of Decimals is an `object` column: sums are slow, plots and `describe()` refuse it. So
here such a column becomes float64, NaN where a value is missing; the exact figures stay in the objects.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import pandas as pd

from ..plan.recommendation import Recommendation
from ..pricing.compare import COLUMNS, Comparison
from ..pricing.quote import Quote, QuoteOption
from .notes import said, where, words


def records_frame(records: Iterable[dict[str, Any]], columns: list[str] | None = None) -> pd.DataFrame:
    """`records` as a pandas DataFrame, every column of Decimals (and Nones) as float64."""
    frame = pd.DataFrame(list(records), columns=columns)
    for name in frame.columns:
        values = frame[name]
        if values.dtype == object and values.map(lambda v: isinstance(v, Decimal)).any() and \
                values.map(lambda v: v is None or isinstance(v, Decimal)).all():
            frame[name] = [math.nan if v is None else float(v) for v in values]
    return frame


def quote_frame(quote: Quote) -> pd.DataFrame:
    """The options as a DataFrame; `.attrs` keeps the notices and, for an empty one, the reason."""
    frame = records_frame({**_without_parts(o.to_dict()), **_parts(o), "notes": tuple(said(o.notes))}
                          for o in quote.options)
    frame.attrs.update(notices=said(quote.notices),
                       empty_reason=words(quote.empty_reason) if quote.empty_reason else None)
    return frame


def _without_parts(record: dict[str, Any]) -> dict[str, Any]:
    record.pop("parts", None)
    return record


def _parts(option: QuoteOption) -> dict[str, Any]:
    """The whole bill's columns where job data was asked for: NaN for a part no source gives."""
    parts = option.parts
    if parts is None:
        return {}
    storage, transfer = parts.part("storage"), parts.part("transfer")
    return {"storage": float("nan") if storage is None else float(storage),
            "transfer": float("nan") if transfer is None else float(transfer),
            "job_total": float(option.whole), "parts_known": parts.complete}


def comparison_frame(comparison: Comparison) -> Any:  # Any while jupyter/panels.py styles it untyped
    """One row per comparison row: money as floats in the quote's currency, NaN where no price."""
    records = []
    for row in comparison.rows + comparison.untrusted:
        best = row.best
        record = {"provider": row.provider, "instance_type": row.instance_type, "instances": row.instances,
                  "where": where(best)}
        for model in COLUMNS:
            cell = row.cell(model)
            record[model] = float(cell.whole) if cell else float("nan")  # the whole job
        record.update(best=next(m for m, o in row.cells if o is best), verified=row.trusted,
                      ranked=row.ranked, notes="; ".join(said(row.notes)), key=row.key)
        records.append(record)
    return pd.DataFrame(records)


def plans_frame(result: Recommendation) -> pd.DataFrame:
    """The feasible plans, cheapest first, each plan's reasons in words."""
    return records_frame({**p.to_dict(), "reasons": tuple(said(p.reasons))} for p in result.plans)
