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
Unless `all_regions`, only the cheapest region/zone per provider × instance type × model is kept, and a spot
price in an AWS Local Zone (an edge site with its own capacity) only where the request names that zone.
A marketplace listing is one host (`MARKETPLACES`): a request for more GPUs than it has does not take several.
Over more than one instance, the GPUs are joined by the network: such an option's interconnect is `network`.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from functools import cached_property
from typing import Any

from .. import facts
from ..catalog import Catalog
from ..catalog.ages import age_notes
from ..catalog.fx import FxRates
from ..catalog.offers import MARKETPLACES, Offer
from ..catalog.providers import CHINA_PROVIDERS
from ..catalog.regions import check_selectors
from ..facts import TERM_YEARS, Fact, PricingModel
from .job_costs import JobParts, job_parts
from .job_data import JobData
from .price_table import (
    HOURS_PER_YEAR,
    PricedOffer,
    billed_seconds,
    billed_units,
    cheapest_per_gpu_hour,
    cheapest_per_offer,
    job_total,
    price_table,
    select_offers,
    term_hours,
    whole_instances,
)
from .query import HOUR_S, HOURS_PER_MONTH, PRICING_MODELS, Query
from .spot_risk import overhead

# Ranking only: an option with a part no source gives ranks after every option whose parts are known, in
# the order of what is known of it. Totals are far below this.
UNKNOWN_PARTS_RANK = Decimal(10) ** 15


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
    pricing_model: PricingModel
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
    notes: tuple[Fact, ...] = ()  # what the reader must know (`facts`; the words are `render/notes.py`'s)
    parts: JobParts | None = None  # the job's disks and data at this option's region; None: none asked for
    # Spot: the job's expected extra time from interruptions and checkpoints (`spot_risk.overhead`); else None.
    spot_overhead: float | None = None
    # How many regions sell it at this same price, where that is every region the source lists it in (the price
    # is then not this region's: any of them); 1: the price is this region's.
    regions: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def whole(self) -> Decimal:
        """The job's total: GPUs (`total`) plus the known parts of its disks and data."""
        return self.total if self.parts is None else self.total + self.parts.known

    @property
    def parts_known(self) -> bool:
        """Whether every part of the total is known (no job data asked for: yes)."""
        return self.parts is None or self.parts.complete

    @cached_property
    def trusted(self) -> bool:
        """A verified price from a dated source within the staleness limit, as the source gives it: none of its
        notes is untrusting (`facts.Stale`, `facts.Derived`: a spot price a catalog computes from on-demand is
        nobody's price). Kept once known: ranking and grouping ask it of every option many times."""
        return self.verified and not any(note.untrusting for note in self.notes)


@dataclass(frozen=True)
class Quote:
    """The answer to a request: options cheapest first, and what the reader must know about them."""

    request: Query
    options: tuple[QuoteOption, ...]
    currency: str
    offers_considered: int
    flagged_excluded: int
    notices: tuple[Fact, ...] = field(default=())
    empty_reason: Fact | None = None  # when there are no options: which filter removed what, what exists instead

    def __repr__(self) -> str:
        return f"Quote({self.request.describe()}: {len(self.options)} options)"

    def cheapest(self, **where: object) -> QuoteOption | None:
        """The first option whose attributes equal `where` (e.g. provider='aws', pricing_model='spot')."""
        return next((o for o in self.options if all(getattr(o, k) == v for k, v in where.items())), None)


