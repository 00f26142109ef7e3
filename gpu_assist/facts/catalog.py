"""The catalogs' own facts: how a price is paid (`PricingModel`), a row's known data defects (`Flag`, scoped in
the `flags` column) and the labels a row gives its reader (`notes` column), parsed once per distinct text. Pure.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from functools import lru_cache
from typing import Any, ClassVar

from .fact import Fact


class PricingModel(StrEnum):
    """How a price is paid, as the grammar and the catalogs name it."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"
    RESERVED_1Y = "reserved-1y"
    RESERVED_3Y = "reserved-3y"
    MONTHLY = "monthly"

    @property
    def term_years(self) -> int | None:
        """The years a reserved term commits to; None for the other models."""
        return TERM_YEARS.get(self)

    @property
    def reserved(self) -> bool:
        return self in TERM_YEARS


TERM_YEARS = {PricingModel.RESERVED_1Y: 1, PricingModel.RESERVED_3Y: 3}  # the years each reserved model commits to


class Flag(StrEnum):
    """A known data defect of a catalog price (the reason of a `flags` entry): such a price is left out of quotes
    unless asked for (`include-flagged`)."""

    AT_ON_DEMAND_CAP = "at-on-demand-cap"
    NOT_BELOW_ON_DEMAND = "not-below-on-demand"
    PRICE_NEEDS_REVIEW = "price-needs-review"
    PLACEHOLDER_PRICE = "placeholder-price"
    ZERO_HOST_PRICE = "zero-host-price"
    ARTICLE_CLAIM_CONTRADICTED = "article-claim-contradicted"
    FRACTIONAL_GPU = "fractional-gpu"
    # Caught at import by the price sanity rules (`sources/sanity.py`; the rule each belongs to in `SANITY_RULE`).
    BELOW_PARTS_PRICE = "below-parts-price"
    FLEX_START_PRICE = "flex-start-price"
    FAR_BELOW_GPU_MEDIAN = "far-below-gpu-median"
    SPOT_OUTLIER = "spot-outlier"
    UPSTREAM_FLAGGED = "upstream-flagged"
    RESOLD_BELOW_SOURCE = "resold-below-source"
    SPOT_DISAGREES_WITH_BILLING = "spot-disagrees-with-billing"

    @property
    def shown_as_unverified(self) -> bool:
        """Whether the flagged price is an unverified claim, not a defect of a real price: shown with the other
        unverified prices when asked for (`include-unverified`), as well as with `include-flagged`."""
        return self is Flag.ARTICLE_CLAIM_CONTRADICTED


# The price sanity rule (`sources/sanity.py`) that raises each flag: (a) below the list price of its parts, (c) a GCP
# Flex-start rate billed as on-demand, (d) far below the GPU's median, (e) one zone's spot far below the others,
# and `resale`: a defect of the upstream offer a reseller resells. `catalog status` counts them per provider.
SANITY_RULE = {Flag.BELOW_PARTS_PRICE: "a", Flag.FLEX_START_PRICE: "c", Flag.FAR_BELOW_GPU_MEDIAN: "d",
               Flag.SPOT_OUTLIER: "e", Flag.UPSTREAM_FLAGGED: "resale", Flag.RESOLD_BELOW_SOURCE: "resale",
               Flag.SPOT_DISAGREES_WITH_BILLING: "b_spot"}


class ScopedFlag(Fact):
    """A defect flag and the price it applies to (`all`, or a pricing model's column scope such as `spot`)."""

    scope: str
    flag: Flag


class CatalogLabel(Fact):
    """A label a catalog row gives a reader (`notes` column): the source's own words and the price it concerns."""

    scope: str
    text: str


class SourcesDisagree(CatalogLabel):
    """Two public sources price the offer differently (both figures and dates in `text`)."""


class ContradictedBy(CatalogLabel):
    """An article's claim (its instance name or GPU) that the provider's documentation contradicts; `text` is
    `contradicted-by <source>`, the source's key in SOURCES.md (`sources/china.py` writes it)."""

    _about_trust = True

    @property
    def source(self) -> str:
        return self.text.partition(" ")[2]


class Label(CatalogLabel):
    """Any other label of the catalog (a reserved term's conditions, a marketplace snapshot, a spec doubt)."""


# Labels the importers state as values, not words: the `notes` entry is `scope:@kind field=value …` (no spaces in
# a value), made by `StatedLabel.entry` and parsed back by `parse_labels`; `text` keeps the entry as written.

