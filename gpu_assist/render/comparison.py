"""The comparison as cells and a legend, shared by the text, Markdown, CSV and Slack renderers.

Notes become footnote markers (1, 2, …) with one legend line each, so a row stays one line wide; what
belongs to a pricing model (spot interruptions, reserved terms, monthly billing) is said once per column, and
a note every ranked row carries (a currency conversion) once at the head of the legend, not as a marker on
every row.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from decimal import Decimal

from ..facts import PricingModel, SpotInterruption
from ..plural import plural
from ..pricing.compare import Comparison, ComparisonRow, Ranking
from ..pricing.price_table import HOURS_PER_YEAR
from ..pricing.query import HOUR_S, Query, format_duration
from ..pricing.quote import QuoteOption
from .money import format_hours, format_money
from .notes import where, words
from .tables import width

HEADERS = {"on-demand": "on-demand", "spot": "spot", "reserved-1y": "res. 1y", "reserved-3y": "res. 3y",
           "monthly": "monthly"}
BEST = "*"
_SORTED = {"total": "cheapest first", "price": "lowest hourly price first", "per-gpu": "lowest per-GPU price first",
           "provider": "by provider"}
# What a comparison sorted by its totals ranks by (`compare.Ranking`): its title's words, and its legend's.
_RANKED = {Ranking.COUNT_ON: "cheapest non-spot first",
           Ranking.EXPECTED_SPOT: "expected spot cost first"}
_RANKED_LEGEND = {
    Ranking.COUNT_ON: "ranked by the cheapest way to buy that cannot be taken away during the job (on-demand, a "
                      "term, monthly; a marketplace ask with them); one host before a split; spot stays in its "
                      "column (ask `spot` to rank by it)",
    Ranking.EXPECTED_SPOT: "ranked by the job's expected cost on spot: its total plus the time interruptions and "
                           "checkpoints add (AWS Spot Advisor band where published, else 0.05 interruptions per "
                           "instance-hour; a checkpoint every 30 min); no Local Zone unless named (all-regions "
                           "shows them)"}


# Units a text table may show totals in when whole figures would not fit 100 columns, smallest first.
UNITS = {"k": (Decimal(1000), "thousands"), "M": (Decimal(1000000), "millions")}


def scale_of(amount: Decimal, unit: str) -> tuple[str, Decimal]:
    """The suffix and size `amount` is shown in when totals are in `unit` (of UNITS; "" for whole figures): the
    unit for amounts of at least one, a smaller unit (or none, size 1) for smaller amounts."""
    largest = UNITS[unit][0] if unit else Decimal(0)
    return next(((suffix, size) for suffix, (size, _) in reversed(UNITS.items()) if size <= largest and amount >= size),
                ("", Decimal(1)))


def format_total(amount: Decimal, currency: str, unit: str = "") -> str:
    """Whole units from 1,000 up (a comparison reads the thousands), cents below. With a `unit` of UNITS,
    amounts of at least one unit are shown in it (`$130,734k`; one decimal below ten: `$2.7M`), smaller ones
    in a smaller unit or whole: every figure says its own unit."""
    suffix, size = scale_of(amount, unit)
    if suffix:
        scaled = amount / size
        return format_money(scaled, currency, places=1 if scaled < 10 else 0) + suffix
    return format_money(amount, currency, places=0 if amount >= 1000 else 2)


def unit_legend(unit: str, currency: str) -> str:
    """What a table whose totals are in thousands (or millions) says about them."""
    names = [f"{suffix}: {name}" for suffix, (size, name) in UNITS.items() if size <= UNITS[unit][0]]
    return (f"{', '.join(names)} of {currency}, rounded to fit {width()} columns (CSV and JSON give every total "
            "exactly)")


@dataclass(frozen=True)
class Layout:
    """What every medium shows: headers, ranked rows, unverified/stale rows, legend lines."""

    title: str
    headers: tuple[str, ...]
    money_columns: tuple[int, ...]  # indexes of right-aligned columns
    rows: tuple[tuple[str, ...], ...]
    untrusted: tuple[tuple[str, ...], ...]
    legend: tuple[str, ...]
    notices: tuple[str, ...]
    more: int


def job(request: Query, gpu_memory_gib: float | None) -> str:
    """What a quote prices, as its titles say it: `8×A100 40 GB for 72h`; the memory only where the GPU's
    name does not already say it (`1×A100-80GB`)."""
    named = gpu_memory_gib is not None and f"{gpu_memory_gib:g}GB" in request.gpu.upper()
    memory = "" if gpu_memory_gib is None or named else f" {gpu_memory_gib:g} GB"
    return f"{request.count}×{request.gpu}{memory} for {job_length(request.duration_s)}"


def job_length(duration_s: int) -> str:
    """`72h` as the grammar writes it; from 1,000 h also as people read it: `43800h (5.0 years)`."""
    hours = duration_s / HOUR_S
    return format_duration(duration_s) + (f" ({format_hours(hours)})" if hours >= 1000 else "")


def title(comparison: Comparison) -> str:
    memory = next((r.gpu_memory_gib for r in comparison.rows + comparison.untrusted), None)
    count = len(comparison.rows) + comparison.more
    order = _RANKED[comparison.ranking] if comparison.sort == "total" else _SORTED[comparison.sort]
    return f"{job(comparison.request, memory)} — {plural(count, 'offer')}, {order}, job totals " \
        f"({comparison.currency})"


def _cell(option: QuoteOption | None, model: str, best: QuoteOption, currency: str, unit: str) -> str:
    if option is None:
        return "unknown" if PricingModel(model).reserved else ""
    return format_total(option.whole, currency, unit) + (BEST if option is best else "")


def data_part(option: QuoteOption, currency: str, unit: str = "") -> str:
    """The disks and data of an option's total: the amount, `unknown`, or what is known then `+?`."""
    parts = option.parts
    if parts is None:
        return ""
    if parts.complete:
        return format_total(parts.known, currency, unit)
    return "unknown" if not parts.known else format_total(parts.known, currency, unit) + "+?"


