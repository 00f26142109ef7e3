"""Plans in every medium: `recommend`'s plans and `tco`'s buy-or-rent answer as terminal text, Markdown, CSV
and JSON, registered on each medium's `render` for their result types. A face imports this module with the
verbs that produce plans, so a quote imports neither the planner nor this."""

from __future__ import annotations

from dataclasses import asdict
from functools import partial
from typing import Any

from ..plan.recommendation import Recommendation
from ..plan.tco import TcoResult
from ..plural import plural
from . import csv, json, markdown, text
from .comparison import format_total, wrap
from .json import plain
from .money import format_hours, format_money, format_plan_cost, round_money
from .notes import words
from .sizing import memory_needed_line, memory_parts
from .plan_explain import explained, rejected_line
from .plan_lines import beside_line, instance, left_out_line, ranking_rule, reasons_line, shared, where, zone_id
from .tables import table, text_table, width
from .tabular import plan_table
from .text import EASY_WIDTHS, HARD_WIDTHS, narrowing


def _yes_no(value: bool | None) -> str:
    return {True: "yes", False: "NO", None: "-"}[value]


_ORDER = {"cost": "cheapest first", "fastest": "fastest first", "fewest-gpus": "fewest GPUs first"}


def _plan_rows(result: Recommendation, color: bool) -> list[str]:
    """The plans as a table, each row followed by its line of reasons. Under 100 columns the instance leaves the
    table for the reasons line, where a marketplace's long host names fold as words do."""
    apart = width() < 100
    budget = result.workload.budget is not None
    rows = [[str(rank), f"{plan.gpu_count:,}×{plan.gpu}", plan.provider, where(plan),
             *([] if apart else [instance(plan)]),
             plan.pricing_model, format_hours(plan.hours), format_plan_cost(plan, format_total),
             *([_yes_no(plan.within_budget)] if budget else [])] for rank, plan in enumerate(result.plans, 1)]
    headers = ["#", "GPUs", "provider", "where", *([] if apart else ["instance"]), "pricing", "time", "total",
               *(["budget"] if budget else [])]
    money = len(headers) - 1 - budget
    table_lines = text_table(headers, rows, right={money - 1, money}, color=color,
                             whole={0, 1, *range(money - 1, len(headers))},
                             clip={2: 14, 3: 14, 4: 24, 5: 9} if not apart else {2: 14, 3: 14, 4: 9},
                             narrow=[] if apart else [*narrowing((4, 3, 2), None, EASY_WIDTHS),
                                                      *narrowing((4, 3, 2), None, HARD_WIDTHS)]).splitlines()
    lines = [table_lines[0]]
    for plan, row_lines in zip(result.plans, _rows(table_lines[1:])):
        lines += row_lines
        zone = zone_id(plan)
        placed = (f"{instance(plan)} in {zone}" if zone else instance(plan)) if apart else \
            (f"zone {zone}" if zone else "")
        reasons = "; ".join(filter(None, [placed, reasons_line(plan)]))
        if reasons:
            lines += wrap(f"    {reasons}", "    ")
    return lines


def _rows(body: list[str]) -> list[list[str]]:
    """A table's body lines grouped by row: a row folded onto more lines goes on under an empty rank column."""
    rows: list[list[str]] = []
    for line in body:
        if line[:1].strip() or not rows:
            rows.append([line])
        else:
            rows[-1].append(line)
    return rows


@text.render.register(Recommendation)
def render_recommendation(result: Recommendation, *, explain: bool = False, color: bool = False,
                          **_options: Any) -> str:
    """The plans at a glance: the title, the ranking rule in one sentence, the plans as a 100-column table each
    with one line of reasons, and a short footer (what else is worth naming, what the plans share, the GPU types
    left out); `explain` adds every note in full, each GPU's reasoning, the assumptions and the formulas."""
    workload = result.workload
    timed = any(plan.hours is not None for plan in result.plans)
    order = "" if not result.plans else f", {_ORDER[result.sort]}" if timed or result.sort != "cost" else \
        ", fewest GPUs first, then the cheapest hour"
    count = plural(len(result.plans), "feasible plan") if len(result.plans) == result.feasible else \
        f"{len(result.plans):,} of {result.feasible:,} feasible plans"
    lines = [f"{workload.describe()} — {count}{order} ({result.currency})"]
    if result.plans:
        lines += wrap(ranking_rule(result))
    if result.dataset is not None:
        lines += wrap(words(result.dataset))
    if result.plans:
        lines += _plan_rows(result, color)
    else:
        lines.append("no plan meets every constraint; the closest per GPU are below")
    lines += [folded for plan in result.beside for folded in wrap(beside_line(plan), "    ")]
    lines += [folded for line in shared(result) for folded in wrap(line)]
    if not result.plans:
        lines += [folded for plan in result.rejected[:8] for folded in wrap(rejected_line(plan), "    ")]
    left_out = left_out_line(result)
    if left_out and not explain:
        lines += wrap(left_out)
    if explain:
        lines += explained(result)
    else:
        lines += wrap(f"{memory_needed_line(result.workload, result.memory)}; `explain` adds every note, "
                      "each GPU's reasoning, the assumptions (name=value overrides each) and the formulas")
    return "\n".join(lines)


@text.render.register(TcoResult)
def render_tco(result: TcoResult, **_options: Any) -> str:
    """The cost table, then its notes; the cloud offer's name goes below it, folded, as it can be any length."""
    i = result.inputs
    c = i.currency

    money = partial(format_money, currency=c)

    rows = [
        ["hardware", f"{i.gpus} × {money(i.hardware_per_gpu)}" if i.hardware_per_server is None
         else f"1 server of {i.gpus}", money(i.hardware)],
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
    assumptions = [words(basis) for basis in result.assumptions]
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
        "feasible": result.feasible,
        "sort": result.sort,
        "ranking": ranking_rule(result),
        "beside": [plain(p.to_dict()) for p in result.beside],
        "left_out": [{"gpu": gpu, "why": words(why)} for gpu, why in result.left_out],
        "dataset": None if result.dataset is None else words(result.dataset),
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