def quote(request: Query, catalog: Catalog, *, today: dt.date, currency: str = "USD", top: int | None = None,
          all_regions: bool = False, include_flagged: bool = False, verified_only: bool = False,
          include_unverified: bool = False, job_data: JobData | None = None,
          spot_rates: Mapping[tuple[str, str], float] | None = None) -> Quote:
    """Price `request` against `catalog`. `today` dates the staleness check; nothing is read from the clock.
    `include_unverified` also prices the articles' claims their providers' documentation contradicts; `all_regions`
    shows a zone's spot outlier as that zone's price, labelled, except with `verified_only` (what a launch plans
    from: a price below half the other zones' median never becomes an approved ceiling). With
    `job_data`, each option's total has the job's disks and data as parts, and the regions kept are the cheapest
    for the whole (`job_costs`)."""
    currency = request.currency or currency
    if request.regions:
        check_selectors(request.regions, catalog.region_providers, catalog.countries)
    offers, listings = one_host_listings(request.count, sized_offers(request, catalog, verified_only=verified_only))
    models = request.pricing_models or PRICING_MODELS
    table, flagged_excluded = price_table(
        offers, instances=whole_instances(request.count, offers), duration_s=[request.duration_s] * len(offers),
        models=models, fx=catalog.fx, currency=currency, include_flagged=include_flagged,
        explicit_monthly=PricingModel.MONTHLY in request.pricing_models, include_unverified=include_unverified,
        zone_outliers=all_regions and not verified_only)
    if not all_regions:
        table = [row for row in table if not edge_spot(row, request.regions)]
    parts: dict[tuple[str, str], JobParts] = {}
    if job_data is not None:
        table = _ranked_whole(table, job_data, catalog, request.duration_s, currency, parts)
    shown = cheapest_per_offer(table, all_regions=all_regions)[:top]
    alike = {} if all_regions else same_price_regions(table)
    options = tuple(replace(with_spot_risk(_sized(to_option(
        priced, request.count, catalog.fx, currency, today, note_billing=True,
        parts=parts.get((priced.offer.provider, priced.offer.region))), request), spot_rates or {}),
        regions=alike.get(_line(priced), 1)) for priced in shown)
    reason = None if options else empty_reason(request, catalog, models=models, verified_only=verified_only,
                                               include_flagged=include_flagged, currency=currency)
    notices = _notices(request, offers, options, models, flagged_excluded)
    if listings and options:  # an empty answer says why it is empty, not what else was left out
        notices += (facts.OneHostListings(listings),)
    return Quote(request=request, options=options, currency=currency, offers_considered=len(table),
                 flagged_excluded=flagged_excluded, notices=notices, empty_reason=reason)


def _line(row: PricedOffer) -> tuple[object, ...]:
    return (row.offer.provider, row.offer.instance_type, row.offer.gpu_count, row.pricing_model)


def same_price_regions(table: Sequence[PricedOffer]) -> dict[tuple[object, ...], int]:
    """Per provider × instance type × model sold in more than one region at one and the same price: how many
    regions (OCI's one global list, Lambda's 17 regions). A price that differs by region is each region's."""
    prices: dict[tuple[object, ...], set[Decimal]] = {}
    regions: dict[tuple[object, ...], set[str]] = {}
    for row in table:
        prices.setdefault(_line(row), set()).add(row.price)
        regions.setdefault(_line(row), set()).add(row.offer.region)
    return {key: len(regions[key]) for key, found in prices.items() if len(found) == 1 and len(regions[key]) > 1}


def one_host_listings(count: int, offers: tuple[Offer, ...]) -> tuple[tuple[Offer, ...], int]:
    """The offers that can serve `count` GPUs, and how many marketplace listings could not: a listing is one
    host (its source gives no count of machines), so it cannot be taken several times."""
    kept = tuple(o for o in offers if o.provider not in MARKETPLACES or o.gpu_count >= count)
    return kept, len(offers) - len(kept)


def edge_spot(row: PricedOffer, named: Sequence[str]) -> bool:
    """Whether the row is a spot price in an AWS Local Zone or Wavelength zone the request does not name: an
    edge site's own capacity, not the price a buyer of the region can expect."""
    return row.pricing_model == PricingModel.SPOT and row.offer.zone not in named and any(
        isinstance(label, facts.LocalZone) for label in row.offer.notes)


def with_spot_risk(option: QuoteOption, rates: Mapping[tuple[str, str], float]) -> QuoteOption:
    """A spot option with its expected interruption overhead (the Spot Advisor's band where `rates` has it)."""
    if option.pricing_model != PricingModel.SPOT:
        return option
    rate = rates.get((option.region, option.instance_type)) if option.provider == "aws" else None
    return replace(option, spot_overhead=round(overhead(option.instances, rate), 4))


def _ranked_whole(table: list[PricedOffer], job_data: JobData, catalog: Catalog, duration_s: int, currency: str,
                  parts: dict[tuple[str, str], JobParts]) -> list[PricedOffer]:
    """The table ranked by the whole job: each row's rank plus its region's known parts (`parts`, filled here,
    once per provider and region), after every fully known row when a part is unknown."""
    ranked = []
    for row in table:
        place = (row.offer.provider, row.offer.region)
        if place not in parts:
            parts[place] = job_parts(job_data, catalog.data_prices, provider=place[0], region=place[1],
                                     duration_s=duration_s, fx=catalog.fx, currency=currency)
        known = parts[place]
        rank = row.rank + known.known + (0 if known.complete else UNKNOWN_PARTS_RANK)
        ranked.append(row._replace(rank=rank))
    return ranked


