"""What the core knows about a price, a quote or a plan, as typed values; the words are the renderers'. Pure.

The core decides by these values (trust, ranking, grouping read types and fields, never text), and every face
writes them in its own words (`render/notes.py`): rewording a note cannot change what ranks first, and a new
fact (an outlier, a flex-start price, a spot risk) is one class here and one function there.

- `PricingModel`: how a price is paid (an enum; a `str`, so it is written and compared as the grammar's word).
- `Flag`: a known data defect a catalog row carries (`flags` column, `scope:reason`); `ScopedFlag` with its scope.
- catalog labels (`notes` column, `scope:text`): `SourcesDisagree`, `ContradictedBy`, `Label`, each
  keeping the source's words (they are the catalog's data, not ours), parsed once when an offer record is made
  (`parse_labels`); those the importers state as values (`scope:@kind field=value`): `Derived`, `Corrected`,
  `Replaced`, `SpotOutlier`, `LocalZone`, `ResoldBelow`.
- option notes (`QuoteOption.notes`): `Stale`, `Unverified`, `DateUnknown`, `Converted`, `MultiHost`, `IdleGpus`,
  `PcieOnly`, `BilledLonger`, `SpotInterruption`, `ReservedTerm`, `BreakEven`, `MonthlyBilling`, `Flagged`,
  `PricedFrom` (a Chinese cloud's price: its source and date),
  `Labelled` (a catalog label with the conversion its amounts are restated by); `AlsoAs` on a comparison row.
- notices (`Quote.notices`), said once under an answer: `Assumption`, `ReservedUnknown`, `FlaggedLeftOut`,
  `UnverifiedShown`, `MemoryFilter`, `PriceCap`, `PriceCapConverted`; `Restated` is a converted amount, and
  `InputConverted` a TCO input given in another currency.
- why a quote is empty (`Quote.empty_reason`): `NoOffers`, `NoProviderOffers`, `NoRegionOffers`, `AllUnverified`,
  `AllFlagged`, `NoPrices`.
- a plan's reasons (`Plan.reasons`): its option's notes and `Fastest`, `Checkpointing`, `MixedFleet`,
  `OwnHardware`, `Hybrid`, `OwnTooSmall`, `OverDeadline`, `OverBudget`, and why an offer cannot run the job at
  all: `TooManyToHold`, `TooManyToServe`, `GroupSpansHosts`, `Refused`.

Why `Fact` and not `@dataclass`: a cold quote creates every class here at import, and a frozen dataclass costs
about 0.4 ms to create (it compiles generated code) where a `Fact` costs microseconds; mypy reads both alike
(`dataclass_transform`): fields in order, positional or by keyword, frozen, equal by type and fields, hashable.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from functools import lru_cache
from typing import Any, ClassVar, dataclass_transform


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


@dataclass_transform(frozen_default=True, eq_default=True)
class Fact:
    """A fact the core states: immutable, equal by type and fields, hashable, picklable. A subclass declares its
    fields as annotations (a default as a class attribute) and the traits the core decides by as properties."""

    _fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = tuple(name for name, kind in cls.__dict__.get("__annotations__", {}).items()
                    if not str(kind).startswith("ClassVar"))
        cls._fields = cls._fields + own

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if kwargs or len(args) != len(fields):
            args = self._in_order(args, kwargs)
        self.__dict__.update(zip(fields, args))  # not through __setattr__, which refuses: frozen

    def _in_order(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Every field's value in order, from positional and keyword arguments and the class's defaults."""
        if len(args) > len(self._fields):
            raise TypeError(f"{type(self).__name__} takes {len(self._fields)} fields")
        values = dict(zip(self._fields, args), **kwargs)
        unknown = values.keys() - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]}")
        missing = [name for name in self._fields if name not in values and not hasattr(type(self), name)]
        if missing:  # a default is a class attribute
            raise TypeError(f"{type(self).__name__} needs {missing[0]}")
        return tuple(values[name] if name in values else getattr(type(self), name) for name in self._fields)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fact) and type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in zip(self._fields, self._values()))})"

    def __reduce__(self) -> tuple[type[Fact], tuple[Any, ...]]:
        return type(self), self._values()

    def __deepcopy__(self, _memo: dict[int, Any]) -> Fact:
        """Itself: a fact holds only immutable values (`dataclasses.asdict` deep-copies every note it meets)."""
        return self

    # Traits the core decides by, set per class (`_untrusting = True`); a fact that wraps another reads its.
    _untrusting: ClassVar[bool] = False
    _about_trust: ClassVar[bool] = False
    _of_model: ClassVar[bool] = False

    @property
    def untrusting(self) -> bool:
        """Whether this makes a verified price untrusted (ranked after trusted ones)."""
        return self._untrusting

    @property
    def about_trust(self) -> bool:
        """Whether this says why a price is not trusted."""
        return self._about_trust

    @property
    def of_model(self) -> bool:
        """Whether this belongs to a pricing model, not to an offer (a comparison's legend says it per column)."""
        return self._of_model


