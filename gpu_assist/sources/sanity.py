"""Price sanity at import: upstream catalog defects caught as typed flags and labels before they rank.

Each rule is a predicate over prices (so a test can ask it of any row) and a pass that flags the rows it holds
for; a flagged price is left out of quotes unless asked for (`include-flagged`), a label is shown with it:

- (a) `below_parts`: a GCP whole-instance on-demand price below the least its parts are listed at: the host's
  price plus its GPUs at the GPU's lowest on-demand per-GPU rate over the regions (Flex-start rates left out),
  and no less than the GPUs' own spot price → `on_demand:below-parts-price`;
- (c) `flex_start_rate`: a GCP GPU part priced at a Dynamic Workload Scheduler (Flex-start) rate, which the
  Billing API lists as "OnDemand" and SkyPilot's fetcher may take first (SOURCES-plans.txt part B) →
  `on_demand:flex-start-price`; (b), the provider's billing catalog winning over it, is `committed.py`'s;
- (d) `far_below_median`: a per-GPU-hour price below a fifth of the GPU's median over verified providers (each
  provider's median on-demand per-GPU-hour, unflagged; at least `MIN_PROVIDERS` of them) →
  `on_demand:far-below-gpu-median`;
- (e) `spot_outlier`: a spot price below half the median of the instance type's spot prices across its zones
  (at least `MIN_ZONES`) → `spot:spot-outlier` and a `SpotOutlier` label with the zone count and median;
- resale: primeintellect and shadeform name the upstream provider in the instance type
  (`datacrunch__4xV100_16GB__20__90`, `lambdalabs_A100x8`); a defect of an upstream provider's GPU line (its
  own row or any resale of it) flags every resale of that line → `all:upstream-flagged`. The key is
  (upstream provider, GPU): resellers slice the same hosts by GPU count at a per-GPU price, so the upstream's
  SKU names differ from theirs but the machine and its price are one. A resale priced per GPU-hour below
  `RESALE_SHARE` of the upstream's own lowest price for the same GPU and pricing model (unflagged, not derived)
  → `<model>:resold-below-source` and a `ResoldBelow` label: the upstream does not sell the machine at that price,
  and no public source confirms the reseller does.

AWS Local Zones and Wavelength zones (`use1-atl2-az1`, `usw2-wl1-las-wlz1`: a location between the region
prefix and the zone) are labelled `LocalZone`, not flagged: a real price at an edge site.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal

from ..facts import Derived, Flag, LocalZone, ResoldBelow, ScopedFlag, SpotOutlier
from .offer_row import OfferRow, with_flag, with_label

MIN_PROVIDERS = 3
MIN_ZONES = 3
MEDIAN_SHARE = Decimal(5)  # rule (d): below median / 5
ZONE_SHARE = Decimal(2)  # rule (e): below median / 2
# A resale below three quarters of its upstream's own price: a gap no reseller's margin explains (Shadeform passes
# its providers' prices through unchanged; Prime Intellect's other resales sit within 15 % of theirs).
RESALE_SHARE = Decimal("0.75")

# Flex-start (DWS) GPU rates per GPU-hour, as SkyPilot rounds them (5 decimals), each from a published SKU
# (SOURCES-plans.txt S-GCP-DWS-ZENN and S-DWS-SKU-CORROB): H100 341A-49A5-0C07 4.200761 (us-central1, also Seoul
# $4.20), H100 Mega $4.42 (Seoul: 4.42394 in 7 catalog regions), A100 1.61365 and A100 80GB 1.846198 (us-central1).
FLEX_START_RATES = {"H100": Decimal("4.20076"), "H100-MEGA": Decimal("4.42394"), "A100": Decimal("1.61365"),
                    "A100-80GB": Decimal("1.8462")}
# Elsewhere the Flex-start rate is a fixed share of the region's on-demand rate (part B: A100 exactly 0.550,
# A100 80GB exactly 0.470 of another region's list rate of the same GPU).
FLEX_START_SHARES = {"A100": Decimal("0.55"), "A100-80GB": Decimal("0.47")}
_SAME = Decimal("0.00001")

# Upstream names in resellers' instance types → the provider they are (our name where we list it).
UPSTREAM_NAMES = {"datacrunch": "verda", "lambdalabs": "lambda", "hyperstack": "hyperstack", "nebius": "nebius",
                  "crusoecloud": "crusoe", "crusoe": "crusoe", "denvr": "denvr", "paperspace": "paperspace",
                  "massedcompute": "massedcompute", "oblivus": "oblivus", "latitude": "latitude",
                  "scaleway": "scaleway", "vultr": "vultr", "excesssupply": "excesssupply"}
RESELLERS = {"primeintellect": "__", "shadeform": "_"}  # the separator after the upstream name
# Defects of an upstream line's price that every resale shares (spot defects are each seller's own).
PROPAGATING = frozenset({Flag.PRICE_NEEDS_REVIEW, Flag.PLACEHOLDER_PRICE, Flag.FAR_BELOW_GPU_MEDIAN,
                         Flag.BELOW_PARTS_PRICE, Flag.UPSTREAM_FLAGGED})
_LOCAL_ZONE = re.compile(r"^[a-z]+\d-(?P<site>[a-z]+\d+)(-[a-z]+-wlz\d+|-az\d+)$")
_WAVELENGTH = re.compile(r"-wl\d+-[a-z]+-wlz\d+$")


# --- the rules as predicates -------------------------------------------------------------------------------------

def flex_start_rate(gpu: str, per_gpu: Decimal, list_rates: Iterable[Decimal]) -> bool:
    """(c) Whether a GCP GPU part's per-GPU rate is a known Flex-start rate, or the GPU's fixed Flex-start share
    of one of its on-demand `list_rates` (other regions' rates of the same GPU)."""
    known = FLEX_START_RATES.get(gpu)
    if known is not None and abs(per_gpu - known) <= _SAME:
        return True
    share = FLEX_START_SHARES.get(gpu)
    return share is not None and any(abs(per_gpu - (rate * share).quantize(_SAME)) <= _SAME for rate in list_rates)


def below_parts(on_demand: Decimal, parts: Decimal) -> bool:
    """(a) Whether a whole instance costs less than the least its parts are listed at."""
    return on_demand < parts


def far_below_median(per_gpu: Decimal, median: Decimal) -> bool:
    """(d) Whether a per-GPU-hour price is below a fifth of the GPU's median over verified providers."""
    return per_gpu < median / MEDIAN_SHARE


def spot_outlier(spot: Decimal, median: Decimal) -> bool:
    """(e) Whether one zone's spot price is below half the median of the type's spot prices over its zones."""
    return spot < median / ZONE_SHARE


def local_zone(zone: str) -> LocalZone | None:
    """The AWS Local Zone or Wavelength zone `zone` is, as its label's fields; None for an availability zone."""
    if not _LOCAL_ZONE.match(zone):
        return None
    return LocalZone("all", "", zone, bool(_WAVELENGTH.search(zone)))


def upstream(provider: str, instance_type: str) -> str | None:
    """The upstream provider a reseller names in `instance_type`, or None (not a reseller, or not named)."""
    separator = RESELLERS.get(provider)
    if separator is None:
        return None
    return UPSTREAM_NAMES.get(instance_type.split(separator, 1)[0].lower())


# --- the passes over imported rows -------------------------------------------------------------------------------
# Each pass replaces the rows it flags or labels in the list it is given (a row is a frozen value).

def _flagged(row: OfferRow, scope: str) -> bool:
    return any(flag.scope in ("all", scope) for flag in row.flags)


def _per_gpu(row: OfferRow, price: Decimal | None) -> Decimal | None:
    if price is None or row.gpu_count < 1 or row.currency != "USD":
        return None
    return price / row.gpu_count


def _prices(row: OfferRow) -> tuple[tuple[Decimal | None, str, str], ...]:
    """(price, its column, its flag scope) of the on-demand and spot prices, the two the rules judge."""
    return (row.on_demand_hourly, "on_demand_hourly", "on_demand"), (row.spot_hourly, "spot_hourly", "spot")


def gpu_medians(rows: Iterable[OfferRow]) -> dict[str, Decimal]:
    """(d)'s reference: per GPU, the median over verified providers of each one's median unflagged on-demand
    per-GPU-hour price (a provider listing a type in 80 zones counts once); only GPUs with `MIN_PROVIDERS`."""
    by_gpu: dict[str, dict[str, list[Decimal]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        per_gpu = _per_gpu(row, row.on_demand_hourly)
        if per_gpu is not None and row.verified and not _flagged(row, "on_demand"):
            by_gpu[row.gpu][row.provider].append(per_gpu)
    return {gpu: statistics.median(statistics.median(prices) for prices in providers.values())
            for gpu, providers in by_gpu.items() if len(providers) >= MIN_PROVIDERS}


def flag_far_below_median(rows: list[OfferRow], medians: dict[str, Decimal]) -> None:
    """(d) over on-demand prices: a spot price is a discount of its own on-demand (Azure's A100 spot runs at a
    ninth of it), so a spot price is judged against its zones by (e), not against other providers' on-demand."""
    for n, row in enumerate(rows):
        median, per_gpu = medians.get(row.gpu), _per_gpu(row, row.on_demand_hourly)
        if median is not None and per_gpu is not None and far_below_median(per_gpu, median):
            rows[n] = with_flag(row, ScopedFlag("on_demand", Flag.FAR_BELOW_GPU_MEDIAN))


def flag_spot_outliers(rows: list[OfferRow]) -> None:
    """(e) per provider and instance type over the zones that price its spot."""
    zones: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n, row in enumerate(rows):
        if row.zone and row.spot_hourly is not None:
            zones[(row.provider, row.instance_type)].append(n)
    for group in zones.values():
        if len(group) < MIN_ZONES:
            continue
        median = statistics.median(rows[n].spot_hourly or Decimal(0) for n in group)
        for n in group:
            if spot_outlier(rows[n].spot_hourly or Decimal(0), median):
                row = with_flag(rows[n], ScopedFlag("spot", Flag.SPOT_OUTLIER))
                rows[n] = with_label(row, SpotOutlier.entry("spot", zones=len(group),
                                                            median=f"{median.quantize(Decimal('0.01'))}"))


def label_local_zones(rows: list[OfferRow]) -> None:
    for n, row in enumerate(rows):
        zone = local_zone(row.zone) if row.provider == "aws" else None
        if zone is not None:
            rows[n] = with_label(row, LocalZone.entry("all", zone=zone.zone,
                                                      wavelength="yes" if zone.wavelength else "no"))


def resold_lines(rows: Iterable[OfferRow]) -> set[tuple[str, str]]:
    """The (provider, GPU) lines with a price defect every resale shares, found on the upstream's own rows or on
    any reseller's."""
    return {(upstream(row.provider, row.instance_type) or row.provider, row.gpu) for row in rows
            if any(flag.flag in PROPAGATING for flag in row.flags)}


def flag_resales(rows: list[OfferRow], flagged: set[tuple[str, str]] | None = None) -> None:
    """Resale: every resale of an upstream GPU line with a price defect (`resold_lines`, of `rows` unless
    given)."""
    flagged = resold_lines(rows) if flagged is None else flagged
    for n, row in enumerate(rows):
        resold = upstream(row.provider, row.instance_type)
        if resold is not None and (resold, row.gpu) in flagged:
            rows[n] = with_flag(row, ScopedFlag("all", Flag.UPSTREAM_FLAGGED))


def _derived(row: OfferRow, scope: str) -> bool:
    return any(isinstance(label, Derived) and label.scope in ("all", scope) for label in row.notes)


def upstream_prices(rows: Iterable[OfferRow]) -> dict[tuple[str, str, str], Decimal]:
    """Per (provider, GPU, price column), the provider's own lowest per-GPU-hour price: unflagged, not derived."""
    lowest: dict[tuple[str, str, str], Decimal] = {}
    for row in rows:
        for price, column, scope in _prices(row):
            per_gpu = _per_gpu(row, price)
            if per_gpu is None or _flagged(row, scope) or _derived(row, scope) or upstream(
                    row.provider, row.instance_type) is not None:
                continue
            key = (row.provider, row.gpu, column)
            lowest[key] = min(per_gpu, lowest.get(key, per_gpu))
    return lowest


def flag_resold_below(rows: list[OfferRow], own: dict[tuple[str, str, str], Decimal] | None = None) -> None:
    """A resale priced below `RESALE_SHARE` of its upstream's own price for the same GPU and pricing model (the
    upstreams' prices of `rows` unless given)."""
    own = upstream_prices(rows) if own is None else own
    for n, row in enumerate(rows):
        resold = upstream(row.provider, row.instance_type)
        for price, column, scope in _prices(row):
            per_gpu, theirs = _per_gpu(row, price), own.get((resold or "", row.gpu, column))
            if resold is None or per_gpu is None or theirs is None or per_gpu >= theirs * RESALE_SHARE:
                continue
            row = with_label(with_flag(row, ScopedFlag(scope, Flag.RESOLD_BELOW_SOURCE)),
                             ResoldBelow.entry(scope, upstream=resold, per_gpu=theirs, share=RESALE_SHARE))
            rows[n] = row


def check(rows_by_provider: dict[str, list[OfferRow]]) -> None:
    """Every cross-row rule over one import of all providers, in place: (e) and local zones per provider, then
    (d) against the medians of the rows as they came in, then resale over the defects found so far."""
    lists = list(rows_by_provider.values())
    for rows in lists:
        flag_spot_outliers(rows)
        label_local_zones(rows)
    medians = gpu_medians(row for rows in lists for row in rows)
    for rows in lists:
        flag_far_below_median(rows, medians)
    own = upstream_prices(row for rows in lists for row in rows)
    for rows in lists:
        flag_resold_below(rows, own)
    flagged = resold_lines(row for rows in lists for row in rows)
    for rows in lists:
        flag_resales(rows, flagged)
