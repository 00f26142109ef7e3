"""How old a price is, and how old each kind of figure may be before a quote stops ranking it. Pure.

A row's `as_of` is the day its source observed the price (a catalog commit's date, a page's, an API's answer);
where the source does not say, `as_of` is blank, the row says "date unknown" and its age counts from `imported`,
the day it entered the catalog. Prices do not all age alike (docs/data-sources.md, "How old a price may be"):

- a list price (on-demand, a reserved term, a monthly subscription) changes when the provider announces a new
  list, a few times a year at most: 180 days;
- a spot price follows supply and demand and moves within weeks: 30 days;
- a marketplace ask is one host's offer, gone when the host is rented or withdrawn: 7 days.

A figure older than its kind's limit is `StaleFigure` (a `facts.Stale`: quotes rank it after every price within
its limit, as they do all stale prices); one whose observation date is unknown also carries `UndatedFigure`.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass

from ..facts import DateUnknown, PricingModel, Stale
from .offers import MARKETPLACES, Offer


class FigureKind(enum.Enum):
    """What kind of figure a price is, for its age limit."""

    LIST = "list price"
    SPOT = "spot price"
    ASK = "marketplace ask"


AGE_LIMIT_DAYS = {FigureKind.LIST: 180, FigureKind.SPOT: 30, FigureKind.ASK: 7}
_TERMS = (PricingModel.RESERVED_1Y, PricingModel.RESERVED_3Y)


class StaleFigure(Stale):
    """A price older than its kind's age limit (`limit_days`); `observed` False when `as_of` is the import date
    because the source gives none."""

    limit_days: int = 0
    observed: bool = True


class UndatedFigure(DateUnknown):
    """The source gives no date for the price; `imported` is the day it entered the catalog, its age's start."""

    imported: str


@dataclass(frozen=True)
class FigureDate:
    """A price's date for its age: the observed day, else the import day (`observed` False); None: neither."""

    day: dt.date | None
    observed: bool
    kind: FigureKind

    @property
    def limit_days(self) -> int:
        return AGE_LIMIT_DAYS[self.kind]

    def age_days(self, today: dt.date) -> int | None:
        return None if self.day is None else (today - self.day).days

    def stale(self, today: dt.date) -> bool:
        age = self.age_days(today)
        return age is not None and age > self.limit_days


def figure_kind(offer: Offer, model: PricingModel) -> FigureKind:
    """A marketplace's every price is an ask; elsewhere spot is a spot price and the rest are list prices."""
    if offer.provider in MARKETPLACES:
        return FigureKind.ASK
    return FigureKind.SPOT if model == PricingModel.SPOT else FigureKind.LIST


def figure_date(offer: Offer, model: PricingModel) -> FigureDate:
    """The date `model`'s price of `offer` is aged from: a reserved term from a source of its own is dated by it."""
    kind = figure_kind(offer, model)
    if model in _TERMS and offer.reserved_source:
        return FigureDate(_day(offer.reserved_as_of), True, kind)
    if offer.as_of:
        return FigureDate(_day(offer.as_of), True, kind)
    return FigureDate(_day(offer.imported), False, kind)


def age_notes(offer: Offer, model: PricingModel, today: dt.date) -> list[DateUnknown | Stale]:
    """What a quote says of a price's date: undated (and since when it is in the catalog), stale past its limit."""
    date = figure_date(offer, model)
    notes: list[DateUnknown | Stale] = []
    if not date.observed:
        notes.append(UndatedFigure(offer.imported) if date.day else DateUnknown())
    age = date.age_days(today)
    if date.day is not None and age is not None and age > date.limit_days:
        notes.append(StaleFigure(date.day.isoformat(), age, model in _TERMS and bool(offer.reserved_source),
                                 date.limit_days, date.observed))
    return notes


def _day(text: str) -> dt.date | None:
    return dt.date.fromisoformat(text) if text else None
