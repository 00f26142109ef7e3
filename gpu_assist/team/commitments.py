"""Commitments planned from the team's own use: how many instances of each type to cover with a 1- or 3-year
reservation (or a monthly contract), from the launches gpu-assist recorded. Pure: records, catalog offers and
`now` in, figures out.

The history is the last `months` whole calendar months before `now`'s, from the month of the first recorded
launch (months before the team used gpu-assist are not months of no use). Per instance type and region, each
month's instance-hours and what they cost at the prices the launches were approved at (the pay-as-you-go bill).

For a commitment at `rate` per instance-hour (the catalog's effective hourly reserved price, upfront spread over
the term; a monthly contract's price over 730 h), against the `paid` rate the launches averaged:
- break-even utilisation = rate ÷ paid: the share of its 730 hours a month a committed instance must be used to
  cost no more than paying as you go;
- covering k instances costs k × 730 × rate a month; the hours above k × 730 are still paid as you go;
- the saving is the history's pay-as-you-go bill minus that, averaged per month;
- the risk is the committed hours left unused if use falls to the history's lowest month, and what they cost.
The count recommended is the one that saves most over the history among those that cost no more than paying as
you go even in its lowest month: a team whose lowest month is nearly idle gets none, and the answer says why.
3-year terms are shown but recommended only after 12 months of history: three months say little about three
years. Terms are priced from the catalog, with each price's source and date; a missing price is said.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from .. import facts as f
from ..catalog.offers import Offer
from ..facts import PricingModel
from ..lifecycle.records import RequestRecord
from ..lifecycle.specs import LaunchSpec
from .periods import month_start, next_month
from .spending import hours_between, run_end

HOURS_PER_MONTH = Decimal(730)
TERMS = (PricingModel.RESERVED_1Y, PricingModel.RESERVED_3Y, PricingModel.MONTHLY)
MONTHS_FOR_3Y = 12


@dataclass(frozen=True)
class UsageMonth:
    month: dt.date     # its first day
    hours: Decimal     # instance-hours run
    paid: Decimal      # what they cost at the approved prices


@dataclass(frozen=True)
class Candidate:
    model: PricingModel
    rate: Decimal               # per instance-hour, effective
    paid_rate: Decimal          # per instance-hour, what the history paid on average
    break_even: Decimal         # share of a month's hours a committed instance must be used
    instances: int              # how many to commit (0: none breaks even in the lowest month)
    per_month: Decimal          # the commitment's cost a month
    saving_per_month: Decimal   # average over the history, against paying as you go
    unused_hours: Decimal       # committed hours left unused in the lowest month
    unused_cost: Decimal        # what those hours cost
    source: str
    as_of: str
    recommended: bool
    reasons: tuple[f.Fact, ...]  # why not recommended (or only a part)


@dataclass(frozen=True)
class UsageGroup:
    provider: str
    instance_type: str
    region: str
    months: tuple[UsageMonth, ...]
    candidates: tuple[Candidate, ...]
    missing: tuple[f.Fact, ...]   # terms the catalog has no price for

    @property
    def lowest_hours(self) -> Decimal:
        return min(month.hours for month in self.months)

    @property
    def paid_per_month(self) -> Decimal:
        return sum((month.paid for month in self.months), Decimal(0)) / len(self.months)


@dataclass(frozen=True)
class CommitmentAdvice:
    currency: str
    months: tuple[dt.date, ...]
    groups: tuple[UsageGroup, ...]
    notices: tuple[f.Fact, ...]

    @property
    def recommended(self) -> tuple[tuple[UsageGroup, Candidate], ...]:
        return tuple((group, c) for group in self.groups for c in group.candidates if c.recommended)


def history_months(records: list[RequestRecord], now: dt.datetime, months: int) -> tuple[dt.date, ...]:
    """The whole months the history covers: up to `months` before `now`'s, none before the first launch."""
    launched = [r.launched_at for r in records if r.kind == "launch" and r.launched_at is not None]
    if not launched:
        return ()
    first = month_start(min(launched))
    chosen: list[dt.date] = []
    start = month_start(now)
    for _ in range(months):
        start = month_start(start - dt.timedelta(days=1))
        if start < first:
            break
        chosen.append(start.date())
    return tuple(reversed(chosen))


def usage_by_type(records: list[RequestRecord], months: tuple[dt.date, ...], now: dt.datetime,
                  currency: str) -> dict[tuple[str, str, str], tuple[UsageMonth, ...]]:
    """(provider, instance type, region) → each history month's instance-hours and pay-as-you-go cost."""
    hours: dict[tuple[str, str, str], dict[dt.date, list[Decimal]]] = defaultdict(
        lambda: {month: [Decimal(0), Decimal(0)] for month in months})
    for record in records:
        spec, stop = record.spec, run_end(record, now)
        if (not isinstance(spec, LaunchSpec) or record.launched_at is None or stop is None
                or record.hourly_price is None or record.currency != currency):
            continue
        key = (spec.provider, spec.instance_type, spec.launched_region or spec.region)
        for month in months:
            start = dt.datetime.combine(month, dt.time(), tzinfo=dt.timezone.utc)
            ran = hours_between(max(start, record.launched_at), min(next_month(start), stop))
            if ran:
                hours[key][month][0] += ran * spec.instances
                hours[key][month][1] += ran * record.hourly_price
    return {key: tuple(UsageMonth(month, *by_month[month]) for month in months) for key, by_month in hours.items()}


