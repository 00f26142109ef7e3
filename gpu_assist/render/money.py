"""Money and ratios as people read them; rounding happens here and nowhere else."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING, Callable

from ..catalog.fx import rate_places

if TYPE_CHECKING:
    from ..plan.plans import Plan

_SYMBOL = {"USD": "$", "CNY": "¥"}


def format_money(amount: Decimal, currency: str, *, places: int = 2) -> str:
    """`$2,167.04`, `¥14,400.00`; sub-cent hourly rates keep more places when asked."""
    quantum = Decimal(1).scaleb(-places)
    rounded = amount.quantize(quantum, rounding=ROUND_HALF_EVEN)
    return f"{_SYMBOL.get(currency, currency + ' ')}{rounded:,.{places}f}"


def format_rate(amount: Decimal, currency: str) -> str:
    """A price per hour as every face shows it: `$21.96`, `$0.7212`."""
    return format_money(amount, currency, places=rate_places(amount))


def restate_money(text: str, written_in: str, currency: str,
                  convert: Callable[[Decimal], Decimal] = lambda amount: amount) -> str:
    """The amounts `text` writes in `written_in` (`$214,419.99 upfront`, `$88.4899999025753/h`: a catalog note
    quoting its source) shown in `currency` by the quote's rules: cents, four places for a rate per hour (two
    sources' hourly prices that disagree stay apart). `convert` turns one amount into `currency`."""
    symbol = re.escape(_SYMBOL.get(written_in, written_in + " "))

    def restated(match: re.Match[str]) -> str:
        amount = convert(Decimal(match[1].replace(",", "")))
        return format_money(amount, currency, places=4 if match[2] else 2) + (match[2] or "")

    return re.sub(symbol + r"(\d[\d,]*(?:\.\d+)?)(/h)?", restated, text)


def format_percent(fraction: Decimal | None) -> str:
    if fraction is None:
        return ""
    return f"{(fraction * 100).quantize(Decimal(1), rounding=ROUND_HALF_EVEN):f}%"


def round_money(amount: Decimal | None, places: int) -> float | None:
    """A JSON number: rounded half-even at `places`."""
    if amount is None:
        return None
    return float(amount.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN))


def format_hours(hours: float | None) -> str:
    """A duration as people read it: `45 min`, `35.2 h`, `3.2 days`, `2.7 years`; `?` when unknown."""
    if hours is None:
        return "?"
    if hours < 1:
        return f"{max(1, round(hours * 60))} min"
    if hours < 48:
        return f"{hours:.1f} h"
    days = hours / 24
    if days < 365:
        return f"{days:,.1f} days"
    return f"{days / 365:,.1f} years"


def format_plan_cost(plan: Plan, money: Callable[[Decimal, str], str] = format_money) -> str:
    """A plan's total for the job, or its price per hour (`$3.42/h`) when the job's length is unknown: one unit
    per figure, said in the figure."""
    if plan.total is not None:
        return money(plan.total, plan.currency)
    return money(plan.hourly, plan.currency) + "/h"