# --- the catalogs' own facts -----------------------------------------------------------------------------------

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


# --- what an option's reader must know --------------------------------------------------------------------------

class FxRate(Fact):
    """Units of `currency` per 1 USD, with the rates' source and date."""

    currency: str
    per_usd: Decimal
    source: str
    as_of: str
    verified: bool


class Conversion(Fact):
    """How amounts written in one currency are shown in another (the identity when both are the same)."""

    written_in: str
    currency: str
    written_per_usd: Decimal
    per_usd: Decimal

    def apply(self, amount: Decimal) -> Decimal:
        if self.written_in == self.currency:
            return amount
        return amount / self.written_per_usd * self.per_usd


class Labelled(Fact):
    """A catalog label on an option, its amounts to be shown in the option's currency by `conversion`."""

    label: CatalogLabel
    conversion: Conversion

    @property
    def untrusting(self) -> bool:
        return self.label.untrusting

    @property
    def about_trust(self) -> bool:
        return self.label.about_trust


class Stale(Fact):
    """The price's date is older than the staleness limit; `reserved` when it is the reserved terms' own date."""

    as_of: str
    days: int
    reserved: bool = False

    _untrusting = _about_trust = True


class Unverified(Fact):
    """A list price nobody checked against the provider (`source` says where it is from)."""

    source: str

    _about_trust = True


# Launching on another cloud than AWS: what the approval card says about the price it was planned at.
class StaleLaunchPrice(Fact):
    """A launch priced only by a list older than the staleness limit (`source`, dated `as_of`), which the policy
    lets approvers launch at (`allow_stale_prices`): the approver must see it before deciding."""

    provider: str
    source: str
    as_of: str

    _about_trust = True


class LaunchCloud(Fact):
    """Which cloud, and which of the team's accounts on it (the policy's alias), a launch starts machines in."""

    provider: str
    account: str | None


class DateUnknown(Fact):
    """The source gives no date for the price."""

    _about_trust = True


class PricedFrom(Fact):
    """Where a verified price of a Chinese cloud comes from and its date: a CNY answer must say how old its figure
    is, as no current public price exists to compare it with (`Unverified` names an unverified price's source)."""

    source: str
    as_of: str
    price: Decimal  # as the source prints it, in `currency`, per hour (monthly: per month)
    currency: str
    model: PricingModel


class Converted(Fact):
    """The price was converted from `written_in` at `rate` (the rate of the currency that is not USD)."""

    written_in: str
    rate: FxRate


class IdleGpus(Fact):
    """Whole instances buy more GPUs than asked for: `idle` of `gpus` do nothing."""

    idle: int
    gpus: int


# China's clouds: a GPU named without a size, where no offer of the size its name denotes is in the request's
# scope, is priced on its other memory sizes (`8xV100 provider=tencent` finds Tencent's V100-32GB), each saying so.
class OtherSize(Fact):
    """The option's GPU is another memory size of the one asked for (`V100-32GB` for `V100`)."""

    gpu: str
    memory_gib: float
    asked: str


class MultiHost(Fact):
    """The job spans `hosts` instances, linked by a network, not NVLink."""

    hosts: int


class PcieOnly(Fact):
    """The instance's GPUs are linked over PCIe only."""


class BilledLonger(Fact):
    """The bill rounds the job up: `billed_s` at a billing unit of `granularity_s`."""

    billed_s: int
    granularity_s: int


# The whole bill: the job's disks and data as parts of an option's total (`job_costs`).
class JobItem(StrEnum):
    """What of a job's data is priced, as the grammar names it."""

    DISK = "disk"
    CHECKPOINTS = "checkpoints"
    DATA_IN = "data-in"
    DATA_OUT = "data-out"

    @property
    def part(self) -> str:
        """The part of the total it falls in: storage (disk, checkpoints) or transfer (data in and out)."""
        return "storage" if self in (JobItem.DISK, JobItem.CHECKPOINTS) else "transfer"


class PartCost(Fact):
    """One charge of a job's data: `quantity` of `unit` at `tiers` ((quantity in the tier, rate per unit) in the
    price's currency) for `months` (storage; None for a transfer), from the `item` price row of `provider`'s
    `region`. `amount` is the charge in the quote's currency, None when no source gives the price."""

    what: JobItem
    item: str  # the price row's item: block, object, ingress, egress-internet, egress-inter-region, same-region
    provider: str
    region: str
    quantity: Decimal
    unit: str  # GB or GiB, as the source prices it
    months: Decimal | None
    tiers: tuple[tuple[Decimal, Decimal], ...]
    price_currency: str
    amount: Decimal | None
    currency: str
    source: str = ""
    as_of: str = ""
    verified: bool = False


