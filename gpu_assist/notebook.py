"""The notebook's Python API, the command line's twin: `gpu_assist.quote("8xA100 72h")` answers what
`gpu-assist quote 8xA100 72h` does, as a pandas DataFrame. `gpu_assist/__init__.py` loads this module on the first
call, so importing the package, which every CLI start does, costs neither pandas nor the planner.

Each function takes the grammar's words, as the CLI, Slack and the Jupyter routes do, and runs them through the
same `commands.parse_command` and `commands.run`; keyword arguments are words too (`top=5` is `top=5`,
`include_unverified=True` is `include-unverified`, `list=True` is `list`). What the CLI prints around its table
(notes, the rows it does not rank, the reasoning) is in the frame's `.attrs`. Money and hours are float64 (NaN
where there is none), pricing models plain strings; the exact figures are in `--format json` and the core's objects.
"""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from .commands import Context, Result
from .commands.execute import run
from .commands.grammar import parse_command
from .host.nvml import Snapshot
from .plan.recommendation import Recommendation
from .plan.tco import TcoResult
from .pricing.compare import Comparison
from .pricing.quote import Quote
from .render.commit import commitment_rows, coverage_chart
from .render.frames import comparison_frame, number_fields, quote_frame, recommendation_frame, records_frame
from .render.notes import words as words_of_fact
from .team.commitments import CommitmentAdvice
from .team.spending import LaunchSpend, SpendReport


def quote(text: str, *, list: bool = False, context: Context | None = None, **options: object) -> pd.DataFrame:
    """`gpu_assist.quote("8xA100 72h")` → what `gpu-assist quote 8xA100 72h` ranks: one row per offer (provider ×
    instance type), in rank order, with `rank`, the total for the job under each pricing model (columns
    `on-demand`, `spot`, `reserved-1y`, `reserved-3y`, `monthly`; NaN where not sold so), `best`, the cheapest way
    to buy it, and that way's `total`, `hourly` and `per_gpu_hour`. Every row, as `--format json` gives every
    option (`top=15` keeps as many as the terminal shows).

    `.attrs`: `unranked`, the rows without a verified, current price (as records: `pd.DataFrame(frame.attrs[
    "unranked"])`; `include_unverified=True` ranks them), `title`, `legend`, `notices` and `empty_reason` (why there
    is no row), `request`, `currency`. `list=True` gives the flat list instead: one row per way to buy the job
    (offer × pricing model), cheapest first, as `--list` and the CLI's JSON do.
    """
    return _frame(_answer("quote", text, {**options, "list": list}, context))


def recommend(text: str, *, context: Context | None = None, **options: object) -> pd.DataFrame:
    """`gpu_assist.recommend("train 7B tokens=20B deadline=72h")` → the feasible plans, cheapest first, as
    `gpu-assist recommend` lists them; `.attrs` keeps the rest of its answer: `reasoning` (per GPU),
    `assumptions`, `rejected` (the plans not chosen, as records, each with its reasons) and `not_planned`."""
    return _frame(_answer("recommend", text, options, context))


def tco(text: str, *, context: Context | None = None, **options: object) -> pd.DataFrame:
    """`gpu_assist.tco("1xA100 hardware=15k usage=200h/mo")` → buy or rent, one row (concatenate several to
    compare): the inputs, owning's first-year and yearly cost, the cloud's rate and yearly cost, the break-even
    hours a month and which is cheaper; `.attrs` keeps where the cloud rate comes from and any conversion."""
    return _frame(_answer("tco", text, options, context))


def spend(text: str = "mtd", *, context: Context | None = None) -> pd.DataFrame:
    """`gpu_assist.spend("2026-11 by=project")` → one row per launch that ran in the period, as `gpu-assist spend`
    prices them: requester, project, instance type, pricing, hourly price, hours and cost in the period,
    projected cost to its TTL. The report's period, totals, groups, daily totals and budgets are in `.attrs`."""
    return _frame(_answer("spend", text, {}, context))


def commit(text: str | int = "", *, chart: bool = True, context: Context | None = None) -> pd.DataFrame:
    """`gpu_assist.commit()` (or `commit("months=6")`, `commit(6)`) → reserved terms per instance type, from the
    last whole months of launches in the store, the recommended ones marked, as `gpu-assist commit` weighs them; in
    a notebook it also draws monthly cost against the number of instances committed, for each type (its
    recommended term, else its first)."""
    advice = _answer("commit", f"months={text}" if isinstance(text, int) else text, {}, context)
    if not isinstance(advice, CommitmentAdvice):
        raise TypeError(f"commit answered {type(advice).__name__}")
    if chart and advice.groups:
        _draw_coverage(advice)
    return _frame(advice)


