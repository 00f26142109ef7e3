"""Quotes: every way to get `count` GPUs for a duration, per offer and pricing model. Pure.

For each offer of the requested GPU (after provider/region filters) and each pricing model
with a known, unflagged price:

- instances   = ceil(count / gpu_count); GPUs beyond `count` are noted as idle;
- on-demand, spot: billed_s = ceil(duration_s / billing_granularity_s) × billing_granularity_s,
  total = instances × hourly × billed_s / 3600;
- reserved-1y/3y: the term must be bought whole: total = instances × effective hourly × 8760 × years,
  with break-even hours per month vs on-demand = reserved hourly × 730 / on-demand hourly;
- monthly: months = ceil(duration / 730 h), total = instances × monthly × months; shown only when
  it beats on-demand for the duration, the offer has no on-demand price, or monthly was asked for.

Totals are converted to the quote currency with the catalog's FX rate. Ranking uses floats;
every figure handed out is an exact `Decimal` built from the catalog's decimal prices.
Unless `all_regions`, only the cheapest region/zone per provider × instance type × model is kept.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import asdict, dataclass, field
from decimal import Decimal

from .catalog import Catalog, days_old
from .plural import plural
from .regions import check_selectors, matches
from .request import HOUR_S, MONTH_S, PRICING_MODELS, Request

HOURS_PER_YEAR = 8760
HOURS_PER_MONTH = 730
STALE_AFTER_DAYS = 30
_COLUMN = {"on-demand": "on_demand_hourly", "spot": "spot_hourly", "reserved-1y": "reserved_1y_hourly",
           "reserved-3y": "reserved_3y_hourly", "monthly": "monthly"}
_FLAG_SCOPE = {"on-demand": "on_demand", "spot": "spot", "reserved-1y": "reserved_1y",
               "reserved-3y": "reserved_3y", "monthly": "monthly"}
_TERM_YEARS = {"reserved-1y": 1, "reserved-3y": 3}
_MICRO = Decimal("0.000001")


def exact(value: float) -> Decimal:
    """The catalog's decimal price back from its float (catalog prices have at most 6 decimals)."""
    return Decimal(round(value * 1_000_000)) * _MICRO


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

    def to_dict(self) -> dict:
        return asdict(self)


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

    def cheapest(self, **where) -> QuoteOption | None:
        """The first option whose attributes equal `where` (e.g. provider='aws', pricing_model='spot')."""
        return next((o for o in self.options if all(getattr(o, k) == v for k, v in where.items())), None)

    def to_frame(self):
        """The options as a DataFrame; `.attrs` keeps the notices and, for an empty one, the reason."""
        import pandas as pd

        frame = pd.DataFrame([o.to_dict() for o in self.options])
        frame.attrs.update(notices=list(self.notices), empty_reason=self.empty_reason)
        return frame