def _term_price(offers: list[Offer], model: PricingModel) -> tuple[Decimal, Offer] | None:
    """The cheapest verified, unflagged price of `model` among the region's offers, per instance-hour."""
    priced = [(price / HOURS_PER_MONTH if model == PricingModel.MONTHLY else price, offer) for offer in offers
              for price in [offer.price(model)] if price is not None and offer.verified and not offer.flagged(model)]
    return min(priced, key=lambda pair: pair[0]) if priced else None


def monthly_bills(months: tuple[UsageMonth, ...], instances: int, rate: Decimal, paid_rate: Decimal) -> list[Decimal]:
    """Each month's bill with `instances` committed: the commitment, and the hours above it paid as you go."""
    capacity = instances * HOURS_PER_MONTH
    return [capacity * rate + max(Decimal(0), m.hours - capacity) * paid_rate for m in months]


def _candidate(group_months: tuple[UsageMonth, ...], model: PricingModel, rate: Decimal, offer: Offer,
               history: int) -> Candidate:
    """The count of `model` instances that saves most over the history without costing more than paying as you go
    in its lowest month; with none such, the figures of one instance and why not."""
    hours = sum((m.hours for m in group_months), Decimal(0))
    paid = sum((m.paid for m in group_months), Decimal(0))
    paid_rate = paid / hours
    lowest = min(group_months, key=lambda m: m.hours)
    most = math.ceil(max(m.hours for m in group_months) / HOURS_PER_MONTH)
    best = 0, Decimal(0)
    for count in range(1, most + 1):
        bills = monthly_bills(group_months, count, rate, paid_rate)
        saving = paid - sum(bills, Decimal(0))
        lowest_bill = monthly_bills((lowest,), count, rate, paid_rate)[0]
        if lowest_bill <= lowest.hours * paid_rate and saving > best[1]:
            best = count, saving
    instances = best[0]
    shown = max(instances, 1)  # with none worth it, what one would do, to show why not
    capacity = shown * HOURS_PER_MONTH
    unused = max(Decimal(0), capacity - lowest.hours)
    reasons: list[f.Fact] = []
    if instances == 0:
        reasons.append(f.CommitUnsteady(lowest.hours, HOURS_PER_MONTH * rate / paid_rate, model))
    if model == PricingModel.RESERVED_3Y and history < MONTHS_FOR_3Y:
        reasons.append(f.CommitHistoryShort(history, MONTHS_FOR_3Y))
    source = offer.reserved_source or offer.source if model.term_years else offer.source
    as_of = offer.reserved_as_of or offer.as_of if model.term_years else offer.as_of
    return Candidate(model, rate, paid_rate, rate / paid_rate, instances, capacity * rate,
                     (paid - sum(monthly_bills(group_months, shown, rate, paid_rate), Decimal(0))) / len(group_months),
                     unused, unused * rate, source, as_of, recommended=False, reasons=tuple(reasons))


def plan_commitments(records: list[RequestRecord], offers_of_type: Callable[[str, str], Sequence[Offer]],
                     now: dt.datetime, *, currency: str, months: int = 3) -> CommitmentAdvice:
    """`offers_of_type(provider, instance_type)` is the catalog's lookup (`Catalog.offers_of_type`)."""
    chosen = history_months(records, now, months)
    if not chosen:
        return CommitmentAdvice(currency, (), (), (f.CommitNoHistory(months),))
    groups = []
    for (provider, instance_type, region), used in sorted(usage_by_type(records, chosen, now, currency).items()):
        if not any(m.hours for m in used):
            continue
        offers = [o for o in offers_of_type(provider, instance_type) if o.region == region and o.currency == currency]
        candidates, missing = [], []
        for model in TERMS:
            priced = _term_price(offers, model)
            if priced is None:
                missing.append(f.CommitNoPrice(model))
                continue
            candidates.append(_candidate(used, model, priced[0], priced[1], len(chosen)))
        best = max((c for c in candidates if c.instances and not c.reasons), key=lambda c: c.saving_per_month,
                   default=None)
        candidates = [Candidate(**{**vars(c), "recommended": c is best}) for c in candidates]
        groups.append(UsageGroup(provider, instance_type, region, used, tuple(candidates), tuple(missing)))
    notices: list[f.Fact] = [f.CommitHistoryShort(len(chosen), months)] if len(chosen) < months else []
    return CommitmentAdvice(currency, chosen, tuple(groups), tuple(notices))
