"""The notebook's DataFrames of quotes, comparisons and plans: the core's records as columns, notes in words.

The core keeps money and billed hours as exact `Decimal`s (JSON and the faces print them exactly). In a
DataFrame a column of Decimals is an `object` column: sums are slow, plots and `describe()` refuse it. So
here such a column becomes float64, NaN where a value is missing (a plan without a job length has no total: a
column of NaN, never of None); the exact figures stay in the objects. A pricing model is the grammar's word, a
plain string, not the enum the core compares.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Collection, Iterable
from decimal import Decimal
from typing import Any

import pandas as pd

from ..plan.plans import Plan
from ..plan.recommendation import Recommendation
from ..pricing.compare import COLUMNS, Comparison, ComparisonRow
from ..pricing.quote import Quote, QuoteOption
from . import plan_choice_notes  # noqa: F401 - the words of the facts only plans state
from . import sizing as _sizing  # noqa: F401 - the words of a recommendation's sizing facts
from .notes import said, where, words

_NUMBER_TYPES = frozenset({"int", "float", "Decimal"})


def number_fields(cls: type) -> frozenset[str]:
    """The fields of dataclass `cls` that hold a number, or a number or None: float64 columns in a frame."""
    return frozenset(f.name for f in dataclasses.fields(cls)
                     if (kinds := {part.strip() for part in str(f.type).split("|")} - {"None"})
                     and kinds <= _NUMBER_TYPES)


def records_frame(records: Iterable[dict[str, Any]], columns: list[str] | None = None,
                  numbers: Collection[str] = ()) -> pd.DataFrame:
    """`records` as a pandas DataFrame: every column of Decimals (and Nones), and every column `numbers` names that
    holds a None, as float64 (NaN for None); enum members as their plain values."""
    rows = [{k: v.value if isinstance(v, enum.Enum) else v for k, v in record.items()} for record in records]
    frame = pd.DataFrame(rows, columns=columns)
    for name in frame.columns:
        values = frame[name]
        if values.dtype != object:
            continue
        decimals = values.map(lambda v: isinstance(v, Decimal)).any()
        nones = values.map(lambda v: v is None or isinstance(v, (int, float, Decimal)) and not isinstance(v, bool))
        if nones.all() and (decimals or name in numbers):
            frame[name] = [math.nan if v is None else float(v) for v in values]
    return frame


def quote_frame(quote: Quote) -> pd.DataFrame:
    """The options as a DataFrame; `.attrs` keeps the request, the currency, the notices and, for an empty one,
    the reason."""
    frame = records_frame(({**_without_parts(o.to_dict()), **_parts(o), "notes": tuple(said(o.notes))}
                           for o in quote.options), numbers=number_fields(QuoteOption))
    frame.attrs.update(request=quote.request.describe(), currency=quote.currency, notices=said(quote.notices),
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


def comparison_frame(comparison: Comparison) -> pd.DataFrame:
    """One row per comparison row, ranked ones first in their order (`rank` 1, 2, …; NaN for the unverified or
    stale rows after them, `ranked` False): the offer, one column per pricing model with its total for the job in
    the quote's currency (NaN: not sold so), `best` the cheapest way to buy it (bold in the text table) and that
    way's `total`, `hourly` (per instance) and `per_gpu_hour`, its notes in words, and `key`, the `group` the CLI's
    JSON gives each of the row's options."""
    ranks = [*range(1, len(comparison.rows) + 1), *[math.nan] * len(comparison.untrusted)]
    frame = pd.DataFrame([_comparison_record(row, rank) for row, rank in
                          zip(comparison.rows + comparison.untrusted, ranks)],
                         columns=["rank", "provider", "instance_type", "instances", "gpu", "gpu_count",
                                  "gpu_memory_gib", "where", *map(str, COLUMNS), "best", "total", "hourly",
                                  "per_gpu_hour", "currency", "verified", "ranked", "notes", "key"])
    # The types every row has, also with no row (an empty frame's columns would be `object`, and a mask of one
    # would select columns, not rows).
    return frame.astype({"rank": "float64", "instances": "int64", "gpu_count": "int64", "gpu_memory_gib": "float64",
                         **dict.fromkeys(map(str, COLUMNS), "float64"), "total": "float64", "hourly": "float64",
                         "per_gpu_hour": "float64", "verified": "bool", "ranked": "bool"})


def _comparison_record(row: ComparisonRow, rank: float) -> dict[str, Any]:
    best = row.best
    cells = {str(model): float(cell.whole) if (cell := row.cell(model)) else math.nan for model in COLUMNS}
    return {"rank": rank, "provider": row.provider, "instance_type": row.instance_type, "instances": row.instances,
            "gpu": row.gpu, "gpu_count": row.gpu_count, "gpu_memory_gib": row.gpu_memory_gib,
            "where": where(best), **cells,  # the whole job
            "best": str(next(m for m, o in row.cells if o is best)), "total": float(best.whole),
            "hourly": float(best.hourly), "per_gpu_hour": float(best.per_gpu_hour), "currency": best.currency,
            "verified": row.trusted, "ranked": row.ranked, "notes": "; ".join(said(row.notes)), "key": row.key}


def plans_frame(plans: Iterable[Plan]) -> pd.DataFrame:
    """Plans as rows, each plan's reasons in words; hours and money float64, NaN without a job length."""
    return records_frame(({**p.to_dict(), "reasons": tuple(said(p.reasons))} for p in plans),
                         columns=[f.name for f in dataclasses.fields(Plan)], numbers=number_fields(Plan))


def recommendation_frame(result: Recommendation) -> pd.DataFrame:
    """The feasible plans shown, cheapest first; `.attrs` keeps what the CLI prints around them: the workload, the
    currency, the plans not chosen (`rejected`, as records) and the GPUs not planned, each GPU's reasoning and the
    assumptions, how many plans are feasible in all and in what order (`sort`), the plans named beside them
    (`beside`: the fastest, a Capacity Block), each GPU type left out and why, and the dataset a fine-tune without
    tokens= assumes."""
    frame = plans_frame(result.plans)
    frame.attrs.update(workload=result.workload.describe(), currency=result.currency,
                       rejected=plans_frame(result.rejected).to_dict("records"),
                       not_planned=said(result.not_planned), reasoning=said(result.reasoning),
                       assumptions=said(result.assumptions), feasible=result.feasible, sort=result.sort,
                       beside=plans_frame(result.beside).to_dict("records"),
                       left_out={gpu: words(why) for gpu, why in result.left_out},
                       dataset=None if result.dataset is None else words(result.dataset))
    return frame
