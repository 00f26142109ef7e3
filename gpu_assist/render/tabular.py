"""The flat quote list and the plans as (headers, rows), shared by the Markdown and CSV renderers."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..pricing.quote import Quote
from .money import format_hours, format_money, format_percent
from .notes import words

if TYPE_CHECKING:  # the planner's type: a quote's CSV or Markdown does not load the planner
    from ..plan.recommendation import Recommendation


def _money(amount: Decimal | None, currency: str, plain: bool, places: int = 2) -> str:
    """A plain number for a spreadsheet, or money as people read it; blank when there is no amount."""
    if amount is None:
        return ""
    return f"{amount:.{places}f}" if plain else format_money(amount, currency, places=places)


def quote_table(result: Quote, *, plain: bool = False) -> tuple[list[str], list[list[Any]]]:
    headers = ["provider", "region", "zone", "instance_type", "instances", "pricing_model", "hourly", "total",
               "per_gpu_hour", "savings_vs_on_demand", "currency", "verified", "notes"]
    currency = result.currency
    rows = [[o.provider, o.region, o.zone, o.instance_type, o.instances, o.pricing_model,
             _money(o.hourly, currency, plain, 4), _money(o.total, currency, plain),
             _money(o.per_gpu_hour, currency, plain, 4),
             ("" if o.savings_vs_on_demand is None else f"{o.savings_vs_on_demand:.4f}") if plain
             else format_percent(o.savings_vs_on_demand), o.currency, "yes" if o.verified else "no",
             "; ".join(map(words, o.notes))] for o in result.options]
    if any(o.parts is not None for o in result.options):  # the whole bill: its parts before the notes
        headers[-1:-1] = ["storage", "transfer", "job_total", "parts_known"]
        for row, o in zip(rows, result.options):
            parts = o.parts
            row[-1:-1] = [_money(parts.part("storage") if parts else None, currency, plain),
                          _money(parts.part("transfer") if parts else None, currency, plain),
                          _money(o.whole, currency, plain), "yes" if o.parts_known else "no"]
    return headers, rows


def plan_table(result: Recommendation, *, plain: bool = False) -> tuple[list[str], list[list[Any]]]:
    """One row per plan; `hourly` (all the plan's instances, per hour) and `total` (the whole job, blank when its
    length is unknown) in columns of their own, so a spreadsheet never mixes the two."""
    headers = ["gpus", "provider", "region", "instance_type", "instances", "strategy", "hours" if plain else "time",
               "hourly", "total", "currency", "meets_deadline", "within_budget", "verified", "notes"]
    rows = []
    for p in result.plans:
        hours = ("" if p.hours is None else f"{p.hours:.2f}") if plain else format_hours(p.hours)
        gpus, instances = (f"{p.gpu_count}x{p.gpu}", p.instances) if plain else \
            (f"{p.gpu_count:,}x{p.gpu}", f"{p.instances:,}")
        rows.append([gpus, p.provider, p.zone or p.region, p.instance_type, instances,
                     p.strategy, hours, _money(p.hourly, p.currency, plain, 4), _money(p.total, p.currency, plain),
                     p.currency, _verdict(p.meets_deadline, plain), _verdict(p.within_budget, plain),
                     "yes" if p.verified else "no", "; ".join(map(words, p.reasons))])
    return headers, rows


def _verdict(value: bool | None, plain: bool) -> object:
    """A deadline or budget verdict: blank when there is nothing to judge (no deadline, budget or job length), as
    JSON's null; a spreadsheet keeps its True/False, a table to read says yes/no."""
    if value is None:
        return ""
    return value if plain else ("yes" if value else "no")
