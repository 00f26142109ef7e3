"""Text for the terminal: tables in the terminal's width (`tables.width`: 100 columns unless the face says),
colour only on a terminal, plain tables elsewhere.

`render` picks the function for the result's type (`functools.singledispatch`); each takes the options it uses
(`explain`, `color`) and ignores the rest. Quotes are registered here; the other verbs' results in `plans.py` and
`operations.py`, which a face imports with the verb, so that showing a quote does not import their modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from functools import singledispatch
from typing import Any, TypeVar

from ..commands.objects import HelpCommand
from ..plural import plural
from ..pricing.compare import Comparison
from ..pricing.quote import Quote
from .comparison import BEST, UNITS, Layout, format_total, job, layout, scale_of, unit_legend, wrap
from .money import format_money, format_percent, format_rate
from .notes import where, words
from .tables import fitting_table


@singledispatch
def render(result: object, *, explain: bool = False, color: bool = False) -> str:
    """Any command result as text; `color` when the output is a terminal, `explain` for a plan's formulas."""
    raise TypeError(f"no text renderer for {type(result).__name__}")


# How a table wider than the width gives way (`_ladder`): the narrowest its (instance, where, provider) columns
# may become, first to widths still easy to read (rows stay one line while the instance keeps 18 characters;
# then the note markers fold between markers), then, once totals are in thousands, narrower still.
EASY_WIDTHS, HARD_WIDTHS = ((18, 16), 10, 10), ((10, 10), 6, 6)
_Laid = TypeVar("_Laid")


def _ladder(totals: Iterable[Decimal]) -> list[tuple[str, tuple[tuple[int, int], int, int] | None]]:
    """The layouts to try, in order, as (totals' unit, narrowest names or None for names at their usual width):
    whole figures; thousands or millions where that rounds no figure it scales by more than half a percent
    (every such figure is at least 100 of the unit), then with names narrower; whole figures with names
    narrower; thousands; names narrower still; millions. Each figure says its unit (`$130,734k`)."""
    amounts = list(totals)
    cheap = [unit for unit in UNITS if any(scale_of(a, unit)[0] == unit for a in amounts)
             and all(a >= 100 * size for a in amounts for suffix, size in [scale_of(a, unit)] if suffix)]
    return [("", None), *((unit, None) for unit in cheap), *((unit, EASY_WIDTHS) for unit in cheap), ("", EASY_WIDTHS),
            ("k", EASY_WIDTHS), ("k", HARD_WIDTHS), ("M", HARD_WIDTHS)]


def _first_fitting(lay_out: Callable[[Any, Any, bool], tuple[_Laid, str | None]],
                   ladder: Sequence[tuple[Any, Any]]) -> tuple[_Laid, str]:
    """The first layout of `ladder` whose table fits the width, else the last, printed wider: what no layout
    fits is never cut. `lay_out(unit, widths, or_wider)` gives (layout, table or None when it does not fit)."""
    for unit, widths in ladder[:-1]:
        laid, table = lay_out(unit, widths, False)
        if table is not None:
            return laid, table
    laid, table = lay_out(*ladder[-1], True)
    assert table is not None
    return laid, table


def narrowing(names: tuple[int, int, int], notes: int | None,
              widths: tuple[tuple[int, int], int, int] | None) -> list[tuple[int, int]]:
    """The `text_table` steps for the (instance, where, provider) columns and the note markers' column (None: a
    table without one) down to `widths`; none for names at their usual width."""
    if widths is None:
        return []
    instance, where, provider = names
    (first, then), narrowest_where, narrowest_provider = widths
    # `where` keeps "any of 17" on one line until every other column has given way
    steps = [(where, max(narrowest_where, 10)), (instance, first), (provider, narrowest_provider), (notes, 8),
             (instance, then), (notes, 0), (where, narrowest_where)]
    return [(column, narrowest) for column, narrowest in steps if column is not None]


@render.register(Comparison)
def render_comparison(result: Comparison, *, color: bool = False, explain: bool = False, **_options: Any) -> str:
    """Totals, ranks and note markers whole, within the width: when the figures are wide, names fold onto more
    lines and markers fold between markers, then totals go to thousands, then millions, each figure with its
    unit (`$130,734k`), said in the legend."""
    views = {"": layout(result)}

    def laid_out(unit: str, widths: tuple[tuple[int, int], int, int] | None,
                 or_wider: bool) -> tuple[Layout, str | None]:
        if unit not in views:
            views[unit] = layout(result, unit=unit)
        view = views[unit]
        notes = len(view.headers) - 1
        sections = [("not ranked: unverified, stale or derived prices (include-unverified ranks them)", view.untrusted)]
        return view, fitting_table(view.headers, view.rows, right=set(view.money_columns), color=color,
                                   sections=sections, highlight=BEST, whole={0, *view.money_columns},
                                   clip={1: 14, 2: 22, 3: 16}, fold={notes},
                                   narrow=narrowing((2, 3, 1), notes, widths), or_wider=or_wider)

    view = views[""]
    lines = wrap(view.title)
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
    """What `explain` adds under a quote with job data (the whole bill): each shown option's parts, charge by charge."""
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
    option carries: once, above them); totals with cents, or as the comparison gives way to fit the width."""
    options = result.options
    memory = next((o.gpu_memory_gib for o in options), None)
    lines = wrap(f"{job(result.request, memory)} — {plural(len(options), 'option')}, verified first, cheapest "
                 f"first ({result.currency})")
    notes = [[words(note) for note in o.notes] for o in options]
    shared = [n for n in notes[0] if all(n in said for said in notes[1:])] if len(options) > 1 else []
    markers: dict[str, int] = {}
    marks = [",".join(str(markers.setdefault(n, len(markers) + 1)) for n in said if n not in shared)
             for said in notes]
    headers = ["#", "provider", "region/zone", "instance", "n", "pricing", "hourly", "total", "per GPU-h", "saves",
               "notes"]

    def laid_out(unit: str | None, widths: tuple[tuple[int, int], int, int] | None,
                 or_wider: bool) -> tuple[str | None, str | None]:
        rows = [[str(rank), o.provider, where(o), o.instance_type, str(o.instances), o.pricing_model,
                 format_rate(o.hourly, o.currency),
                 format_money(o.whole, o.currency) if unit is None else format_total(o.whole, o.currency, unit),
                 format_money(o.per_gpu_hour, o.currency, places=4), format_percent(o.savings_vs_on_demand), mark]
                for rank, (o, mark) in enumerate(zip(options, marks), start=1)]
        return unit, fitting_table(headers, rows, right={0, 4, 6, 7, 8, 9}, color=color,
                                   whole={0, 4, 6, 7, 8, 9}, clip={1: 14, 2: 16, 3: 22}, fold={10},
                                   narrow=narrowing((3, 2, 1), 10, widths), or_wider=or_wider)

    if options:
        unit, table = _first_fitting(laid_out, [(None, None), *_ladder(o.whole for o in options)])  # cents first
        lines.append(table)
        if unit:
            lines += wrap(unit_legend(unit, result.currency))
        if any(o.parts is not None for o in options):  # the whole bill: disks and data besides the GPUs
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


def _reason(quote: Quote) -> str:
    """Why a quote has no options, in words."""
    return words(quote.empty_reason) if quote.empty_reason else "no offer matches"


@render.register(HelpCommand)
def _help(result: HelpCommand, **_options: Any) -> str:
    return result.text
