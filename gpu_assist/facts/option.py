"""What an option's reader must know (`QuoteOption.notes`): its price's trust and origin, how its hosts and bill
are shaped, its pricing model's terms, the parts of the whole bill. Pure.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum

from .catalog import CatalogLabel, PricingModel, ScopedFlag
from .fact import Fact


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
