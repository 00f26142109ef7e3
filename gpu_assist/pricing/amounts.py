"""Numbers as people write them in a command: counts (`7B`, `1.5T`, `20k`, `2万`) and amounts of money (`5000`,
`5k`, `5000usd`, `¥30000`, `30k元`, `$5000` where no shell reads it first). Pure.

Shared by the words that take them: a workload's sizes, tokens and budget, a quote's `max-price=`, a TCO's
hardware and running costs; each caller passes the example its error should show.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from ..errors import ParseError

_SCALE = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "万": 1e4, "亿": 1e8}
_AMOUNT_RE = re.compile(r"^([$¥])?(\d+(?:\.\d+)?)([km万]?)(usd|cny|rmb|元)?$")
# What a shell leaves of an amount written with `$` (`$5000` → `000`, `$5k` → `k`, `$5` → nothing): `$` and the
# digit after it are a positional parameter, usually empty.
_EATEN_RE = re.compile(r"^(0(?=.)[\d.]*|\.\d+)?[km万]?(usd|cny|rmb|元)?$")  # a lone `0` may be meant


def format_count(value: float) -> str:
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def parse_count(text: str, what: str, example: str, like: str = "7B or 350M") -> float:
    """`7B`, `1.5T`, `20B`, `350M`, `2万` → a number; `like` shows the error what a `what` looks like."""
    match = re.match(r"^(\d+(?:\.\d+)?)([kmbgt万亿]?)$", text.strip().lower())
    if not match:
        raise ParseError(f"{what} '{text}' is not a number like {like}", example=example)
    return float(match.group(1)) * _SCALE[match.group(2)]


MAX_AMOUNT = Decimal(10) ** 12


def shell_hint(name: str) -> str:
    """Why `name=$5000` typed in a shell arrives as `name=000`, and what to write instead."""
    return f"a shell reads $5 in {name}=$5000 as a variable (leaving {name}=000): write {name}=5000 or {name}=5k"


def parse_amount(text: str, *, example: str, name: str = "budget",
                 zero_hint: str | None = None) -> tuple[Decimal, str | None]:
    """`5000`, `5k`, `$5000`, `¥30000`, `30000cny`, `3万元` → (amount above 0, currency or None). `name` is the
    option's key, for the messages; what looks like the rest of `$5000` after a shell (`000`, `k`, nothing) is
    explained as such, a plain `0` with `zero_hint` when given."""
    cleaned = text.strip().lower()
    eaten = shell_hint(name) if _EATEN_RE.match(cleaned) else None
    if not cleaned:
        raise ParseError(f"{name}= has no amount", hint=eaten, example=example)
    match = _AMOUNT_RE.match(cleaned)
    if not match:
        raise ParseError(f"{name} '{text}' is not an amount",
                         hint=eaten or "write it like 5000, 5k, 5000usd, ¥30000 or 30000cny", example=example)
    symbol, number, scale, code = match.groups()
    try:
        amount = Decimal(number) * Decimal(str(_SCALE[scale]))
    except InvalidOperation:
        raise ParseError(f"{name} '{text}' is not an amount", example=example) from None
    if not amount > 0:
        raise ParseError(f"{name} must be above 0, not '{text}'", hint=eaten or zero_hint, example=example)
    if amount > MAX_AMOUNT:  # beyond it, money no longer fits the decimal precision it is shown with
        raise ParseError(f"{name} '{text}' is more than {MAX_AMOUNT:,}", example=example)
    currency = {"$": "USD", "¥": "CNY"}.get(symbol or "") or {"usd": "USD", "cny": "CNY", "rmb": "CNY",
                                                               "元": "CNY"}.get(code or "")
    return amount.normalize(), currency
