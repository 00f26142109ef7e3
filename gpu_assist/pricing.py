"""Quotes: every way to get `count` GPUs for a duration, per offer and pricing model. Pure.

For each offer of the requested GPU (after provider/region filters) and each pricing model
with a known, unflagged price, the price table (`price_table`) ranks the job's total:

- instances   = ceil(count / gpu_count); GPUs beyond `count` are noted as idle;
- on-demand, spot: billed by the offer's granularity; reserved: the whole term; monthly: whole months,
  shown only when it beats on-demand for the duration, the offer has no on-demand price, or monthly was
  asked for;
- reserved notes break-even hours per month vs on-demand = reserved hourly × 730 / on-demand hourly.

Totals are converted to the quote currency with the catalog's FX rate. Ranking uses floats;
every figure handed out is an exact `Decimal` from the catalog's decimal prices.
Unless `all_regions`, only the cheapest region/zone per provider × instance type × model is kept.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

from .catalog import Catalog, days_old
from .fx import FxRates
from .offers import Offer
from .plural import plural
from .price_table import (HOURS_PER_YEAR, TERM_YEARS, PricedOffer, billed_seconds, cheapest_per_gpu_hour,
                          cheapest_per_offer, price_table, select_offers, term_hours, whole_instances)
from .regions import check_selectors
from .render.money import restate_money
from .request import HOUR_S, HOURS_PER_MONTH, MONTH_S, PRICING_MODELS, Request, format_duration

STALE_AFTER_DAYS = 30
# Notes that make an offer's verified price in one pricing model untrusted (ranked after trusted ones).
UNTRUSTED_NOTES = ("stale", "derived")
_BILLING = {60: "per-minute", HOUR_S: "per-hour", 24 * HOUR_S: "per-day"}  # granularities, as a bill names them


@dataclass(frozen=True)
class QuoteOption:
    """One way to buy the request: an offer × a pricing model, priced for the whole job."""

    provider: str
    region: str
    zone: str
    instance_type: str
    instances: int
    gpu: str
    gpu_count: int
    gpu_memory_gib: float
    pricing_model: str
    hourly: Decimal  # per instance-hour in `currency` (reserved: effective; monthly: per 730 h)
    total: Decimal
    currency: str
    billed_hours: Decimal
    per_gpu_hour: Decimal  # total / (requested GPUs × requested hours)
    savings_vs_on_demand: Decimal | None  # fraction of the same offer's on-demand total
    interconnect: str
    price_currency: str
    source: str
    as_of: str
    verified: bool
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @cached_property
    def trusted(self) -> bool:
        """A verified price from a dated source within the staleness limit, as the source gives it: not one its
        notes call stale or derived (a spot price a catalog computes from on-demand is nobody's price). Kept once
        known: ranking and grouping ask it of every option many times."""
        return self.verified and not any(note.startswith(UNTRUSTED_NOTES) for note in self.notes)


@dataclass(frozen=True)
class Quote:
    """The answer to a request: options cheapest first, and what the reader must know about them."""

    request: Request
    options: tuple[QuoteOption, ...]
    currency: str
    offers_considered: int
    flagged_excluded: int
    notices: tuple[str, ...] = field(default=())
    empty_reason: str | None = None  # when there are no options: which filter removed what, what exists instead

    def __repr__(self) -> str:
        return f"Quote({self.request.describe()}: {len(self.options)} options)"

    def cheapest(self, **where: object) -> QuoteOption | None:
        """The first option whose attributes equal `where` (e.g. provider='aws', pricing_model='spot')."""
        return next((o for o in self.options if all(getattr(o, k) == v for k, v in where.items())), None)

    def to_frame(self) -> Any:  # a pandas DataFrame; Any while jupyter/panels.py's table attribute is untyped
        """The options as a DataFrame (money as floats: `frames.py`); `.attrs` keeps the notices and, for an
        empty one, the reason."""
        from .frames import records_frame

        frame = records_frame(o.to_dict() for o in self.options)
        frame.attrs.update(notices=list(self.notices), empty_reason=self.empty_reason)
        return frame


def quote(request: Request, catalog: Catalog, *, today: dt.date, currency: str = "USD", top: int | None = None,
          all_regions: bool = False, include_flagged: bool = False, verified_only: bool = False) -> Quote:
    """Price `request` against `catalog`. `today` dates the staleness check; nothing is read from the clock."""
    currency = request.currency or currency
    if request.regions:
        check_selectors(request.regions, catalog.regions, catalog.countries)
    offers = select_offers(catalog, request.gpu, providers=request.providers, regions=request.regions,
                           verified_only=verified_only)
    models = request.pricing_models or PRICING_MODELS
    table, flagged_excluded = price_table(
        offers, instances=whole_instances(request.count, offers), duration_s=[request.duration_s] * len(offers),
        models=models, fx=catalog.fx, currency=currency, include_flagged=include_flagged,
        explicit_monthly="monthly" in request.pricing_models)
    shown = cheapest_per_offer(table, all_regions=all_regions)[:top]
    options = tuple(to_option(priced, request.count, catalog.fx, currency, today, note_billing=True)
                    for priced in shown)
    reason = None if options else empty_reason(request, catalog, models=models, verified_only=verified_only,
                                               include_flagged=include_flagged, currency=currency)
    return Quote(request=request, options=options, currency=currency, offers_considered=len(table),
                 flagged_excluded=flagged_excluded, notices=_notices(request, offers, options, models,
                                                                     flagged_excluded), empty_reason=reason)


def to_option(priced: PricedOffer, gpus_requested: int, fx: FxRates, currency: str, today: dt.date, *,
              job_length_known: bool = True, note_billing: bool = False) -> QuoteOption:
    """A price table row as an exact QuoteOption (Decimal money, notes for the reader). Without a job length
    (`recommend` pricing one hour of a job it cannot time) the notes do not name one. With `note_billing`, an
    on-demand or spot option billed for more than the job runs says so (`billed 2h: per-hour billing`): a quote's
    total for 90m is then two hours' price, which the reader must be told."""
    row, model, instances, duration_s = priced.offer, priced.pricing_model, priced.instances, priced.duration_s
    price = fx.convert(priced.price, row.currency, currency)
    billed_s = billed_seconds(duration_s, row.billing_granularity_s)
    if model == "monthly":
        months = -(-duration_s // MONTH_S)
        billed_hours = Decimal(months * HOURS_PER_MONTH)
        total = price * instances * months
        hourly = price / HOURS_PER_MONTH
    else:
        billed_hours = Decimal(term_hours(model, duration_s)) if model in TERM_YEARS else \
            Decimal(billed_s) / HOUR_S
        total = price * instances * billed_hours
        hourly = price
    on_demand = None if row.on_demand_hourly is None else fx.convert(row.on_demand_hourly, row.currency, currency)
    savings = None
    if on_demand and model in TERM_YEARS:  # a term is sold as a discount on the hourly rate
        savings = 1 - hourly / on_demand
    elif on_demand is not None and model != "on-demand":
        od_total = on_demand * instances * Decimal(billed_s) / HOUR_S
        savings = (od_total - total) / od_total if od_total else None
    source, as_of = (row.reserved_source, row.reserved_as_of) if model in TERM_YEARS and row.reserved_source \
        else (row.source, row.as_of)
    notes = _notes(row, gpus_requested, duration_s if job_length_known else None, model, instances, hourly,
                   on_demand, today, fx, currency, as_of)
    if note_billing and model in ("on-demand", "spot") and billed_s > duration_s:
        per = _BILLING.get(row.billing_granularity_s, f"per-{row.billing_granularity_s}-second")
        notes.insert(0, f"billed {format_duration(billed_s)}: {per} billing")
    return QuoteOption(
        provider=row.provider, region=row.region, zone=priced.zone if model == "spot" else "",
        instance_type=row.instance_type, instances=instances, gpu=row.gpu, gpu_count=int(row.gpu_count),
        gpu_memory_gib=math.nan if row.gpu_memory_gib is None else row.gpu_memory_gib, pricing_model=model,
        hourly=hourly, total=total, currency=currency, billed_hours=billed_hours,
        per_gpu_hour=total / (Decimal(gpus_requested) * Decimal(duration_s) / HOUR_S),
        savings_vs_on_demand=savings, interconnect=row.interconnect, price_currency=row.currency,
        source=source, as_of=as_of, verified=row.verified, notes=tuple(notes),
    )


def _notes(row: Offer, gpus_requested: int, duration_s: int | None, model: str, instances: int, hourly: Decimal,
           on_demand: Decimal | None, today: dt.date, fx: FxRates, currency: str, as_of: str) -> list[str]:
    notes = []
    gpus = instances * int(row.gpu_count)
    if gpus != gpus_requested:
        notes.append(f"{gpus - gpus_requested} of {gpus} GPUs idle")
    if instances > 1:
        notes.append(f"spans {instances} hosts (network, not NVLink, between them)")
    elif gpus_requested > 1 and row.interconnect == "pcie":
        notes.append("GPUs linked over PCIe only (no NVLink)")
    if model == "spot":
        notes.append("spot: may be interrupted; checkpoint your job")
    if model in TERM_YEARS:
        years = TERM_YEARS[model]
        if duration_s is None:
            notes.append(f"commits to a {years}-year term ({HOURS_PER_YEAR * years} h)")
        else:
            terms = term_hours(model, duration_s) // (HOURS_PER_YEAR * years)
            bought = f"a {years}-year term" if terms == 1 else f"{terms} consecutive {years}-year terms"
            notes.append(f"commits to {bought} ({HOURS_PER_YEAR * years * terms} h) for a {duration_s / HOUR_S:g} h "
                         "job")
        if on_demand:
            break_even = hourly * HOURS_PER_MONTH / on_demand
            notes.append(f"breaks even vs on-demand at {break_even:.0f} h/month of use")
    if model == "monthly":
        notes.append("monthly subscription: billed per whole month (730 h)")
    notes += [restate_money(note, row.currency, currency, lambda amount: fx.convert(amount, row.currency, currency))
              for note in row.notes_for(model)]
    if row.flags:
        notes.append(f"catalog flags: {row.flags} (included on request)")
    if not row.verified:
        notes.append(f"unverified list price ({row.source})")
    age = days_old(as_of, today)
    if age is None:
        notes.append("price date unknown")
    elif age > STALE_AFTER_DAYS:
        # Reserved terms may come from a source of their own (reserved_as_of): say it is their date.
        which = "reserved price" if model in TERM_YEARS and row.reserved_source else "price"
        notes.append(f"stale: {which} as of {as_of} ({age} days old)")
    if row.currency != currency:
        foreign = row.currency if row.currency != "USD" else currency
        notes.append(f"converted from {row.currency} at {fx.describe(foreign)}")
    return notes


def _notices(request: Request, offers: Sequence[Offer], options: tuple[QuoteOption, ...], models: Sequence[str],
             flagged_excluded: int) -> tuple[str, ...]:
    notices = list(request.assumptions)
    for model in models:
        if model in TERM_YEARS and all(o.price(model) is None for o in offers):
            notices.append(f"{model}: reserved price unknown (no source in the catalogs gives one)")
    if flagged_excluded:
        notices.append(f"{plural(flagged_excluded, 'price')} with known data defects left out "
                       "(include-flagged shows them)")
    unverified = sum(1 for o in options if not o.verified)
    if unverified:
        notices.append(f"{unverified} of {plural(len(options), 'option')} "
                       + ("is an unverified list price" if unverified == 1 else "are unverified list prices"))
    return tuple(notices)


def _listed(values: Sequence[str]) -> str:
    return ", ".join(values[:6]) + (f" and {len(values) - 6} more" if len(values) > 6 else "")


def empty_reason(request: Request, catalog: Catalog, *, models: Sequence[str], verified_only: bool,
                 include_flagged: bool, currency: str) -> str:
    """Why a quote has no options: the first filter that left no offer, or the pricing models without a usable
    price, and what the catalogs offer instead (`no monthly prices for H100 …; on-demand from $2.10/GPU-h`)."""
    from .render.money import format_rate

    gpu = request.gpu
    offered = catalog.offers_of(gpu)
    if not offered:
        return f"no offers of {gpu} in the catalogs"
    source = f" from {_listed(request.providers)}" if request.providers else ""
    offers = select_offers(catalog, gpu, providers=request.providers)
    if not offers:
        return f"no {gpu} offers{source}; {gpu} is offered by {_listed(sorted({o.provider for o in offered}))}"
    where = f" in {_listed(request.regions)}" if request.regions else ""
    in_regions = select_offers(catalog, gpu, providers=request.providers, regions=request.regions)
    if not in_regions:
        return f"no {gpu} offers{source}{where}; offered in {_listed(sorted({o.region for o in offers}))}"
    if verified_only and not any(o.verified for o in in_regions):
        return f"every {gpu} offer{source}{where} is an unverified list price (drop verified-only to see them)"
    offers = tuple(o for o in in_regions if o.verified) if verified_only else in_regions
    scope = f"{gpu}{source}{where}"
    if any(o.price(model) is not None for model in models for o in offers):
        return f"every {' or '.join(models)} price for {scope} has a known data defect (include-flagged shows them)"
    instead = []
    for model in PRICING_MODELS:
        usable = [(o, price) for o in offers if (price := o.price(model)) is not None
                  and (include_flagged or not o.flagged(model))]
        if model not in models and usable:
            _, price = cheapest_per_gpu_hour(usable, catalog.fx, currency,
                                             hours_per_price=HOURS_PER_MONTH if model == "monthly" else 1)
            instead.append(f"{model} from {format_rate(price, currency)}/GPU-h")
    missing = f"no {' or '.join(models)} prices for {scope} in the catalogs"
    return f"{missing}; {', '.join(instead)}" if instead else missing
