"""Plans in every medium: `recommend`'s plans and `tco`'s buy-or-rent answer as terminal text, Markdown, CSV
and JSON, registered on each medium's `render` for their result types. A face imports this module with the
verbs that produce plans, so a quote imports neither the planner nor this."""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal
from functools import partial
from typing import Any

from .. import facts
from ..plan import recommendation as recommendation_module
from ..plan.recommendation import Recommendation
from ..plan.tco import TcoResult
from ..plural import plural
from . import csv, json, markdown, text
from .comparison import format_total, wrap
from .json import plain
from .money import format_hours, format_money, format_plan_cost, round_money
from .notes import words
from .sizing import memory_parts
from .tables import table, text_table
from .tabular import plan_table
from .text import EASY_WIDTHS, HARD_WIDTHS, narrowing


def _yes_no(value: bool | None) -> str:
    return {True: "yes", False: "NO", None: "-"}[value]


@text.render.register(Recommendation)
def render_recommendation(result: Recommendation, *, explain: bool = False, color: bool = False,
                          **_options: Any) -> str:
    """Plans as a 100-column table: durations as people read them, notes as footnote markers."""
    workload = result.workload
    timed = any(plan.hours is not None for plan in result.plans)
    within = f" within the {workload.deadline_s / 86400:g}-day deadline" if workload.deadline_s and timed else ""
    # The order the plans are in (`Plan.rank_key`): by total with a job length, else the smallest configuration.
    order = "" if not result.plans else ", cheapest first" if timed else ", fewest GPUs first, then the cheapest hour"
    lines = [f"{workload.describe()} — {plural(len(result.plans), 'feasible plan')}{order}{within} "
             f"({result.currency})"]
    if result.plans and not timed and workload.kind != "serve":
        lines += wrap("job length unknown: no totals, the smallest configuration of each GPU that fits; tokens=… "
                      "gives each plan a time and a total and ranks them cheapest first")
    markers: dict[str, int] = {}
    budget = workload.budget is not None
    if result.plans:
        rows = []
        for rank, plan in enumerate(result.plans, 1):
            marks = ",".join(str(markers.setdefault(words(r), len(markers) + 1)) for r in plan.reasons)
            total = format_plan_cost(plan, format_total)
            rows.append([f"{rank}{'*' if plan.pareto else ''}", f"{plan.gpu_count:,}×{plan.gpu}", plan.provider,
                         plan.zone or plan.region,
                         plan.instance_type if plan.instances == 1 else f"{plan.instances:,}× {plan.instance_type}",
                         plan.pricing_model, format_hours(plan.hours), total,
                         *([_yes_no(plan.within_budget)] if budget else []), marks])
        headers = ["#", "GPUs", "provider", "where", "instance", "pricing", "time", "total",
                   *(["budget"] if budget else []), "notes"]
        notes = len(headers) - 1  # after the budget column, when there is one (8)
        lines.append(text_table(headers, rows, right={6, 7}, color=color, whole={0, 1, 6, 7, *range(8, notes)},
                                clip={2: 14, 3: 10, 4: 24, 5: 9}, fold={notes},
                                narrow=[*narrowing((4, 3, 2), notes, EASY_WIDTHS),
                                        *narrowing((4, 3, 2), notes, HARD_WIDTHS)]))
        if any(plan.pareto for plan in result.plans):
            lines.append("* on the Pareto front of cost and time (no plan is both cheaper and faster)")
    else:
        lines.append("no plan meets every constraint; the closest per GPU are below")
    for note, number in markers.items():
        lines += wrap(f"{number} {note}")
    if result.rejected or result.not_planned:
        lines.append("not chosen:")
        for plan in result.rejected[:8]:
            lines += wrap(f"  {plan.gpu_count:,}×{plan.gpu} ({plan.provider} {plan.instance_type}, {plan.strategy}): "
                          f"{words(plan.reasons[0]) if plan.reasons else 'infeasible'}", "    ")
        for fact in result.not_planned:
            lines += wrap(f"  {words(fact)}", "    ")
    lines.append("reasoning:")
    for sized in result.reasoning:
        lines += wrap(f"  {words(sized)}", "    ")
    lines.append("assumptions (override with name=value):")
    for basis in result.assumptions:
        lines += wrap(f"  {words(basis)}", "    ")
    if explain:
        lines += _explained(result)
    return "\n".join(lines)


