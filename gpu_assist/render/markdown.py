"""Markdown tables for pasting into a ticket or a wiki: the comparison, the flat list, the plans."""

from __future__ import annotations

from functools import singledispatch
from typing import Any, Collection, Sequence

from ..errors import GpuAssistError
from ..pricing.compare import Comparison
from ..pricing.quote import Quote
from .comparison import layout
from .notes import words
from .tabular import quote_table


def markdown_table(headers: Sequence[Any], rows: Sequence[Sequence[Any]], right: Collection[int] = ()) -> list[str]:
    def escape(cell: Any) -> str:
        return str(cell).replace("|", "\\|")

    align = ["---:" if i in right else "---" for i in range(len(headers))]
    return ["| " + " | ".join(map(escape, headers)) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(map(escape, row)) + " |" for row in rows)]


@singledispatch
def render(result: object, **_options: Any) -> str:
    """Quotes (comparison or list) and recommendations (`plans.py`) as Markdown; anything else is refused."""
    raise GpuAssistError("--format markdown is for quote and recommend", example="quote 8xA100 72h --format markdown")


@render.register(Comparison)
def render_comparison(result: Comparison, **_options: Any) -> str:
    view = layout(result)
    lines = [f"**{view.title}**", "", *markdown_table(view.headers, view.rows, set(view.money_columns))]
    if view.untrusted:
        lines += ["", "Not ranked: unverified, stale or derived prices", "",
                  *markdown_table(view.headers, view.untrusted, set(view.money_columns))]
    lines.append("")
    if view.more:
        lines.append(f"- {view.more} more offers not shown")
    lines += [f"- {line}" for line in (*view.legend, *view.notices)]
    return "\n".join(lines)


@render.register(Quote)
def _quote(result: Quote, **_options: Any) -> str:
    headers, rows = quote_table(result)
    return "\n".join([*markdown_table(headers, rows), "", *(f"- {words(n)}" for n in result.notices)])
