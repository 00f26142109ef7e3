"""The notebook's spend panel: `spend <period> [by=…]` through the shared grammar, shown as a daily chart of
month-to-date spend against the budget (HTML bars like the quote chart: no plotting dependency) and the text
every face shows."""

from __future__ import annotations

import datetime as dt
import html
from dataclasses import replace
from decimal import Decimal

import ipywidgets as widgets

from ..commands import Context, SpendCommand
from ..commands.grammar import parse_spend
from ..commands.quote_grammar import words_of
from ..render import operations as _operations  # noqa: F401 - register their texts
from ..render import plans as _plans  # noqa: F401 - register their texts
from ..render.money import format_money
from ..render.text import render
from ..team.spending import GROUPS, SpendReport
from .panels import _Panel, show_html


def daily_spend_chart(daily: list[tuple[dt.date, Decimal]], currency: str, budget: Decimal | None) -> str:
    """One bar per day of spend so far that day, a running total beside it, and a red line where the running
    total meets `budget` (the monthly budget the period is watched against)."""
    if not daily:
        return ""
    running, total = [], Decimal(0)
    for _day, cost in daily:
        total += cost
        running.append(total)
    scale = max([*running, budget or Decimal(0)]) or Decimal(1)
    rows = []
    for (day, cost), so_far in zip(daily, running, strict=True):
        width = float(100 * so_far / scale)
        marker = "" if budget is None else (f'<span style="position:absolute;left:{float(100 * budget / scale):.1f}%;'
                                            'top:0;height:12px;border-left:2px solid #c62828"></span>')
        rows.append(f'<div style="display:flex;align-items:center;gap:6px;font-size:12px">'
                    f'<span style="width:6em">{day:%m-%d}</span>'
                    f'<span style="position:relative;width:50%;height:12px">'
                    f'<span style="position:absolute;left:0;top:1px;background:#1976d2;height:10px;width:{width:.1f}%">'
                    f'</span>{marker}</span>'
                    f'<span>{html.escape(format_money(cost, currency))} that day, '
                    f'{html.escape(format_money(so_far, currency))} so far</span></div>')
    legend = "" if budget is None else f'<div style="font-size:11px;color:#c62828">budget ' \
                                        f'{html.escape(format_money(budget, currency))}</div>'
    return '<div class="gpu-assist-spend">' + "".join(rows) + legend + "</div>"


class SpendPanel(_Panel):
    def __init__(self, context: Context | None = None):
        self.period = widgets.Text(value="mtd", description="period", placeholder="mtd, 2026-11, 7d, yesterday")
        self.by = widgets.Dropdown(options=["all", *GROUPS], value="all", description="by")
        super().__init__(context, [widgets.HBox([self.period, self.by])], "Show spend")

    def command(self) -> SpendCommand:
        """The typed period read by the grammar as `spend`'s words; the grouping chosen from the grammar's own."""
        command = parse_spend(words_of(self.period.value))
        return command if self.by.value == "all" else replace(command, by=self.by.value)

    def show(self, result: SpendReport) -> None:
        team = next((b.amount for b in result.budgets if b.name == "*"), None)
        budget = team if team is not None else (result.budgets[0].amount if result.budgets else None)
        show_html(daily_spend_chart(list(result.daily), result.currency, budget))
        show_html(f"<pre>{html.escape(render(result))}</pre>")