class PartsUnknown(Fact):
    """No source gives these of the job's charges at this option's provider and region: its total leaves them out
    (a quote ranks it after options whose parts are all known)."""

    items: tuple[JobItem, ...]
    provider: str


class NoCharge(Fact):
    """The provider states it does not charge for this (no egress fees, free ingress): the part adds 0."""

    what: JobItem
    provider: str
    source: str


class SpotInterruption(Fact):
    """A spot instance may be taken back at any time."""

    _of_model = True


class ReservedTerm(Fact):
    """A reserved price commits to `terms` whole terms of `years`; `job_s` is the job's length, None unknown."""

    years: int
    terms: int
    job_s: int | None

    _of_model = True


class BreakEven(Fact):
    """Hours of use per month from which the reserved price beats on-demand."""

    hours_per_month: Decimal

    _of_model = True


class MonthlyBilling(Fact):
    """A monthly subscription is billed per whole month (730 h)."""

    _of_model = True


class Flagged(Fact):
    """The price has known data defects and is shown because the user asked (`include-flagged`)."""

    flags: tuple[ScopedFlag, ...]


class AlsoAs(Fact):
    """A comparison row also stands for the same purchase over more hosts (`8× a2-highgpu-1g`)."""

    folded: tuple[str, ...]


# --- what is said once under a quote ----------------------------------------------------------------------------

class Assumption(Fact):
    """What the request parser assumed (its words: `request.NO_DURATION`)."""

    text: str


class ReservedUnknown(Fact):
    """No source in the catalogs gives a reserved price of `model` for the offers asked about."""

    model: PricingModel


class FlaggedLeftOut(Fact):
    """`prices` prices with known data defects were left out."""

    prices: int


class OneHostListings(Fact):
    """`listings` marketplace listings were left out: each is one host, fewer GPUs than asked for."""

    listings: int


class UnverifiedShown(Fact):
    """`unverified` of the `options` shown are unverified list prices."""

    unverified: int
    options: int


class MemoryFilter(Fact):
    """`min-gpu-memory=` left out `removed` options; `largest` (GiB) when it left none."""

    min_gib: float
    removed: int
    gpu: str
    largest: float | None


class PriceCap(Fact):
    """`max-price=` (per job-hour) left out `removed` options; `cheapest` job-hour when it left none."""

    max_price: Decimal
    currency: str
    removed: int
    cheapest: Decimal | None


class Restated(Fact):
    """An amount given in one currency, converted into another at `rate` (the currency that is not USD)."""

    amount: Decimal
    written_in: str
    converted: Decimal
    currency: str
    rate: FxRate


class InputConverted(Fact):
    """An amount of a TCO's input (`key`: hardware, power, …) given in another currency than the answer's."""

    key: str
    restated: Restated


class PriceCapConverted(Fact):
    """The `max-price=` the user gave in another currency, and what it is in the quote's."""

    restated: Restated


# --- why a quote has no options ---------------------------------------------------------------------------------

class Scope(Fact):
    """What a quote asked about: a GPU, from providers, in regions (each empty when not narrowed)."""

    gpu: str
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()


class NoOffers(Fact):
    """The catalogs have no offer of the GPU at all."""

    gpu: str


class NoProviderOffers(Fact):
    """None of the providers asked for offers the GPU; `offered_by` do."""

    scope: Scope
    offered_by: tuple[str, ...]


class NoRegionOffers(Fact):
    """None of the offers lies in the regions asked for; `offered_in` are the regions they are in."""

    scope: Scope
    offered_in: tuple[str, ...]


class AllUnverified(Fact):
    """`verified-only` left nothing: every offer in scope is an unverified list price."""

    scope: Scope


class AllFlagged(Fact):
    """Every price of `models` in scope has a known data defect."""

    scope: Scope
    models: tuple[PricingModel, ...]


class Cheapest(Fact):
    """The cheapest GPU-hour of a pricing model (monthly: per 730 h)."""

    model: PricingModel
    per_gpu_hour: Decimal
    currency: str


class NoPrices(Fact):
    """No offer in scope has a price in `models`; `instead` what the other models offer."""

    scope: Scope
    models: tuple[PricingModel, ...]
    instead: tuple[Cheapest, ...]


# --- why a plan is what it is -----------------------------------------------------------------------------------

# --- commitments planned from recorded use (`commitments.py`) ---------------------------------------------------

class CommitUnsteady(Fact):
    """The history's lowest month used fewer hours than one committed instance needs to break even."""

    lowest_hours: Decimal
    needed_hours: Decimal
    model: PricingModel


class CommitHistoryShort(Fact):
    """The history has `months` whole months where `wanted` were asked for (or a 3-year term needs)."""

    months: int
    wanted: int


