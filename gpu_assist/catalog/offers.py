"""One offer of the catalogs as a plain-Python record, and the columns of the CSV files it comes from. Pure.

The pricing core reads offers as `Offer` records (named tuples: attribute access at tuple speed, no pandas):
money as exact `Decimal` from the catalog's decimal strings, `None` where a price or a spec is blank.
A catalog stores each offer as a plain tuple of the same values except money, which it keeps in integer
micro-units (the catalog's six decimal places, exact): such tuples are what the compiled cache pickles, and
they unpickle twice as fast as tuples holding Decimals. `Offer.from_row` makes the record, parsing the
`flags` and `notes` columns into facts (`facts.ScopedFlag`, `facts.CatalogLabel`) once per distinct text.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, NamedTuple

from ..facts import CatalogLabel, PricingModel, ScopedFlag, parse_flags, parse_labels
from .providers import REGISTRY

_M = PricingModel
# Each pricing model's price column, and the scope its flags and notes name (`spot:…`, `reserved_1y:…`).
PRICE_COLUMN = {_M.ON_DEMAND: "on_demand_hourly", _M.SPOT: "spot_hourly", _M.RESERVED_1Y: "reserved_1y_hourly",
                _M.RESERVED_3Y: "reserved_3y_hourly", _M.MONTHLY: "monthly"}
FLAG_SCOPE = {_M.ON_DEMAND: "on_demand", _M.SPOT: "spot", _M.RESERVED_1Y: "reserved_1y", _M.RESERVED_3Y: "reserved_3y",
              _M.MONTHLY: "monthly"}
FLAG_SCOPES = ("all", *FLAG_SCOPE.values())
INTERCONNECTS = ("nvlink", "pcie", "unknown")
# Marketplaces whose every listing is one machine (SOURCES.txt gives no count of hosts behind a listing): a quote
# and a plan take at most one of it.
MARKETPLACES = tuple(p.name for p in REGISTRY if p.marketplace)


class Offer(NamedTuple):
    """One (provider, region, zone, instance type, GPU configuration) and its prices, as `catalog.py` documents.

    Prices are per instance and hour (reserved: effective hourly; monthly: per instance and month)."""

    provider: str
    region: str
    zone: str
    instance_type: str
    gpu: str
    gpu_count: float  # GPUs per instance; below 1 for a fraction of a GPU
    gpu_memory_gib: float | None
    vcpus: float | None
    memory_gib: float | None
    interconnect: str
    currency: str
    on_demand_hourly: Decimal | None
    spot_hourly: Decimal | None
    reserved_1y_hourly: Decimal | None
    reserved_3y_hourly: Decimal | None
    monthly: Decimal | None
    billing_granularity_s: int
    source: str
    as_of: str
    verified: bool
    flags: tuple[ScopedFlag, ...]  # known data defects (the `flags` column, parsed)
    source_detail: str
    country: str
    continent: str
    notes: tuple[CatalogLabel, ...]  # what a reader must see (the `notes` column, parsed)
    reserved_source: str
    reserved_as_of: str
    imported: str  # the day the row entered the catalog; blank: not recorded (see `catalog.ages`)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Offer:
        """The record of a stored row (money in micro-units, see the module docstring)."""
        values = list(row)
        for index in _PRICE_INDEXES:
            if values[index] is not None:
                values[index] = Decimal(values[index]).scaleb(-6)
        values[_FLAGS] = parse_flags(values[_FLAGS])
        values[_NOTES] = parse_labels(values[_NOTES])
        return cls._make(values)

    def price(self, model: PricingModel) -> Decimal | None:
        """The price of a pricing model (`on-demand`, `spot`, `reserved-1y`, `reserved-3y`, `monthly`)."""
        price: Decimal | None = getattr(self, PRICE_COLUMN[model])
        return price

    def flagged(self, model: PricingModel, *, claims_shown: bool = False) -> bool:
        """Whether a known data defect applies to `model`'s price (a flag of its own scope, or `all:`); with
        `claims_shown`, a flag that only marks an unverified claim (`Flag.shown_as_unverified`) does not count."""
        return any(not (claims_shown and flag.flag.shown_as_unverified) for flag in self.flags_for(model))

    def flags_for(self, model: PricingModel) -> tuple[ScopedFlag, ...]:
        """The known data defects of `model`'s price (a spot outlier is no defect of the row's on-demand price)."""
        scopes = ("all", FLAG_SCOPE[model])
        return tuple(flag for flag in self.flags if flag.scope in scopes)

    def notes_for(self, model: PricingModel) -> list[CatalogLabel]:
        """The labels a reader must see with `model`'s price (`all:` ones and those of its scope)."""
        scopes = ("all", FLAG_SCOPE[model])
        return [label for label in self.notes if label.scope in scopes]


OFFER_COLUMNS: tuple[str, ...] = Offer._fields
# Columns a file may leave out (older catalogs, hand-written test files): read as blank, the location derived.
OPTIONAL_COLUMNS = ("country", "continent", "notes", "reserved_source", "reserved_as_of", "imported")
PRICE_COLUMNS = tuple(PRICE_COLUMN.values())
NUMBER_COLUMNS = ("gpu_count", "gpu_memory_gib", "vcpus", "memory_gib", "billing_granularity_s") + PRICE_COLUMNS
KEY_COLUMNS = ("provider", "region", "zone", "instance_type", "gpu", "gpu_count")
_PRICE_INDEXES = tuple(OFFER_COLUMNS.index(column) for column in PRICE_COLUMNS)
_FLAGS, _NOTES = OFFER_COLUMNS.index("flags"), OFFER_COLUMNS.index("notes")