def sized_offers(request: Query, catalog: Catalog, *, verified_only: bool = False) -> tuple[Offer, ...]:
    """The offers of the GPU asked for, in the request's scope; where none is of the size its name denotes
    (`8xV100 provider=tencent`: Tencent sells only V100-32GB), those of its other memory sizes, each labelled
    (`OtherSize`). A size named (`V100-16GB`, `V100 16GB`) has no other sizes."""
    for gpus in ((request.gpu,), request.variants):
        offers = tuple(offer for gpu in gpus for offer in select_offers(
            catalog, gpu, providers=request.providers, regions=request.regions, verified_only=verified_only))
        if offers:
            return offers
    return ()


def _sized(option: QuoteOption, request: Query) -> QuoteOption:
    """An option of another memory size than the GPU named (`8xV100` priced on V100-32GB) says so."""
    if option.gpu == request.gpu:
        return option
    return replace(option, notes=(*option.notes, facts.OtherSize(option.gpu, option.gpu_memory_gib, request.gpu)))


def to_option(priced: PricedOffer, gpus_requested: int, fx: FxRates, currency: str, today: dt.date, *,
              job_length_known: bool = True, note_billing: bool = False, parts: JobParts | None = None) -> QuoteOption:
    """A price table row as an exact QuoteOption (Decimal money, notes for the reader). Without a job length
    (`recommend` pricing one hour of a job it cannot time) the notes do not name one. With `note_billing`, an
    on-demand or spot option billed for more than the job runs says so (`billed 2h: per-hour billing`): a quote's
    total for 90m is then two hours' price, which the reader must be told."""
    row, model, instances, duration_s = priced.offer, priced.pricing_model, priced.instances, priced.duration_s
    price = fx.convert(priced.price, row.currency, currency)
    billed_s = billed_seconds(duration_s, row.billing_granularity_s)
    units = billed_units(model, duration_s, row.billing_granularity_s)
    total = job_total(price, instances, units)
    monthly = model == PricingModel.MONTHLY
    billed_hours = units * HOURS_PER_MONTH if monthly else units
    hourly = price / HOURS_PER_MONTH if monthly else price
    on_demand = None if row.on_demand_hourly is None else fx.convert(row.on_demand_hourly, row.currency, currency)
    savings = None
    if on_demand and model in TERM_YEARS:  # a term is sold as a discount on the hourly rate
        savings = 1 - hourly / on_demand
    elif on_demand is not None and model != PricingModel.ON_DEMAND:
        od_total = job_total(on_demand, instances, billed_units(PricingModel.ON_DEMAND, duration_s,
                                                                 row.billing_granularity_s))
        savings = (od_total - total) / od_total if od_total else None
    source, as_of = (row.reserved_source, row.reserved_as_of) if model in TERM_YEARS and row.reserved_source \
        else (row.source, row.as_of)
    notes = _notes(row, gpus_requested, duration_s if job_length_known else None, model, instances, hourly,
                   on_demand, today, fx, currency, as_of)
    if note_billing and model in (PricingModel.ON_DEMAND, PricingModel.SPOT) and billed_s > duration_s:
        notes.insert(0, facts.BilledLonger(billed_s, row.billing_granularity_s))
    if parts is not None:
        notes += parts.notes(row.provider)
    return QuoteOption(
        provider=row.provider, region=row.region, zone=priced.zone if model == PricingModel.SPOT else "",
        instance_type=row.instance_type, instances=instances, gpu=row.gpu, gpu_count=int(row.gpu_count),
        gpu_memory_gib=math.nan if row.gpu_memory_gib is None else row.gpu_memory_gib, pricing_model=model,
        hourly=hourly, total=total, currency=currency, billed_hours=billed_hours,
        per_gpu_hour=total / (Decimal(gpus_requested) * Decimal(duration_s) / HOUR_S),
        savings_vs_on_demand=savings, interconnect="network" if instances > 1 else row.interconnect,
        price_currency=row.currency,
        source=source, as_of=as_of, verified=row.verified, notes=tuple(notes), parts=parts,
    )