class CommitNoPrice(Fact):
    """The catalog has no verified price of this term for the instance type in its region."""

    model: PricingModel


class CommitNoHistory(Fact):
    """No launch recorded in the whole months before this one."""

    months: int


class Fastest(Fact):
    """The fastest trusted plan, listed although it is not among the cheapest."""


class Checkpointing(Fact):
    """A spot plan checkpoints every `interval_min` minutes, which costs `overhead` more time."""

    interval_min: float
    overhead: float


class MixedFleet(Fact):
    """Part of the fleet on spot, part on demand, which keeps the job alive through interruptions."""

    spot: int
    on_demand: int


# Interconnect, fleet-scale spot risk, capacity and quota: what a plan can run on, and get.
class Fabric(Fact):
    """The network between a plan's hosts, as `instance_network.csv` states it: `fabric` at `gbps` (None: not
    stated); `fabric` "" when no source states it (a marketplace row, an instance type not in the file)."""

    instance_type: str
    hosts: int
    fabric: str
    gbps: float | None
    trains: bool  # RDMA (EFA, InfiniBand, RoCE, GPUDirect) at ≥ 100 Gbps
    scaling: Scaling | None = None  # over more than one host: how they scale
    source: str = ""  # instance_network.csv's source ids (SOURCES-plans.txt)


class Scaling(Fact):
    """Data-parallel scaling over `hosts` hosts (`sizing.scaling`): per optimizer step `compute_s` of compute
    against `comm_s` of ring all-reduce of the gradients, `overlap` of it hidden behind compute. `basis`:
    "network" (the model), "override" (the user's multi_host_efficiency=), "assumed" (bandwidth unknown)."""

    hosts: int
    gbps: float | None
    compute_s: float
    comm_s: float
    overlap: float
    efficiency: float
    basis: str


class NoFabric(Fact):
    """Sharded training over more than two hosts whose network is no training fabric (or is unknown)."""

    hosts: int
    fabric: str  # "" when no source states it
    gbps: float | None


class FleetSpotRisk(Fact):
    """A synchronous job on `instances` spot instances restarts whenever any one is taken back: the job's rate is
    `instances` × `rate_per_h`; the Spot Advisor's `band` in `region` as of `as_of` gave the rate (None: the
    default rate). `overhead`: expected extra time (checkpoint writes, lost work, restarts); `chance`: of finishing
    by the deadline (None: no deadline)."""

    instances: int
    rate_per_h: float
    band: int | None
    region: str
    as_of: str
    interval_min: float
    overhead: float
    chance: float | None


class SpotOverheadHigh(Fact):
    """Expected spot overhead above the stated limit: the plan ranks behind those that are not."""

    overhead: float
    limit: float


class MarketplaceHosts(Fact):
    """A marketplace listing is `listed` machine(s): a plan cannot take `instances` of it."""

    instances: int
    listed: int


class QuotaNeeded(Fact):
    """The vCPU quota a plan needs in its AWS quota family (`code`, `name`); `granted` None: not checked."""

    code: str
    name: str
    vcpus: int
    granted: int | None = None


class CapacityBlock(Fact):
    """Reserved for `days` days as an AWS Capacity Block, at a price labelled `as_of` (`source`); a block holds at
    most `per_block` instances, so `instances` may take several."""

    days: int
    instances: int
    per_block: int
    as_of: str
    source: str


class Folded(Fact):
    """Plans the same as this one but for the host split (same GPUs, price and time), folded into it."""

    splits: tuple[str, ...]


class OwnHardware(Fact):
    """The user's own GPUs: marginal cost 0."""


class Hybrid(Fact):
    """Develop on the user's own GPUs, burst to the cloud for deadlines."""


class OwnTooSmall(Fact):
    """The user's GPUs hold less memory than the job needs."""

    count: int
    gpu: str
    usable_gb: float
    needed_gb: float


class OverDeadline(Fact):
    """The plan takes longer than the deadline."""

    hours: float
    deadline_h: float


class OverBudget(Fact):
    """The plan costs more than the budget."""

    total: Decimal
    budget: Decimal
    currency: str


class TooManyToHold(Fact):
    """Holding the job's memory takes more instances than `max_instances` allows."""

    instances: int
    host_gpus: int
    gpu: str
    gpus: int
    needed_gb: float
    max_instances: int


class TooManyToServe(Fact):
    """Serving `users` takes more instances than `max_instances` allows."""

    instances: int
    host_gpus: int
    gpu: str
    gpus: int
    users: int
    max_instances: int


class GroupSpansHosts(Fact):
    """A serving tensor-parallel group of `tp` GPUs is wider than a host of `host_gpus`."""

    tp: int
    host_gpus: int


class Refused(Fact):
    """Why the user's own GPUs cannot run the job at its precision (`sizing.missing_throughput`'s words, which the
    reasoning lines share)."""

    text: str
