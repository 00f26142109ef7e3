"""The price table: every (offer, pricing model) with a usable price, ranked by the job's total. Pure Python.

Quotes (`pricing.quote`) and plans (`recommend`) both price through it, so a plan and a quote of the same job
agree. For each offer and each pricing model with a known price (unflagged unless asked):

- on-demand, spot: billed_s = ceil(duration_s / billing_granularity_s) × billing_granularity_s,
  total = instances × hourly × billed_s / 3600;
- reserved-1y/3y: terms are bought whole, as many as the job needs (one for any job up to the term's length):
  total = instances × effective hourly × 8760 × years × terms;
- monthly: total = instances × monthly × ceil(duration / 730 h); kept only when it beats on-demand for the
  duration, the offer has no on-demand price, or monthly was asked for.

Totals are exact Decimal money in the target currency, computed by `job_total` from `billed_units`, the one
billing function `pricing.to_option` uses too: what ranks a row is the figure shown for it. Scanning one GPU's
offers (a few hundred) in plain Python costs less than importing numpy would.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from operator import attrgetter
from typing import NamedTuple

from ..catalog import Catalog
from ..catalog.fx import FxRates
from ..catalog.offers import PRICE_COLUMN, Offer
from ..catalog.regions import matches
from ..facts import TERM_YEARS, Flag, PricingModel
from .query import HOUR_S, MONTH_S

HOURS_PER_YEAR = 8760


class PricedOffer(NamedTuple):
    """One row of the price table: an offer bought one way for one job."""

    position: int  # the offer's place in the offers priced: per-offer figures (recommend's hours) are keyed by it
    offer: Offer
    pricing_model: PricingModel
    price: Decimal  # the offer's price in that model, in the offer's currency
    instances: int
    duration_s: int
    zone: str  # the zone the price applies to ("" where all zones of the region cost the same)
    # What the row ranks by: the job's total in the target currency, the figure shown for it; in a quote with job
    # data, its whole bill, placed after every fully known one when a part is unknown (`pricing._ranked_whole`).
    rank: Decimal


def billed_seconds(duration_s: int, granularity_s: int) -> int:
    """`duration_s` rounded up to whole billing units."""
    return -(-duration_s // granularity_s) * granularity_s


def term_hours(model: PricingModel, duration_s: int) -> int:
    """The hours a reserved `model` bills for a job of `duration_s`: whole terms, as many as cover the job."""
    term_s = HOURS_PER_YEAR * TERM_YEARS[model] * HOUR_S
    return billed_seconds(max(duration_s, 1), term_s) // HOUR_S


def billed_units(model: PricingModel, duration_s: int, granularity_s: int) -> Decimal:
    """What a price in `model` is multiplied by for one instance running `duration_s`: whole months for monthly;
    hours for the rest: whole terms for reserved ones, on-demand and spot rounded up to the billing unit."""
    if model == PricingModel.MONTHLY:
        return Decimal(-(-duration_s // MONTH_S))
    if model in TERM_YEARS:
        return Decimal(term_hours(model, duration_s))
    return Decimal(billed_seconds(duration_s, granularity_s)) / HOUR_S


def job_total(price: Decimal, instances: int, units: Decimal) -> Decimal:
    """The job's bill: `price` (in the quote's currency) × instances × `billed_units`."""
    return price * instances * units


def select_offers(catalog: Catalog, gpu: str, *, providers: Sequence[str] = (), regions: Sequence[str] = (),
                  verified_only: bool = False) -> tuple[Offer, ...]:
    """The catalog's whole-GPU offers of `gpu` that pass the provider, region and verified filters."""
    offers = catalog.offers_of(gpu)
    if providers or regions or verified_only:
        selectors = tuple(regions)
        offers = tuple(o for o in offers if (not providers or o.provider in providers)
                       and (not verified_only or o.verified) and matches(o.region, o.country, o.continent, selectors))
    return offers


def _only_a_zone_outlier(offer: Offer, model: PricingModel) -> bool:
    return all(flag.flag == Flag.SPOT_OUTLIER for flag in offer.flags_for(model))