def _notes(row: Offer, gpus_requested: int, duration_s: int | None, model: PricingModel, instances: int,
           hourly: Decimal, on_demand: Decimal | None, today: dt.date, fx: FxRates, currency: str,
           as_of: str) -> list[Fact]:
    notes: list[Fact] = []
    gpus = instances * int(row.gpu_count)
    if gpus != gpus_requested:
        notes.append(facts.IdleGpus(gpus - gpus_requested, gpus))
    if instances > 1:
        notes.append(facts.MultiHost(instances))
    elif gpus_requested > 1 and row.interconnect == "pcie":
        notes.append(facts.PcieOnly())
    if model == PricingModel.SPOT:
        notes.append(facts.SpotInterruption())
    if model in TERM_YEARS:
        years = TERM_YEARS[model]
        terms = 1 if duration_s is None else term_hours(model, duration_s) // (HOURS_PER_YEAR * years)
        notes.append(facts.ReservedTerm(years, terms, duration_s))
        if on_demand:
            notes.append(facts.BreakEven(hourly * HOURS_PER_MONTH / on_demand))
    if model == PricingModel.MONTHLY:
        notes.append(facts.MonthlyBilling())
    labels = row.notes_for(model)
    if labels:
        conversion = fx.conversion(row.currency, currency)
        notes += [facts.Labelled(label, conversion) for label in labels]
    flags = row.flags_for(model)
    if flags:
        notes.append(facts.Flagged(flags))
    if row.verified and row.provider in CHINA_PROVIDERS:  # an unverified price names its source below
        notes.append(facts.PricedFrom(row.source, as_of, row.price(model) or Decimal(0), row.currency, model))
    if not row.verified:
        notes.append(facts.Unverified(row.source))
    notes += age_notes(row, model, today)  # undated, or older than its kind of figure may be (`catalog.ages`)
    if row.currency != currency:
        notes.append(facts.Converted(row.currency, fx.rate(row.currency if row.currency != "USD" else currency)))
    return notes


def _notices(request: Query, offers: Sequence[Offer], options: tuple[QuoteOption, ...],
             models: Sequence[PricingModel],
             flagged_excluded: int) -> tuple[Fact, ...]:
    notices: list[Fact] = [facts.Assumption(text) for text in request.assumptions]
    for model in models:
        if model in TERM_YEARS and all(o.price(model) is None for o in offers):
            notices.append(facts.ReservedUnknown(model))
    if flagged_excluded:
        notices.append(facts.FlaggedLeftOut(flagged_excluded))
    unverified = sum(1 for o in options if not o.verified)
    if unverified:
        notices.append(facts.UnverifiedShown(unverified, len(options)))
    return tuple(notices)


def empty_reason(request: Query, catalog: Catalog, *, models: Sequence[PricingModel], verified_only: bool,
                 include_flagged: bool, currency: str) -> Fact:
    """Why a quote has no options: the first filter that left no offer, or the pricing models without a usable
    price, and what the catalogs offer instead (`no monthly prices for H100 …; on-demand from $2.10/GPU-h`)."""
    gpu = request.gpu
    offered = tuple(o for name in request.gpus for o in catalog.offers_of(name))
    if not offered:
        return facts.NoOffers(gpu)
    offers = tuple(o for name in request.gpus for o in select_offers(catalog, name, providers=request.providers))
    if not offers:
        return facts.NoProviderOffers(facts.Scope(gpu, request.providers),
                                      tuple(sorted({o.provider for o in offered})))
    scope = facts.Scope(gpu, request.providers, request.regions)
    in_regions = tuple(o for name in request.gpus
                       for o in select_offers(catalog, name, providers=request.providers, regions=request.regions))
    if not in_regions:
        return facts.NoRegionOffers(scope, tuple(sorted({o.region for o in offers})))
    if verified_only and not any(o.verified for o in in_regions):
        return facts.AllUnverified(scope)
    offers = tuple(o for o in in_regions if o.verified) if verified_only else in_regions
    asked = tuple(models)
    if any(o.price(model) is not None for model in models for o in offers):
        return facts.AllFlagged(scope, asked)
    instead = []
    for model in PRICING_MODELS:
        usable = [(o, price) for o in offers if (price := o.price(model)) is not None
                  and (include_flagged or not o.flagged(model))]
        if model not in models and usable:
            _, price = cheapest_per_gpu_hour(usable, catalog.fx, currency,
                                             hours_per_price=HOURS_PER_MONTH if model == PricingModel.MONTHLY else 1)
            instead.append(facts.Cheapest(model, price, currency))
    return facts.NoPrices(scope, asked, tuple(instead))