class StatedLabel(CatalogLabel):
    """A label whose fields the importer states (`kind` names it in the column); the words are the renderer's."""

    kind: ClassVar[str] = ""

    @classmethod
    def entry(cls, scope: str, **values: object) -> str:
        """The `notes` column entry of this label with these field values."""
        return f"{scope}:@{cls.kind} " + " ".join(f"{name}={value}" for name, value in values.items())

    @classmethod
    def parsed(cls, scope: str, text: str) -> CatalogLabel:
        values = dict(part.split("=", 1) for part in text.split()[1:])
        return cls(scope, text, *(_FIELD_TYPES[name](values[name]) for name in cls._fields[2:]))


class Derived(StatedLabel):
    """A price the source computed from another: the scope's price is a fixed `share` of on-demand (Verda's spot
    is 0.35 × on-demand), nobody's price."""

    _untrusting = _about_trust = True
    kind = "derived"
    share: Decimal


class Corrected(StatedLabel):
    """A value of the row the source got wrong, corrected on a named source: `column` from `was` to `now`."""

    kind = "corrected"
    column: str
    was: str
    now: str
    on: str


class Replaced(StatedLabel):
    """The on-demand price one source gave (`figure`, from `was_source`) differs from the provider's own billing
    catalog (`by`) by more than 10 %: the billing catalog's price is the row's; `flex_start` when the replaced
    figure carries a Flex-start (DWS) GPU rate on an on-demand host (rule c)."""

    kind = "replaced"
    figure: Decimal
    was_source: str
    by: str
    by_as_of: str
    flex_start: bool


class SpotOutlier(StatedLabel):
    """This zone's spot price is below half the median of the instance type's spot prices over its `zones` zones
    (rule e): one zone's luck, not the price a buyer can expect."""

    kind = "spot-outlier"
    zones: int
    median: Decimal


class LocalZone(StatedLabel):
    """The zone is an AWS Local Zone or Wavelength zone (`wavelength`): a metro edge site with its own capacity,
    services and prices, not one of the region's availability zones."""

    kind = "local-zone"
    zone: str
    wavelength: bool


class ResoldBelow(StatedLabel):
    """A reseller's price per GPU-hour below `share` of the upstream provider's own lowest price for the same GPU
    and pricing model (`upstream`, `per_gpu`): nobody can confirm the resale at that price."""

    kind = "resold-below"
    upstream: str
    per_gpu: Decimal
    share: Decimal


_FIELD_TYPES: dict[str, Any] = {"column": str, "was": str, "now": str, "on": str, "figure": Decimal,
                                "was_source": str, "by": str, "by_as_of": str, "flex_start": lambda text: text == "yes",
                                "zones": int, "median": Decimal, "zone": str, "wavelength": lambda text: text == "yes",
                                "upstream": str, "per_gpu": Decimal, "share": Decimal}
STATED_LABELS = {kind.kind: kind for kind in (Derived, Corrected, Replaced, SpotOutlier, LocalZone, ResoldBelow)}


def parse_flags(column: str) -> tuple[ScopedFlag, ...]:
    """The `flags` column (`spot:at-on-demand-cap;all:placeholder-price`) as facts; the loader has checked it."""
    return _parsed_flags(column) if column else ()


@lru_cache(maxsize=None)
def _parsed_flags(column: str) -> tuple[ScopedFlag, ...]:
    return tuple(ScopedFlag(scope, Flag(reason)) for part in column.split(";") if part
                 for scope, _, reason in [part.partition(":")])


def parse_labels(column: str) -> tuple[CatalogLabel, ...]:
    """The `notes` column (`all:text;spot:@derived share=0.35`) as facts, once per distinct column text: a stated
    label (`@kind`) by its fields; the importers write the other kinds in these words (`committed.py`, `china.py`)."""
    return _parsed_labels(column) if column else ()


@lru_cache(maxsize=None)
def _parsed_labels(column: str) -> tuple[CatalogLabel, ...]:
    labels: list[CatalogLabel] = []
    for part in column.split(";"):
        if part:
            scope, _, text = part.partition(":")
            if text.startswith("@"):
                labels.append(STATED_LABELS[text[1:].split(" ", 1)[0]].parsed(scope, text))
                continue
            kind = SourcesDisagree if text.startswith("sources disagree") else \
                ContradictedBy if text.startswith("contradicted-by ") else Label
            labels.append(kind(scope, text))
    return tuple(labels)