def _billed_seconds(duration_s, granularity_s):
    return (-(-duration_s // granularity_s)) * granularity_s


def select_offers(catalog: Catalog, gpu: str, *, providers=(), regions=(), verified_only: bool = False):
    """The catalog's whole-GPU offers of `gpu` that pass the provider, region and verified filters."""
    import numpy as np

    offers = catalog.offers_of(gpu)
    if providers:
        offers = offers[offers.provider.isin(providers)]
    if regions and len(offers):
        offers = offers[np.array([matches(r, c, k, regions) for r, c, k in
                                  zip(offers.region, offers.country, offers.continent)], dtype=bool)]
    if verified_only:
        offers = offers[offers.verified]
    return offers


_KEYS = ("provider", "instance_type", "gpu_count", "region", "zone")


def price_table(offers, *, instances, duration_s, models, fx, currency: str, include_flagged: bool = False,
                explicit_monthly: bool = False):
    """Every (offer, pricing model) with a usable price, for per-offer `instances` and `duration_s` arrays.

    Returns (a narrow table: `offer` (the offer's index label), pricing_model, instances, duration_s, price,
    total_rank, on_demand_rank and the ranking keys; the number of prices left out for known defects).
    `total_rank` is a float for sorting only. Only the rows finally shown are widened back to full offers.
    """
    import numpy as np
    import pandas as pd

    count = len(offers)
    instances = np.broadcast_to(np.asarray(instances, dtype=int), (count,))
    duration_s = np.broadcast_to(np.asarray(duration_s, dtype=np.int64), (count,))
    billed_s = _billed_seconds(duration_s, offers.billing_granularity_s.to_numpy().astype(np.int64))
    months = -(-duration_s // MONTH_S)
    factors = {c: fx.factor(c, currency) for c in set(offers.currency)}
    to_target = offers.currency.map(factors).to_numpy(dtype=float)
    on_demand_total = instances * offers.on_demand_hourly.to_numpy() * billed_s / HOUR_S * to_target
    flags = offers["flags"].to_numpy(dtype=object)
    keys = {key: offers[key].to_numpy() for key in _KEYS}

    picks, flagged_excluded = [], 0
    for number, model in enumerate(models):
        price = offers[_COLUMN[model]].to_numpy()
        flagged = _flagged(flags, model)
        available = ~np.isnan(price)
        if not include_flagged:
            flagged_excluded += int((available & flagged).sum())
        keep = available & (include_flagged | ~flagged)
        if model in _TERM_YEARS:
            units = np.full(count, float(HOURS_PER_YEAR * _TERM_YEARS[model]))
        elif model == "monthly":
            units = months.astype(float)
        else:
            units = billed_s / HOUR_S
        total = instances * price * units * to_target
        if model == "monthly" and not explicit_monthly:
            keep &= np.isnan(on_demand_total) | (total < on_demand_total)
        where = np.flatnonzero(keep)
        picks.append((where, np.full(len(where), number), price[where], total[where]))
    # One table for all models: positions into the offers, gathered once per column.
    rows = np.concatenate([p[0] for p in picks]) if picks else np.zeros(0, dtype=int)
    model_numbers = np.concatenate([p[1] for p in picks]) if picks else np.zeros(0, dtype=int)
    table = pd.DataFrame({
        "offer": offers.index.to_numpy()[rows], "pricing_model": np.asarray(models, dtype=object)[model_numbers],
        "instances": instances[rows], "duration_s": duration_s[rows],
        "price": np.concatenate([p[2] for p in picks]) if picks else np.zeros(0),
        "total_rank": np.concatenate([p[3] for p in picks]) if picks else np.zeros(0),
        "on_demand_rank": on_demand_total[rows], **{key: values[rows] for key, values in keys.items()}})
    return table, flagged_excluded


def _order(table, keys: list[str]):
    """Row positions sorted by `keys` (first key most significant), stable, with numpy's lexsort."""
    import numpy as np

    return np.lexsort([table[key].to_numpy() for key in reversed(keys)])


def _first_of_each(table, keys: list[str]):
    """Keep the first row of each combination of `keys`, in the table's order."""
    import numpy as np

    combined = table[keys[0]].astype(str).to_numpy().astype(object)
    for key in keys[1:]:
        combined = combined + "\x1f" + table[key].astype(str).to_numpy().astype(object)
    _, first = np.unique(combined, return_index=True)
    return table.iloc[np.sort(first)]


def cheapest_per_offer(table, *, all_regions: bool):
    """The cheapest region/zone per provider × instance type × model, or (all_regions) one row per region,
    spot keeping its zones; sorted cheapest first, fewer hosts first on ties."""
    import pandas as pd

    if not len(table):
        return table
    if not all_regions:
        table = table.iloc[_order(table, ["total_rank", "instances", "region", "zone"])]
        table = _first_of_each(table, ["provider", "instance_type", "gpu_count", "pricing_model"])
    else:
        # Outside spot, a price does not depend on the zone: one row per region.
        spot = (table.pricing_model == "spot").to_numpy()
        table = pd.concat([table[spot], _first_of_each(table[~spot].assign(zone=""), [
            "provider", "region", "instance_type", "gpu_count", "pricing_model"])], ignore_index=True)
    return table.iloc[_order(table, ["total_rank", "instances", "provider", "region", "zone"])]


def priced_offers(table, catalog: Catalog):
    """(priced row, full offer row) pairs for the rows of a (short) price table."""
    return ((priced, catalog.record(priced.offer)) for priced in table.itertuples(index=False))


def quote(request: Request, catalog: Catalog, *, today: dt.date, currency: str = "USD", top: int | None = None,
          all_regions: bool = False, include_flagged: bool = False, verified_only: bool = False) -> Quote:
    """Price `request` against `catalog`. `today` dates the staleness check; nothing is read from the clock."""
    import numpy as np

    currency = request.currency or currency
    check_selectors(request.regions, catalog.offers.region.unique(), catalog.offers.country.unique())
    offers = select_offers(catalog, request.gpu, providers=request.providers, regions=request.regions,
                           verified_only=verified_only)
    models = request.pricing_models or PRICING_MODELS
    table, flagged_excluded = price_table(
        offers, instances=np.ceil(request.count / offers.gpu_count.to_numpy()), duration_s=request.duration_s,
        models=models, fx=catalog.fx, currency=currency, include_flagged=include_flagged,
        explicit_monthly="monthly" in request.pricing_models)
    considered = len(table)
    table = cheapest_per_offer(table, all_regions=all_regions)
    if top is not None:
        table = table.head(top)
    options = tuple(to_option(priced, offer, request.count, catalog, currency, today)
                    for priced, offer in priced_offers(table, catalog))
    reason = None if options else empty_reason(request, catalog, models=models, verified_only=verified_only,
                                               include_flagged=include_flagged, currency=currency)
    return Quote(request=request, options=options, currency=currency, offers_considered=considered,
                 flagged_excluded=flagged_excluded, notices=_notices(request, offers, options, models,
                                                                     flagged_excluded), empty_reason=reason)


def to_option(priced, row, gpus_requested: int, catalog: Catalog, currency: str, today: dt.date) -> QuoteOption:
    """A `price_table` row and its offer as an exact QuoteOption (Decimal money, notes for the reader)."""
    model = priced.pricing_model
    duration_s = int(priced.duration_s)
    price = catalog.fx.convert(exact(priced.price), row.currency, currency)
    instances = int(priced.instances)
    gpu_count = int(row.gpu_count)
    billed_s = int(_billed_seconds(duration_s, int(row.billing_granularity_s)))
    if model == "monthly":
        months = -(-duration_s // MONTH_S)
        billed_hours = Decimal(months * HOURS_PER_MONTH)
        total = price * instances * months
        hourly = price / HOURS_PER_MONTH
    else:
        billed_hours = Decimal(HOURS_PER_YEAR * _TERM_YEARS[model]) if model in _TERM_YEARS else \
            Decimal(billed_s) / HOUR_S
        total = price * instances * billed_hours
        hourly = price
    on_demand = None if math.isnan(row.on_demand_hourly) else catalog.fx.convert(
        exact(row.on_demand_hourly), row.currency, currency)
    savings = None
    if on_demand and model in _TERM_YEARS:  # a term is sold as a discount on the hourly rate
        savings = 1 - hourly / on_demand
    elif on_demand is not None and model != "on-demand":
        od_total = on_demand * instances * Decimal(billed_s) / HOUR_S
        savings = (od_total - total) / od_total if od_total else None
    source, as_of = (row.reserved_source, row.reserved_as_of) if model in _TERM_YEARS and row.reserved_source \
        else (row.source, row.as_of)
    notes = _notes(row, gpus_requested, duration_s, model, instances, gpu_count, hourly, on_demand, today, catalog,
                   currency, as_of)
    return QuoteOption(
        provider=row.provider, region=row.region, zone=priced.zone if model == "spot" else "",
        instance_type=row.instance_type, instances=instances, gpu=row.gpu, gpu_count=gpu_count,
        gpu_memory_gib=float(row.gpu_memory_gib), pricing_model=model, hourly=hourly, total=total,
        currency=currency, billed_hours=billed_hours,
        per_gpu_hour=total / (Decimal(gpus_requested) * Decimal(duration_s) / HOUR_S),
        savings_vs_on_demand=savings, interconnect=row.interconnect, price_currency=row.currency,
        source=source, as_of=as_of, verified=bool(row.verified), notes=tuple(notes),
    )


def _notes(row, gpus_requested, duration_s, model, instances, gpu_count, hourly, on_demand, today, catalog,
           currency, as_of) -> list[str]:
    notes = []
    idle = instances * gpu_count - gpus_requested
    if idle:
        notes.append(f"{idle} of {instances * gpu_count} GPUs idle")
    if instances > 1:
        notes.append(f"spans {instances} hosts (network, not NVLink, between them)")
    elif gpus_requested > 1 and row.interconnect == "pcie":
        notes.append("GPUs linked over PCIe only (no NVLink)")
    if model == "spot":
        notes.append("spot: may be interrupted; checkpoint your job")
    if model in _TERM_YEARS:
        years = _TERM_YEARS[model]
        notes.append(f"commits to a {years}-year term ({HOURS_PER_YEAR * years} h) for a {duration_s / HOUR_S:g} h job")
        if on_demand:
            break_even = hourly * HOURS_PER_MONTH / on_demand
            notes.append(f"breaks even vs on-demand at {break_even:.0f} h/month of use")
    if model == "monthly":
        notes.append("monthly subscription: billed per whole month (730 h)")
    scope = _FLAG_SCOPE[model]
    notes += [text for note in row.notes.split(";") if note
              for note_scope, _, text in [note.partition(":")] if note_scope in ("all", scope)]
    if row.flags:
        notes.append(f"catalog flags: {row.flags} (included on request)")
    if not row.verified:
        notes.append(f"unverified list price ({row.source})")
    age = days_old(as_of, today)
    if age is None:
        notes.append("price date unknown")
    elif age > STALE_AFTER_DAYS:
        notes.append(f"stale: price as of {as_of} ({age} days old)")
    if row.currency != currency:
        foreign = row.currency if row.currency != "USD" else currency
        notes.append(f"converted from {row.currency} at {catalog.fx.describe(foreign)}")
    return notes


def _notices(request, offers, options, models, flagged_excluded) -> tuple[str, ...]:
    notices = list(request.assumptions)
    for model in models:
        if model in _TERM_YEARS and (not len(offers) or offers[_COLUMN[model]].isna().all()):
            notices.append(f"{model}: reserved price unknown (no source in the catalogs gives one)")
    if flagged_excluded:
        notices.append(f"{plural(flagged_excluded, 'price')} with known data defects left out "
                       "(include-flagged shows them)")
    unverified = sum(1 for o in options if not o.verified)
    if unverified:
        notices.append(f"{unverified} of {plural(len(options), 'option')} "
                       + ("is an unverified list price" if unverified == 1 else "are unverified list prices"))
    return tuple(notices)


def _listed(values) -> str:
    values = list(values)
    return ", ".join(values[:6]) + (f" and {len(values) - 6} more" if len(values) > 6 else "")


def _usable(offers, model: str, include_flagged: bool):
    """Which offers have a price in `model` that a quote may use (known, and unflagged unless asked)."""
    known = offers[_COLUMN[model]].notna().to_numpy()
    if include_flagged:
        return known
    return known & ~_flagged(offers["flags"].to_numpy(dtype=object), model)


def _flagged(flags, model: str):
    """Which offers carry a data-defect flag that applies to `model` (its own scope, or `all:`)."""
    import numpy as np

    scope = f"{_FLAG_SCOPE[model]}:"
    return np.fromiter(("all:" in f or scope in f for f in flags), dtype=bool, count=len(flags))


def _cheapest_per_gpu_hour(offers, model: str, usable, fx, currency: str) -> Decimal:
    """The lowest price per GPU-hour of `model` among the usable offers, exact, in `currency`."""
    offers = offers[usable]
    hours = HOURS_PER_MONTH if model == "monthly" else 1
    rank = offers[_COLUMN[model]] / offers.gpu_count * offers.currency.map(lambda c: fx.factor(c, currency))
    row = offers.loc[rank.idxmin()]
    return fx.convert(exact(row[_COLUMN[model]]), row.currency, currency) / (int(row.gpu_count) * hours)


def empty_reason(request: Request, catalog: Catalog, *, models, verified_only: bool, include_flagged: bool,
                 currency: str) -> str:
    """Why a quote has no options: the first filter that left no offer, or the pricing models without a usable
    price, and what the catalogs offer instead (`no monthly prices for H100 …; on-demand from $2.10/GPU-h`)."""
    from .render.money import format_money

    gpu = request.gpu
    offered = catalog.offers_of(gpu)
    if not len(offered):
        return f"no offers of {gpu} in the catalogs"
    source = f" from {_listed(request.providers)}" if request.providers else ""
    offers = select_offers(catalog, gpu, providers=request.providers)
    if not len(offers):
        return f"no {gpu} offers{source}; {gpu} is offered by {_listed(sorted(set(offered.provider)))}"
    where = f" in {_listed(request.regions)}" if request.regions else ""
    in_regions = select_offers(catalog, gpu, providers=request.providers, regions=request.regions)
    if not len(in_regions):
        return f"no {gpu} offers{source}{where}; offered in {_listed(sorted(set(offers.region)))}"
    if verified_only and not in_regions.verified.any():
        return f"every {gpu} offer{source}{where} is an unverified list price (drop verified-only to see them)"
    offers = in_regions[in_regions.verified] if verified_only else in_regions
    scope = f"{gpu}{source}{where}"
    if any(offers[_COLUMN[model]].notna().any() for model in models):
        return f"every {' or '.join(models)} price for {scope} has a known data defect (include-flagged shows them)"
    instead = []
    for model in PRICING_MODELS:
        usable = _usable(offers, model, include_flagged)
        if model not in models and usable.any():
            price = _cheapest_per_gpu_hour(offers, model, usable, catalog.fx, currency)
            instead.append(f"{model} from {format_money(price, currency, places=2 if price >= 1 else 4)}/GPU-h")
    missing = f"no {' or '.join(models)} prices for {scope} in the catalogs"
    return f"{missing}; {', '.join(instead)}" if instead else missing
