"""Spend periods: what a person names (`mtd`, `2026-11`, `7d`, `today`, `yesterday`) parsed once, at the face, into
an `AskedPeriod`, which a clock then places as a `Period`, [start, end) in UTC. The words are read once; no layer
keeps them as text to parse again."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from enum import StrEnum

from ..errors import ParseError

PERIOD_EXAMPLE = "spend 2026-11"


@dataclass(frozen=True)
class Period:
    """[start, end) in UTC, and the words the user gave for it."""

    start: dt.datetime
    end: dt.datetime
    label: str

    def days(self) -> list[dt.date]:
        first, last = self.start.date(), (self.end - dt.timedelta(microseconds=1)).date()
        return [first + dt.timedelta(days=n) for n in range((last - first).days + 1)]


def month_start(moment: dt.datetime) -> dt.datetime:
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_month(moment: dt.datetime) -> dt.datetime:
    start = month_start(moment)
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)


class PeriodKind(StrEnum):
    MONTH_TO_DATE = "mtd"
    TODAY = "today"
    YESTERDAY = "yesterday"
    MONTH = "month"          # a calendar month: `month` says which
    LAST_DAYS = "days"       # the last `days` days up to now


@dataclass(frozen=True)
class AskedPeriod:
    """A period as named, before a clock places it: `month` for a calendar month (its first day), `days` for the
    last N days."""

    kind: PeriodKind = PeriodKind.MONTH_TO_DATE
    month: dt.date | None = None
    days: int = 0

    def at(self, now: dt.datetime) -> Period:
        """The period placed on the clock: a month not yet over ends at `now`, one not begun is empty."""
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        if self.kind is PeriodKind.TODAY:
            return Period(midnight, now, f"{now:%Y-%m-%d} so far")
        if self.kind is PeriodKind.YESTERDAY:
            return Period(midnight - dt.timedelta(days=1), midnight, f"{midnight - dt.timedelta(days=1):%Y-%m-%d}")
        if self.kind is PeriodKind.MONTH and self.month is not None:
            start = dt.datetime(self.month.year, self.month.month, 1, tzinfo=dt.timezone.utc)
            return Period(start, min(next_month(start), max(now, start)), f"{start:%Y-%m}")
        if self.kind is PeriodKind.LAST_DAYS:
            return Period(now - dt.timedelta(days=self.days), now, f"last {self.days} days")
        return Period(month_start(now), now, f"{now:%Y-%m} to date")

    def __str__(self) -> str:
        """The words that name it again (`2026-11`, `7d`), for a button or a link that asks for it."""
        if self.kind is PeriodKind.MONTH and self.month is not None:
            return f"{self.month:%Y-%m}"
        return f"{self.days}d" if self.kind is PeriodKind.LAST_DAYS else self.kind.value


def parse_period(text: str) -> AskedPeriod:
    """`mtd` (the default), `2026-11`, `7d`, `yesterday`, `today`; ParseError with an example otherwise."""
    word = (text or "mtd").strip().lower()
    if word in (PeriodKind.MONTH_TO_DATE, PeriodKind.TODAY, PeriodKind.YESTERDAY):
        return AskedPeriod(PeriodKind(word))
    month = re.fullmatch(r"(\d{4})-(\d{2})", word)
    if month and 1 <= int(month[2]) <= 12 and int(month[1]) >= 2000:
        return AskedPeriod(PeriodKind.MONTH, month=dt.date(int(month[1]), int(month[2]), 1))
    days = re.fullmatch(r"(\d{1,4})d", word)
    if days and int(days[1]) >= 1:
        return AskedPeriod(PeriodKind.LAST_DAYS, days=int(days[1]))
    raise ParseError(f"unknown period '{text[:40]}'", hint="a month (2026-11), a number of days (7d), mtd, today "
                     "or yesterday", example=PERIOD_EXAMPLE)
