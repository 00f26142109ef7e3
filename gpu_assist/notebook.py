"""The notebook's Python API (`gpu_assist.quote("8xA100 72h")` and the rest): the core's answers as pandas
DataFrames. `gpu_assist/__init__.py` loads this module on the first call, so importing the package, which every
CLI start does, costs neither pandas nor the planner."""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable

import pandas as pd

from .catalog import load_catalog
from .commands import CommitCommand, Context, SpendCommand
from .commands.execute import run, spend_of
from .host.nvml import NvmlSampler
from .plan.recommendation import recommend as plan
from .plan.workload import parse_workload
from .pricing.query import parse_request
from .pricing.quote import quote as price
from .render.commit import commitment_rows, coverage_chart
from .render.frames import plans_frame, quote_frame, records_frame
from .render.notes import words
from .team.commitments import CommitmentAdvice
from .team.periods import parse_period


def quote(text: str, **options: Any) -> pd.DataFrame:
    """`gpu_assist.quote("8xA100 72h")` → a pandas DataFrame of options, cheapest first.

    Options are those of `pricing.quote` (top, all_regions, include_flagged, verified_only, currency).
    """
    catalog = load_catalog()
    request = parse_request(text, catalog.gpus)
    return quote_frame(price(request, catalog, today=dt.date.today(), **options))


def recommend(text: str, **options: Any) -> pd.DataFrame:
    """`gpu_assist.recommend("train 7B tokens=20B deadline=72h")` → a DataFrame of feasible plans, cheapest first."""
    catalog = load_catalog()
    return plans_frame(plan(parse_workload(text, catalog.gpus), catalog, today=dt.date.today(), **options))


def utilization() -> pd.DataFrame:
    """`gpu_assist.utilization()` → a DataFrame with one row per local GPU (empty, with the reason, without one)."""
    sampler = NvmlSampler()
    try:
        snapshot = sampler.sample()
    finally:
        sampler.close()
    frame = pd.DataFrame([{k: v for k, v in vars(g).items() if k != "processes"} for g in snapshot.gpus])
    frame.attrs["reason"] = snapshot.reason
    return frame


def spend(period: str = "mtd", *, context: Context | None = None) -> pd.DataFrame:
    """`gpu_assist.spend("2026-11")` → a DataFrame, one row per launch that ran in the period: requester, project,
    instance type, pricing, hourly price, hours and cost in the period, projected cost to its TTL. The report's
    daily totals and budgets are in `.attrs`."""
    report = spend_of(SpendCommand(period=parse_period(period)), context or Context())
    frame = records_frame([vars(launch) for launch in report.launches],
                          columns=["request_id", "requester", "project", "instance_type", "pricing_model", "state",
                                   "hourly", "hours", "cost", "projected", "committed"])
    frame.attrs.update(period=report.period.label, currency=report.currency, daily=list(report.daily),
                       budgets=list(report.budgets), total=report.total)
    return frame


def commit(months: int = 3, *, chart: bool = True) -> pd.DataFrame:
    """`gpu_assist.commit()` → a DataFrame of reserved terms per instance type, from the last `months` whole months
    of launches in the store, the recommended ones marked; in a notebook it also draws monthly cost against the
    number of instances committed, for each type (its recommended term, else its first)."""
    advice = run(CommitCommand(months), Context())
    if not isinstance(advice, CommitmentAdvice):
        raise TypeError(f"commit answered {type(advice).__name__}")
    frame = records_frame(commitment_rows(advice))
    frame.attrs["notices"] = [words(notice) for notice in advice.notices]
    if chart and advice.groups:
        _draw_coverage(advice)
    return frame


def _draw_coverage(advice: CommitmentAdvice) -> None:
    """Each type's chart in the notebook; nothing outside IPython (a script calling the API has no display)."""
    try:
        from IPython.display import HTML, display  # IPython is there in a notebook, not in every script
    except ImportError:
        return
    show: Callable[[object], None] = display  # IPython's functions are untyped
    page: Callable[[str], object] = HTML
    for group in advice.groups:
        picked = [i for i, c in enumerate(group.candidates) if c.recommended]
        if group.candidates:
            show(page(coverage_chart(group, advice.currency, picked[0] if picked else 0)))
