"""The flat quote list and the plans as (headers, rows), shared by the Markdown and CSV renderers."""

from __future__ import annotations

from .money import format_hours, format_money, format_percent


def quote_table(result, *, plain: bool = False):
    headers = ["provider", "region", "zone", "instance_type", "instances", "pricing_model", "hourly", "total",
               "per_gpu_hour", "savings_vs_on_demand", "currency", "verified", "notes"]

    def money(amount, places=2):
        return f"{amount:.{places}f}" if plain else format_money(amount, result.currency, places=places)

    rows = [[o.provider, o.region, o.zone, o.instance_type, o.instances, o.pricing_model, money(o.hourly, 4),
             money(o.total), money(o.per_gpu_hour, 4),
             ("" if o.savings_vs_on_demand is None else f"{o.savings_vs_on_demand:.4f}") if plain
             else format_percent(o.savings_vs_on_demand), o.currency, "yes" if o.verified else "no",
             "; ".join(o.notes)] for o in result.options]
    return headers, rows


def plan_table(result, *, plain: bool = False):
    headers = ["gpus", "provider", "region", "instance_type", "instances", "strategy", "hours" if plain else "time",
               "total", "currency", "meets_deadline", "within_budget", "verified", "notes"]
    rows = []
    for p in result.plans:
        hours = ("" if p.hours is None else f"{p.hours:.2f}") if plain else format_hours(p.hours)
        total = f"{p.total:.2f}" if plain else format_money(p.total, p.currency)
        rows.append([f"{p.gpu_count}x{p.gpu}", p.provider, p.zone or p.region, p.instance_type, p.instances,
                     p.strategy, hours, total, p.currency, p.meets_deadline, p.within_budget,
                     "yes" if p.verified else "no", "; ".join(p.reasons)])
    return headers, rows
