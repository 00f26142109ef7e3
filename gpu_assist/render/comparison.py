"""The comparison as cells and a legend, shared by the text, Markdown, CSV and Slack renderers.

Notes become footnote markers (1, 2, …) with one legend line each, so a row stays one line wide; what
belongs to a pricing model (spot interruptions, reserved terms, monthly billing) is said once per column.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from decimal import Decimal

from ..compare import Comparison, ComparisonRow
from ..price_table import HOURS_PER_YEAR
from ..plural import plural
from ..request import format_duration
from .money import format_money

HEADERS = {"on-demand": "on-demand", "spot": "spot", "reserved-1y": "res. 1y", "reserved-3y": "res. 3y",
           "monthly": "monthly"}
BEST = "*"
WIDTH = 100
_SORTED = {"total": "cheapest first", "price": "lowest hourly price first", "per-gpu": "lowest per-GPU price first",
           "provider": "by provider"}


def format_total(amount: Decimal, currency: str) -> str:
    """Whole units from 1,000 up (a comparison reads the thousands), cents below."""
    return format_money(amount, currency, places=0 if amount >= 1000 else 2)


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


def title(comparison: Comparison) -> str:
    request = comparison.request
    memory = next((f" {r.gpu_memory_gib:g} GB" for r in comparison.rows + comparison.untrusted), "")
    count = len(comparison.rows) + comparison.more
    return (f"{request.count}×{request.gpu}{memory} for {format_duration(request.duration_s)} — "
            f"{plural(count, 'offer')}, {_SORTED[comparison.sort]}, totals for the job ({comparison.currency})")


def _cell(row: ComparisonRow, model: str, currency: str) -> str:
    option = row.cell(model)
    if option is None:
        return "unknown" if model.startswith("reserved") else ""
    return format_total(option.total, currency) + (BEST if option is row.best else "")


def layout(comparison: Comparison) -> Layout:
    columns = comparison.columns
    currency = comparison.currency
    markers: dict[str, int] = {}

    def line(rank: str, row: ComparisonRow) -> tuple[str, ...]:
        marks = [str(markers.setdefault(note, len(markers) + 1)) for note in row.notes]
        instance = row.instance_type if row.instances == 1 else f"{row.instances}× {row.instance_type}"
        best = row.best
        return (rank, row.provider, instance, best.zone or best.region,
                *(_cell(row, model, currency) for model in columns), ",".join(marks))

    rows = tuple(line(str(i), row) for i, row in enumerate(comparison.rows, 1))
    untrusted = tuple(line("-", row) for row in comparison.untrusted)
    legend = [f"{BEST} the cheapest way to buy each row; where: the region (or zone) of that price"]
    every = comparison.rows + comparison.untrusted
    if "spot" in columns and any(r.cell("spot") for r in every):
        legend.append("spot: may be interrupted; checkpoint your job")
    if any(m.startswith("reserved") for m in columns):
        terms = [m for m in columns if m.startswith("reserved")]
        line_ = ", ".join(HEADERS[m] for m in terms) + ": the whole term is paid (" + \
            " / ".join(f"{HOURS_PER_YEAR * int(m[-2]):,} h" for m in terms) + ") whatever the job's length"
        if any(r.cell(m) is None for r in every for m in terms):
            line_ += "; unknown: no source in the catalogs gives that offer's reserved price"
        legend.append(line_)
    if "monthly" in columns:
        legend.append("monthly: billed per whole month (730 h)")
    legend += [f"{number} {note}" for note, number in markers.items()]
    return Layout(title=title(comparison),
                  headers=("#", "provider", "instance", "where", *(HEADERS[m] for m in columns), "notes"),
                  money_columns=tuple(range(4, 4 + len(columns))), rows=rows, untrusted=untrusted,
                  legend=tuple(legend), notices=comparison.notices,
                  more=comparison.more)


def wrap(text: str, indent: str = "  ") -> list[str]:
    """A legend or note line folded to the 100-column limit."""
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False) or [""]
