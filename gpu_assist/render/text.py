"""Plain-text tables for the terminal."""

from __future__ import annotations

from ..pricing import Quote
from ..request import format_duration
from .money import format_money, format_percent


def table(headers: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> str:
    """Columns padded to their widest cell; columns in `right` aligned right."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]

    def line(cells):
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def render_quote(result: Quote) -> str:
    request = result.request
    title = f"{request.count}x{request.gpu} for {format_duration(request.duration_s)} — " \
            f"{len(result.options)} options, cheapest first ({result.currency})"
    lines = [title]
    if result.options:
        rows = []
        for rank, o in enumerate(result.options, start=1):
            rows.append([
                str(rank), o.provider, o.zone or o.region, o.instance_type, str(o.instances),
                f"{o.gpu_count}x{o.gpu} {o.gpu_memory_gib:g}GB", o.pricing_model,
                format_money(o.hourly, o.currency, places=4 if o.hourly < 1 else 2),
                format_money(o.total, o.currency), format_money(o.per_gpu_hour, o.currency, places=4),
                format_percent(o.savings_vs_on_demand), "; ".join(o.notes),
            ])
        headers = ["#", "provider", "region/zone", "instance", "n", "GPUs/instance", "pricing", "hourly",
                   "total", "per GPU-h", "saves", "notes"]
        lines.append(table(headers, rows, right={0, 4, 7, 8, 9, 10}))
    for notice in result.notices:
        lines.append(f"note: {notice}")
    return "\n".join(lines)
