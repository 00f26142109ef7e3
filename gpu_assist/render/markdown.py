"""Markdown tables for pasting into a ticket or a wiki: the comparison, the flat list, the plans."""

from __future__ import annotations

from ..compare import Comparison
from ..pricing import Quote


def _table(headers, rows, right=()) -> list[str]:
    def escape(cell) -> str:
        return str(cell).replace("|", "\\|")

    align = ["---:" if i in right else "---" for i in range(len(headers))]
    return ["| " + " | ".join(map(escape, headers)) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(map(escape, row)) + " |" for row in rows)]


def render_comparison(result: Comparison) -> str:
    from .comparison import layout

    view = layout(result)
    lines = [f"**{view.title}**", "", *_table(view.headers, view.rows, set(view.money_columns))]
    if view.untrusted:
        lines += ["", "Not ranked: unverified or stale prices", "",
                  *_table(view.headers, view.untrusted, set(view.money_columns))]
    lines.append("")
    if view.more:
        lines.append(f"- {view.more} more offers not shown")
    lines += [f"- {line}" for line in (*view.legend, *view.notices)]
    return "\n".join(lines)


def render(result, **_options) -> str:
    """Quotes (comparison or list) and recommendations as Markdown; anything else is refused."""
    from ..recommend import Recommendation
    from .tabular import plan_table, quote_table

    if isinstance(result, Comparison):
        return render_comparison(result)
    if isinstance(result, (Quote, Recommendation)):
        headers, rows = quote_table(result) if isinstance(result, Quote) else plan_table(result)
        notes = result.notices if isinstance(result, Quote) else result.assumptions
        return "\n".join([*_table(headers, rows), "", *(f"- {n}" for n in notes)])
    from ..errors import GpuAssistError

    raise GpuAssistError("--format markdown is for quote and recommend", example="quote 8xA100 72h --format markdown")