def _explained(result: Recommendation) -> list[str]:
    """What `--explain` adds under a recommendation: each timed plan's billing, then the formulas (the
    recommendation module's docstring, refolded)."""
    lines: list[str] = []
    billed = [(rank, plan) for rank, plan in enumerate(result.plans, 1) if plan.billed_hours is not None]
    if billed:
        lines.append("billing (total = hourly × billed hours: the plan's hours rounded up to its billing unit):")
        lines += [f"  {rank:<3} {plan.hours:,.2f} h → {plan.billed_hours:,.2f} h billed × "
                  f"{format_money(plan.hourly, plan.currency, places=4)}/h = "
                  f"{format_money(plan.total or Decimal(0), plan.currency)}" for rank, plan in billed]
    lines += _arithmetic(result)
    lines.append("")
    lines += _reflowed(recommendation_module.__doc__ or "")
    return lines


def _arithmetic(result: Recommendation) -> list[str]:
    """Each plan's scaling over hosts and its spot interruptions, worked through with the sources of their
    numbers (`sizing.scaling`, `sizing.spot_overhead`, `sizing.finish_chance`)."""
    a = result.workload.assumptions
    lines: list[str] = []
    for rank, plan in enumerate(result.plans, 1):
        for reason in plan.reasons:
            if isinstance(reason, facts.Fabric) and reason.scaling is not None:
                s = reason.scaling
                source = f"{reason.source}, SOURCES-plans.txt" if reason.source else "no source states this network"
                if s.basis == "network":
                    said = f"compute {s.compute_s:,.2f} s per {a.global_batch_tokens:,.0f}-token step; ring " \
                           f"all-reduce 2 × ({s.hosts:,} − 1)/{s.hosts:,} × 16-bit gradients ÷ ({s.gbps:,.4g} Gbps " \
                           f"/ 8 × {a.link_efficiency:g}) = {s.comm_s:,.2f} s, {s.overlap:.0%} hidden → " \
                           f"{s.compute_s:,.2f} / ({s.compute_s:,.2f} + {1 - s.overlap:g} × {s.comm_s:,.2f}) = " \
                           f"{s.efficiency:.1%} ({source}; link efficiency: D2)"
                else:
                    said = f"{s.efficiency:.0%} over {s.hosts:,} hosts: " + \
                        ("your multi_host_efficiency=" if s.basis == "override" else
                         f"multi_host_efficiency assumed, bandwidth unknown ({source})")
                lines += wrap(f"  {rank:<3} scaling: {said}", "        ")
            elif isinstance(reason, facts.FleetSpotRisk):
                job = reason.instances * reason.rate_per_h
                source = "default interruption_rate" if reason.band is None else \
                    f"AWS Spot Advisor {reason.region} band {reason.band}, {reason.as_of} (S-SPOTADV-2025)"
                chance = "" if reason.chance is None else \
                    f"; P(interruptions ≤ what the slack before the deadline absorbs) = {reason.chance:.1%}"
                lines += wrap(f"  {rank:<3} spot: {reason.instances:,} × {reason.rate_per_h:.6g}/h ({source}) = "
                              f"{job:.4g} interruptions/h of the job; {a.checkpoint_write_h * 60:g} min writes / "
                              f"{reason.interval_min:g} min + {job:.4g} × ({reason.interval_min / 2:g} min lost + "
                              f"{a.restart_h * 60:g} min restart) = +{reason.overhead:.1%}{chance}", "        ")
    if lines:
        lines.insert(0, "scaling and interruptions (each plan's arithmetic; sources in catalogs/sources/"
                        "SOURCES-plans.txt):")
    if result.calibration:
        lines.append("the scaling model against published figures (SOURCES-plans.txt part D; efficiency ratios):")
        lines.append(table(["published point", "source", "published", "model"],
                           [[name, source, f"{published:.2f}", f"{model:.2f}"]
                            for name, source, published, model, _ in result.calibration], right={2, 3}))
        lines += [folded for name, _, _, _, note in result.calibration for folded in wrap(f"  {name}: {note}", "    ")]
    return lines