def utilization(*, context: Context | None = None) -> pd.DataFrame:
    """`gpu_assist.utilization()` → one row per GPU of this machine, as `gpu-assist util` reads them (empty, with
    `.attrs["reason"]`, without one)."""
    if context is not None:
        return _frame(_answer("util", "", {}, context))
    context = Context()
    try:
        return _frame(_answer("util", "", {}, context))
    finally:
        context.sampler.close()  # NVML is shut down again, as the sampler of a one-off `gpu-assist util` is


def _answer(verb: str, text: str, options: dict[str, object], context: Context | None) -> Result:
    """The command the words (and the keywords, as words) make, run as every face runs it."""
    context = context or Context()
    words = " ".join([verb, text, *_as_words(options)])
    return run(parse_command(words, context.catalog.gpus), context)


def _as_words(options: dict[str, object]) -> list[str]:
    """Keywords as the grammar's words: `top=5` → `top=5`, `include_unverified=True` → `include-unverified`; False
    and None leave a word out."""
    found = []
    for name, value in options.items():
        word = name.replace("_", "-")
        if value is True:
            found.append(word)
        elif value is not False and value is not None:
            found.append(f"{word}={value}")
    return found


def _frame(result: Result) -> pd.DataFrame:
    """A command's answer as the notebook's DataFrame."""
    for kind, make in _FRAMES.items():
        if isinstance(result, kind):
            return make(result)
    raise TypeError(f"no DataFrame for {type(result).__name__}")


def _comparison(result: Comparison) -> pd.DataFrame:
    from .render.json import comparison_answer  # the attrs are the JSON answer's, word for word

    everything = comparison_frame(result)
    frame = everything[everything["ranked"]].drop(columns="ranked").reset_index(drop=True)
    frame["rank"] = frame["rank"].astype(int)
    answer = comparison_answer(result)
    frame.attrs.update({key: answer[key] for key in ("request", "currency", "title", "legend", "notices",
                                                    "empty_reason", "more")})
    frame.attrs["unranked"] = everything[~everything["ranked"]].drop(columns=["ranked", "rank"]).to_dict("records")
    return frame


def _tco(result: TcoResult) -> pd.DataFrame:
    inputs = {key: value for key, value in vars(result.inputs).items()
              if key not in ("cloud_rate_per_gpu_hour", "written_in")}  # the rate used is the result's
    frame = records_frame([{**inputs, **{key: value for key, value in vars(result).items()
                                         if key not in ("inputs", "conversions")},
                            "break_even_utilisation": result.break_even_utilisation, "cheaper": result.cheaper}])
    frame.attrs.update(cloud_rate_source=result.cloud_rate_source,
                       conversions=[words_of_fact(c) for c in result.conversions])
    return frame


def _spend(report: SpendReport) -> pd.DataFrame:
    from .render.operations import spend_payload  # the attrs are the JSON answer's

    frame = records_frame([vars(launch) for launch in report.launches],
                          columns=list(LaunchSpend.__dataclass_fields__), numbers=number_fields(LaunchSpend))
    frame.attrs.update({key: value for key, value in spend_payload(report).items() if key != "launches"})
    return frame


def _commitments(advice: CommitmentAdvice) -> pd.DataFrame:
    frame = records_frame(commitment_rows(advice))
    frame.attrs.update(currency=advice.currency, months=[m.isoformat() for m in advice.months],
                       notices=[words_of_fact(notice) for notice in advice.notices])
    return frame


def _snapshot(snapshot: Snapshot) -> pd.DataFrame:
    frame = pd.DataFrame([{k: v for k, v in vars(g).items() if k != "processes"} for g in snapshot.gpus])
    frame.attrs["reason"] = snapshot.reason
    return frame


_FRAMES: dict[type, Callable[[Any], pd.DataFrame]] = {
    Comparison: _comparison, Quote: quote_frame, Recommendation: recommendation_frame, TcoResult: _tco,
    SpendReport: _spend, CommitmentAdvice: _commitments, Snapshot: _snapshot}


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