def has_parts(comparison: Comparison) -> bool:
    """Whether the job's disks and data are priced (a quote with `disk=`, `data-in=`, … words)."""
    return any(option.parts is not None for option in comparison.quote.options)


def shared_notes(comparison: Comparison) -> tuple[tuple[str, ...], bool]:
    """The notes every ranked row carries (with two rows or more), and whether every unranked row carries them
    too: said once at the head of the legend instead of a marker on each row."""
    ranked = [said(row) for row in comparison.rows]
    if len(ranked) < 2:
        return (), True
    shared = tuple(n for n in ranked[0] if all(n in notes for notes in ranked[1:]))
    return shared, all(n in said(row) for row in comparison.untrusted for n in shared)


def said(row: ComparisonRow) -> tuple[str, ...]:
    """The words of a row's notes, in order."""
    return tuple(words(note) for note in row.notes)


def layout(comparison: Comparison, *, unit: str = "") -> Layout:
    """The comparison's cells and legend; `unit` ("k", "M") shows totals in thousands or millions (text only,
    when whole figures would not fit)."""
    columns = comparison.columns
    currency = comparison.currency
    parts = has_parts(comparison)
    markers: dict[str, int] = {}
    shared, everywhere = shared_notes(comparison)

    def line(rank: str, row: ComparisonRow) -> tuple[str, ...]:
        shared_here = shared if row.ranked or everywhere else ()
        marks = [str(markers.setdefault(note, len(markers) + 1)) for note in said(row) if note not in shared_here]
        instance = row.instance_type if row.instances == 1 else f"{row.instances}× {row.instance_type}"
        best, cells = row.best, dict(row.cells)
        data = (data_part(best, currency, unit),) if parts else ()
        return (rank, row.provider, instance, where(best),
                *(_cell(cells.get(model), model, best, currency, unit) for model in columns), *data,
                ",".join(marks))

    rows = tuple(line(str(i), row) for i, row in enumerate(comparison.rows, 1))
    untrusted = tuple(line("-", row) for row in comparison.untrusted)
    legend = [f"{BEST} the price each row ranks by; where: the region (or zone) of that price, or any of the "
              "regions that sell it at one price"]
    if comparison.sort == "total":
        legend.append(_RANKED_LEGEND[comparison.ranking])
    if unit:
        legend.append(unit_legend(unit, currency))
    if parts:
        legend.append("totals are the whole job: GPUs + disks + data; disk+data: that part of the * cell "
                      "(`explain` shows its arithmetic); unknown (+?): no source gives a part, the total leaves "
                      "it out and the row ranks after rows whose parts are all known")
    legend += [f"{'all rows' if everywhere else 'ranked rows'}: {note}" for note in shared]
    every = comparison.rows + comparison.untrusted
    if "spot" in columns and any(r.cell("spot") for r in every):
        legend.append(words(SpotInterruption()))
    terms = [model for model in map(PricingModel, columns) if model.term_years]
    if terms:
        line_ = ", ".join(HEADERS[m] for m in terms) + ": the whole term is paid (" + \
            " / ".join(f"{HOURS_PER_YEAR * (m.term_years or 0):,} h" for m in terms) + ") whatever the job's length"
        if any(r.cell(m) is None for r in every for m in terms):
            line_ += "; unknown: no source in the catalogs gives that offer's reserved price"
        legend.append(line_)
    if "monthly" in columns:
        legend.append("monthly: billed per whole month (730 h)")
    legend += [f"{number} {note}" for note, number in markers.items()]
    return Layout(title=title(comparison),
                  headers=("#", "provider", "instance", "where", *(HEADERS[m] for m in columns),
                           *(("disk+data",) if parts else ()), "notes"),
                  money_columns=tuple(range(4, 4 + len(columns) + parts)), rows=rows, untrusted=untrusted,
                  legend=tuple(legend), notices=tuple(words(n) for n in comparison.notices),
                  more=comparison.more)


def wrap(text: str, indent: str = "  ") -> list[str]:
    """A legend or note line folded to the width (`tables.width`)."""
    return textwrap.wrap(text, width(), subsequent_indent=indent, break_on_hyphens=False) or [""]