def _reflowed(document: str) -> list[str]:
    """A docstring's paragraphs and "- " items refolded to 100 columns (source lines may be 120 wide)."""
    paragraphs: list[str] = []
    for line in document.strip().splitlines():
        stripped = line.strip()
        if not stripped or line.startswith("- ") or not paragraphs or not paragraphs[-1]:
            paragraphs.append(stripped)
        else:
            paragraphs[-1] += " " + stripped
    return [folded for paragraph in paragraphs
            for folded in wrap(paragraph, "  " if paragraph.startswith("- ") else "")]


@text.render.register(TcoResult)
def render_tco(result: TcoResult, **_options: Any) -> str:
    """The cost table, then its notes; the cloud offer's name goes below it, folded, as it can be any length."""
    i = result.inputs
    c = i.currency

    money = partial(format_money, currency=c)

    rows = [
        ["hardware", f"{i.gpus} × {money(i.hardware_per_gpu)}", money(i.hardware_per_gpu * i.gpus)],
        ["facility / year", "", money(i.facility_per_year)],
        ["power / year", "", money(i.power_per_year)],
        ["operations / year", "", money(i.ops_per_year)],
        ["own, first year", "", money(result.own_first_year)],
        [f"own, per year over {i.years} years", "", money(result.own_per_year)],
        ["cloud rate / GPU-hour", "the offer below", money(result.cloud_rate_per_gpu_hour)],
        [f"cloud / year at {i.hours_per_month:g} h/month", "", money(result.cloud_per_year)],
    ]
    lines = [f"buy {i.gpus}x{i.gpu} or rent? ({c})", table(["item", "basis", "amount"], rows, right={2})]
    # A break-even beyond the month's 730 h is no usage anyone can reach: said in words, not as "1319%".
    if result.pays_back:
        first_year = f"{result.break_even_hours_per_month_first_year:,.0f} h/month to pay back in the first year" \
            if result.pays_back_in_first_year else "no usage pays it back within the first year"
        break_even = f"break-even: {result.break_even_hours_per_month:,.0f} h/month " \
                     f"({result.break_even_utilisation:.0%} utilisation) over {i.years} years; {first_year}"
    else:
        break_even = f"break-even: none: over {i.years} years owning costs more than renting even at 730 h/month " \
                     "(in use all the time), so renting wins at any usage"
    notes = [*map(words, result.conversions), f"cloud rate: {result.cloud_rate_source}", break_even]
    notes.append(f"at {i.hours_per_month:g} h/month, {result.cheaper} is cheaper")
    return "\n".join(lines + [line for note in notes for line in wrap(note)])


def _workload_payload(result: Recommendation) -> dict[str, Any]:
    """The workload's fields; a named model by its name (its row is in `models.csv`), no key without one."""
    workload: dict[str, Any] = plain(asdict(result.workload))
    model = workload.pop("model")
    if model is not None:
        workload["model"] = model["name"]
    return workload


@json.payload.register(Recommendation)
def recommendation_payload(result: Recommendation) -> dict[str, Any]:
    assumptions = [words(fact) for fact in result.assumptions]
    plans = []
    for plan in result.plans:
        item = plain(plan.to_dict())
        item["total"] = round_money(plan.total, 2)
        item["assumptions"] = assumptions
        plans.append(item)
    return {
        "workload": _workload_payload(result),
        "currency": result.currency,
        "memory_bytes": plain(memory_parts(result.workload, result.memory)),
        "plans": plans,
        "rejected": [plain(p.to_dict()) for p in result.rejected],
        "not_planned": [words(fact) for fact in result.not_planned],
        "reasoning": [words(sized) for sized in result.reasoning],
        "assumptions": assumptions,
    }


@json.payload.register(TcoResult)
def tco_payload(result: TcoResult) -> dict[str, Any]:
    item: dict[str, Any] = plain(asdict(result))
    item["break_even_utilisation"] = round_money(result.break_even_utilisation, 4)
    item["cheaper"] = result.cheaper
    return item


@markdown.render.register(Recommendation)
def recommendation_markdown(result: Recommendation, **_options: Any) -> str:
    headers, rows = plan_table(result)
    return "\n".join([*markdown.markdown_table(headers, rows), "", *(f"- {words(n)}" for n in result.assumptions)])


@csv.render.register(Recommendation)
def recommendation_csv(result: Recommendation, **_options: Any) -> str:
    return csv.csv_text(*plan_table(result, plain=True))
