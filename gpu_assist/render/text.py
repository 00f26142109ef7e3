"""Text for the terminal: `rich` tables (100 columns, colour only on a terminal), plain tables elsewhere.

`render` picks the function for the result's type (`functools.singledispatch`); each takes the options it uses
(`explain`, `color`) and ignores the rest. The types of other verbs than quote are registered by name
(`dispatch.register_by_name`), so that showing a quote does not import their modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from functools import singledispatch
from typing import TYPE_CHECKING, Any, TypeVar

from .. import facts
from ..commands.objects import HelpCommand
from ..compare import Comparison
from ..plural import plural
from ..pricing import Quote
from .dispatch import register_by_name, registered_for
from .money import format_money, format_percent, format_rate
from .notes import words
from .tables import fitting_table, table, text_table

if TYPE_CHECKING:
    from ..recommendation import Recommendation
    from ..tco import TcoResult


@singledispatch
def render(result: object, *, explain: bool = False, color: bool = False) -> str:
    """Any command result as text; `color` when the output is a terminal, `explain` for a plan's formulas.
    A type with no function yet: the texts of what runs (`operations.py`) are imported on first need, then
    whatever was registered by name for modules imported since."""
    from . import operations  # noqa: F401 - registers its texts when first imported

    if registered_for(render, type(result)):
        return render(result, explain=explain, color=color)
    raise TypeError(f"no text renderer for {type(result).__name__}")


# How a table wider than 100 columns gives way (`_ladder`): the narrowest its (instance, where, provider) columns
# may become, first to widths still easy to read (rows stay one line while the instance keeps 18 characters;
# then the note markers fold between markers), then, once totals are in thousands, narrower still.
_EASY, _HARD = ((18, 16), 10, 10), ((10, 10), 6, 6)
_Laid = TypeVar("_Laid")


def _ladder(totals: Iterable[Decimal]) -> list[tuple[str, tuple[tuple[int, int], int, int] | None]]:
    """The layouts to try, in order, as (totals' unit, narrowest names or None for names at their usual width):
    whole figures; thousands or millions where that rounds no figure it scales by more than half a percent
    (every such figure is at least 100 of the unit), then with names narrower; whole figures with names
    narrower; thousands; names narrower still; millions. Each figure says its unit (`$130,734k`)."""
    from .comparison import UNITS, scale_of

    amounts = list(totals)
    cheap = [unit for unit in UNITS if any(scale_of(a, unit)[0] == unit for a in amounts)
             and all(a >= 100 * size for a in amounts for suffix, size in [scale_of(a, unit)] if suffix)]
    return [("", None), *((unit, None) for unit in cheap), *((unit, _EASY) for unit in cheap), ("", _EASY),
            ("k", _EASY), ("k", _HARD), ("M", _HARD)]


def _first_fitting(lay_out: Callable[[Any, Any, bool], tuple[_Laid, str | None]],
                   ladder: Sequence[tuple[Any, Any]]) -> tuple[_Laid, str]:
    """The first layout of `ladder` whose table fits 100 columns, else the last, printed wider: what no layout
    fits is never cut. `lay_out(unit, widths, or_wider)` gives (layout, table or None when it does not fit)."""
    for unit, widths in ladder[:-1]:
        laid, table = lay_out(unit, widths, False)
        if table is not None:
            return laid, table
    laid, table = lay_out(*ladder[-1], True)
    assert table is not None
    return laid, table


def _narrowing(names: tuple[int, int, int], notes: int,
               widths: tuple[tuple[int, int], int, int] | None) -> list[tuple[int, int]]:
    """The `text_table` steps for the (instance, where, provider) columns and the note markers' column down to
    `widths`; none for names at their usual width."""
    if widths is None:
        return []
    instance, where, provider = names
    (first, then), narrowest_where, narrowest_provider = widths
    return [(where, narrowest_where), (instance, first), (provider, narrowest_provider), (notes, 8),
            (instance, then), (notes, 0)]


@render.register(Comparison)
def render_comparison(result: Comparison, *, color: bool = False, explain: bool = False, **_options: Any) -> str:
    """Totals, ranks and note markers whole, within 100 columns: when the figures are wide, names are cut (with
    "…") and markers fold between markers, then totals go to thousands, then millions, each figure with its
    unit (`$130,734k`), said in the legend."""
    from .comparison import BEST, layout, wrap

    views = {"": layout(result)}

    def laid_out(unit: str, widths: tuple[tuple[int, int], int, int] | None, or_wider: bool):
        if unit not in views:
            views[unit] = layout(result, unit=unit)
        view = views[unit]
        notes = len(view.headers) - 1
        sections = [("not ranked: unverified, stale or derived prices (include-unverified ranks them)", view.untrusted)]
        return view, fitting_table(view.headers, view.rows, right=set(view.money_columns), color=color,
                                   sections=sections, highlight=BEST, whole={0, *view.money_columns},
                                   clip={1: 14, 2: 22, 3: 12}, fold={notes},
                                   narrow=_narrowing((2, 3, 1), notes, widths), or_wider=or_wider)

    view = views[""]
    lines = [view.title]
    if not view.rows and not view.untrusted:
        lines += wrap(f"no options: {_reason(result.quote)}")
        return "\n".join(lines + [line for notice in view.notices for line in wrap(f"note: {notice}")])
    totals = [option.whole for row in result.rows + result.untrusted for _, option in row.cells]
    view, table = _first_fitting(laid_out, _ladder(totals))
    lines.append(table)
    if view.more:
        lines += wrap(f"{plural(view.more, 'more offer')}: top={len(view.rows) + view.more} shows them; `list` shows "
                      "every option with its region")
    for line in view.legend:
        lines += wrap(line)
    for notice in view.notices:
        lines += wrap(f"note: {notice}")
    if explain:
        lines += _parts_explained([(str(rank), row.best) for rank, row in enumerate(result.rows, 1)])
    return "\n".join(lines)


def _parts_explained(ranked: list[tuple[str, Any]]) -> list[str]:
    """What `explain` adds under a quote with job data (#33): each shown option's parts, charge by charge."""
    from .comparison import wrap
    from .money import format_money

    lines: list[str] = []
    for rank, option in ranked:
        parts = option.parts
        if parts is None:
            continue
        if not lines:
            lines += wrap("the whole bill: total = GPUs + storage + transfer (storage: GB × price per GB-month × "
                          "job hours / 730)")
        storage, transfer = parts.part("storage"), parts.part("transfer")
        said = [f"GPUs {format_money(option.total, option.currency)}",
                *(f"{name} {'unknown' if amount is None else format_money(amount, option.currency)}"
                  for name, amount in (("storage", storage), ("transfer", transfer)))]
        lines += wrap(f"{rank} {option.provider} {option.instance_type} ({option.pricing_model}, "
                      f"{option.region}): {' + '.join(said)} = {format_money(option.whole, option.currency)}"
                      f"{'' if parts.complete else ' + unknown'}")
        lines += [folded for cost in parts.costs for folded in wrap(f"    {words(cost)}", "      ")]
    return lines


@render.register(Quote)
def render_quote(result: Quote, *, color: bool = False, explain: bool = False, **_options: Any) -> str:
    """The flat list (`list`): one row per option, notes as footnote markers under the table (a note every
    option carries: once, above them); totals with cents, or as the comparison gives way to fit 100 columns."""
    from .comparison import format_total, job, unit_legend, wrap

    options = result.options
    memory = next((o.gpu_memory_gib for o in options), None)
    lines = [f"{job(result.request, memory)} — {plural(len(options), 'option')}, verified first, cheapest first "
             f"({result.currency})"]
    notes = [[words(note) for note in o.notes] for o in options]
    shared = [n for n in notes[0] if all(n in said for said in notes[1:])] if len(options) > 1 else []
    markers: dict[str, int] = {}
    marks = [",".join(str(markers.setdefault(n, len(markers) + 1)) for n in said if n not in shared)
             for said in notes]
    headers = ["#", "provider", "region/zone", "instance", "n", "pricing", "hourly", "total", "per GPU-h", "saves",
               "notes"]

    def laid_out(unit: str | None, widths: tuple[tuple[int, int], int, int] | None, or_wider: bool):
        rows = [[str(rank), o.provider, o.zone or o.region, o.instance_type, str(o.instances), o.pricing_model,
                 format_rate(o.hourly, o.currency),
                 format_money(o.whole, o.currency) if unit is None else format_total(o.whole, o.currency, unit),
                 format_money(o.per_gpu_hour, o.currency, places=4), format_percent(o.savings_vs_on_demand), mark]
                for rank, (o, mark) in enumerate(zip(options, marks), start=1)]
        return unit, fitting_table(headers, rows, right={0, 4, 6, 7, 8, 9}, color=color,
                                   whole={0, 4, 6, 7, 8, 9}, clip={1: 14, 2: 14, 3: 22}, fold={10},
                                   narrow=_narrowing((3, 2, 1), 10, widths), or_wider=or_wider)

    if options:
        unit, table = _first_fitting(laid_out, [(None, None), *_ladder(o.whole for o in options)])  # cents first
        lines.append(table)
        if unit:
            lines += wrap(unit_legend(unit, result.currency))
        if any(o.parts is not None for o in options):  # the whole bill (#33)
            lines += wrap("totals are the whole job: GPUs + disks + data, the parts no source gives left out and "
                          "ranked last (`explain` shows each part's arithmetic)")
    lines += [folded for note in shared for folded in wrap(f"all rows: {note}")]
    for note, number in markers.items():
        lines += wrap(f"{number} {note}")
    for notice in result.notices:
        lines += wrap(f"note: {words(notice)}")
    if explain:
        lines += _parts_explained([(str(rank), option) for rank, option in enumerate(options, 1)])
    return "\n".join(lines)


def _yes_no(value: bool | None) -> str:
    return {True: "yes", False: "NO", None: "-"}[value]


@register_by_name(render, "gpu_assist.recommendation.Recommendation")
def render_recommendation(result: Recommendation, *, explain: bool = False, color: bool = False,
                          **_options: Any) -> str:
    """Plans as a 100-column table: durations as people read them, notes as footnote markers."""
    from .comparison import format_total, wrap
    from .money import format_hours, format_plan_cost

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
                                narrow=[*_narrowing((4, 3, 2), notes, _EASY),
                                        *_narrowing((4, 3, 2), notes, _HARD)]))
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
        for line in result.not_planned:
            lines += wrap(f"  {line}", "    ")
    lines.append("reasoning:")
    for line in result.reasoning:
        lines += wrap(f"  {line}", "    ")
    lines.append("assumptions (override with name=value):")
    for line in result.assumptions:
        lines += wrap(f"  {line}", "    ")
    if explain:
        lines += _explained(result)
    return "\n".join(lines)