def price_table(offers: Sequence[Offer], *, instances: Sequence[int], duration_s: Sequence[int],
                models: Iterable[PricingModel], fx: FxRates, currency: str, include_flagged: bool = False,
                explicit_monthly: bool = False, include_unverified: bool = False,
                zone_outliers: bool = False) -> tuple[list[PricedOffer], int]:
    """Every (offer, pricing model) with a usable price, for per-offer `instances` and `duration_s`, model by
    model in the order given, offers in their order; and how many prices were left out for known defects
    (`include_unverified` keeps the articles' contradicted claims: they are unverified prices, asked for).
    `zone_outliers` keeps spot prices whose only defect is being one zone's outlier (`all-regions` shows each
    zone by its own price: there the outlier is that zone's price, labelled, not the type's)."""
    # Per offer, its prices' conversion into `currency` (None: already in it), and per model the billed units of
    # each (job length, billing unit): few distinct ones, so each is computed once.
    conversions = {c: None if c == currency else fx.conversion(c, currency).apply for c in {o.currency for o in offers}}
    to_target = [conversions[o.currency] for o in offers]
    lengths = list(zip(duration_s, (o.billing_granularity_s for o in offers)))
    on_demand_units = _units(PricingModel.ON_DEMAND, lengths)
    on_demand_totals = [None if offer.on_demand_hourly is None else job_total(
        offer.on_demand_hourly if convert is None else convert(offer.on_demand_hourly), count, units)
        for offer, count, convert, units in zip(offers, instances, to_target, on_demand_units)]
    table: list[PricedOffer] = []
    flagged_excluded = 0
    make = tuple.__new__  # a row with no Python-level call (`PricedOffer._make` is one): the table's hot loop
    for model in models:
        price_of = attrgetter(PRICE_COLUMN[model])
        units = _units(model, lengths)
        cheaper_only = model == PricingModel.MONTHLY and not explicit_monthly
        for position, offer in enumerate(offers):
            price = price_of(offer)
            if price is None:
                continue
            if not include_flagged and offer.flags and offer.flagged(model, claims_shown=include_unverified) \
                    and not (zone_outliers and _only_a_zone_outlier(offer, model)):
                flagged_excluded += 1
                continue
            convert = to_target[position]
            total = job_total(price if convert is None else convert(price), instances[position], units[position])
            on_demand_total = on_demand_totals[position]
            if cheaper_only and on_demand_total is not None and not total < on_demand_total:
                continue
            table.append(make(PricedOffer, (position, offer, model, price, instances[position], duration_s[position],
                                            offer.zone, total)))
    return table, flagged_excluded


def _units(model: PricingModel, lengths: Sequence[tuple[int, int]]) -> list[Decimal]:
    """`billed_units` of `model` for each (job length, billing unit), each distinct pair computed once."""
    known = {length: billed_units(model, *length) for length in set(lengths)}
    return [known[length] for length in lengths]


def cheapest_per_offer(table: Sequence[PricedOffer], *, all_regions: bool) -> list[PricedOffer]:
    """The cheapest region/zone per provider × instance type × model, or (all_regions) one row per region,
    spot keeping its zones; sorted cheapest first, fewer hosts first on ties, then in the table's order."""
    if all_regions:
        # Outside spot, a price does not depend on the zone: one row per region, the first in the table.
        spot = [(0, n, row) for n, row in enumerate(table) if row.pricing_model == PricingModel.SPOT]
        regional: dict[tuple[object, ...], tuple[int, int, PricedOffer]] = {}
        for n, row in enumerate(table):
            offer = row.offer
            if row.pricing_model != PricingModel.SPOT:
                regional.setdefault((offer.provider, offer.region, offer.instance_type, offer.gpu_count,
                                     row.pricing_model), (1, n, row._replace(zone="")))
        kept = spot + list(regional.values())
    else:
        best: dict[tuple[object, ...], tuple[tuple[Decimal, int, str, str], int, PricedOffer]] = {}
        for n, row in enumerate(table):
            offer = row.offer
            key = (offer.provider, offer.instance_type, offer.gpu_count, row.pricing_model)
            rank = (row.rank, row.instances, offer.region, row.zone)
            current = best.get(key)
            if current is None or rank < current[0]:
                best[key] = (rank, n, row)
        kept = [(0, n, row) for _, n, row in best.values()]
    kept.sort(key=lambda k: (k[2].rank, k[2].instances, k[2].offer.provider, k[2].offer.region, k[2].zone,
                             k[0], k[1]))
    return [row for _, _, row in kept]


def cheapest_per_gpu_hour(priced: Iterable[tuple[Offer, Decimal]], fx: FxRates, currency: str, *,
                          hours_per_price: int = 1) -> tuple[Offer, Decimal]:
    """Of (offer, price) pairs, the offer with the lowest price per GPU, and that price per GPU-hour in `currency`
    (`hours_per_price`: 730 for a monthly price)."""
    offer, price = min(priced, key=lambda pair: fx.convert(pair[1], pair[0].currency, currency)
                       / Decimal(str(pair[0].gpu_count)))
    return offer, fx.convert(price, offer.currency, currency) / (int(offer.gpu_count) * hours_per_price)


def whole_instances(count: int, offers: Iterable[Offer]) -> list[int]:
    """Instances of each offer needed for `count` GPUs."""
    return [math.ceil(count / o.gpu_count) for o in offers]
