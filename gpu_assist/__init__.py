"""gpu-assist: GPU prices, plans and utilization across clouds, for Slack, Jupyter and the terminal.

Importing this package is cheap and touches no driver or network: pandas, NVML and boto3
are imported where they are used.
"""

from __future__ import annotations

from .errors import CatalogError, GpuAssistError, ParseError, PolicyError, ProvisionError

__all__ = ["CatalogError", "GpuAssistError", "ParseError", "PolicyError", "ProvisionError", "commit", "quote",
           "recommend", "spend", "utilization"]
__version__ = "0.1.0"


def quote(text: str, **options):
    """`gpu_assist.quote("8xA100 72h")` → a pandas DataFrame of options, cheapest first.

    Options are those of `pricing.quote` (top, all_regions, include_flagged, verified_only, currency).
    """
    import datetime as dt

    from .catalog import load_catalog
    from .pricing import quote as price
    from .render.frames import quote_frame
    from .request import parse_request

    catalog = load_catalog()
    request = parse_request(text, catalog.gpus)
    return quote_frame(price(request, catalog, today=dt.date.today(), **options))


def recommend(text: str, **options):
    """`gpu_assist.recommend("train 7B tokens=20B deadline=72h")` → a DataFrame of feasible plans, cheapest first."""
    import datetime as dt

    from .catalog import load_catalog
    from .recommendation import recommend as plan
    from .render.frames import plans_frame
    from .workload import parse_workload

    catalog = load_catalog()
    return plans_frame(plan(parse_workload(text, catalog.gpus), catalog, today=dt.date.today(), **options))


def utilization():
    """`gpu_assist.utilization()` → a DataFrame with one row per local GPU (empty, with the reason, without one)."""
    import pandas as pd

    from .nvml import NvmlSampler

    sampler = NvmlSampler()
    try:
        snapshot = sampler.sample()
    finally:
        sampler.close()
    frame = pd.DataFrame([{k: v for k, v in vars(g).items() if k != "processes"} for g in snapshot.gpus])
    frame.attrs["reason"] = snapshot.reason
    return frame


def spend(period: str = "mtd", *, context=None):
    """`gpu_assist.spend("2026-11")` → a DataFrame, one row per launch that ran in the period: requester, project,
    instance type, pricing, hourly price, hours and cost in the period, projected cost to its TTL. The report's
    daily totals and budgets are in `.attrs`."""
    from .commands import Context, SpendCommand, spend_of
    from .frames import records_frame

    report = spend_of(SpendCommand(period=period), context or Context())
    frame = records_frame([vars(launch) for launch in report.launches],
                          columns=["request_id", "requester", "project", "instance_type", "pricing_model", "state",
                                   "hourly", "hours", "cost", "projected", "committed"])
    frame.attrs.update(period=report.period.label, currency=report.currency, daily=list(report.daily),
                       budgets=list(report.budgets), total=report.total)
    return frame


def commit(months: int = 3, *, chart: bool = True):
    """`gpu_assist.commit()` → a DataFrame of reserved terms per instance type, from the last `months` whole months
    of launches in the store, the recommended ones marked; in a notebook it also draws monthly cost against the
    number of instances committed, for each type (its recommended term, else its first)."""
    from .commands import CommitCommand, Context, run
    from .commitments import CommitmentAdvice
    from .frames import records_frame
    from .render.commit import commitment_rows, coverage_chart
    from .render.notes import words

    advice = run(CommitCommand(months), Context())
    if not isinstance(advice, CommitmentAdvice):
        raise TypeError(f"commit answered {type(advice).__name__}")
    frame = records_frame(commitment_rows(advice))
    frame.attrs["notices"] = [words(notice) for notice in advice.notices]
    if chart and advice.groups:
        try:
            from IPython.display import HTML, display
        except ImportError:
            return frame
        for group in advice.groups:
            picked = [i for i, c in enumerate(group.candidates) if c.recommended]
            if group.candidates:
                display(HTML(coverage_chart(group, advice.currency, picked[0] if picked else 0)))
    return frame