def _explained(result: Recommendation) -> list[str]:
    """What `--explain` adds under a recommendation: each timed plan's billing, then the formulas (the
    recommendation module's docstring, refolded)."""
    from .. import recommendation

    lines: list[str] = []
    billed = [(rank, plan) for rank, plan in enumerate(result.plans, 1) if plan.billed_hours is not None]
    if billed:
        lines.append("billing (total = hourly × billed hours: the plan's hours rounded up to its billing unit):")
        lines += [f"  {rank:<3} {plan.hours:,.2f} h → {plan.billed_hours:,.2f} h billed × "
                  f"{format_money(plan.hourly, plan.currency, places=4)}/h = "
                  f"{format_money(plan.total or Decimal(0), plan.currency)}" for rank, plan in billed]
    lines += _arithmetic(result)
    lines.append("")
    lines += _reflowed(recommendation.__doc__ or "")
    return lines


def _arithmetic(result: Recommendation) -> list[str]:
    """Each plan's scaling over hosts and its spot interruptions, worked through with the sources of their
    numbers (`sizing.scaling`, `sizing.spot_overhead`, `sizing.finish_chance`)."""
    from .comparison import wrap

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
    from .comparison import wrap

    paragraphs: list[str] = []
    for line in document.strip().splitlines():
        stripped = line.strip()
        if not stripped or line.startswith("- ") or not paragraphs or not paragraphs[-1]:
            paragraphs.append(stripped)
        else:
            paragraphs[-1] += " " + stripped
    return [folded for paragraph in paragraphs
            for folded in wrap(paragraph, "  " if paragraph.startswith("- ") else "")]


@register_by_name(render, "gpu_assist.tco.TcoResult")
def render_tco(result: TcoResult, **_options: Any) -> str:
    """The cost table, then its notes; the cloud offer's name goes below it, folded, as it can be any length."""
    from .comparison import wrap

    i = result.inputs
    c = i.currency

    def money(amount):
        return format_money(amount, c)

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


def _reason(quote: Quote) -> str:
    """Why a quote has no options, in words."""
    return words(quote.empty_reason) if quote.empty_reason else "no offer matches"


@render.register(HelpCommand)
def _help(result: HelpCommand, **_options: Any) -> str:
    return result.text
