"""The whole bill: a job's disks and data priced at an option's provider and region, as parts of its total.
Pure: `JobData` + `DataPrices` (`catalogs/data_prices.csv`) → `JobParts`.

- storage: disk = GB × block price per GB-month × job hours / 730; checkpoints: the latest is kept (each
  overwrites the last), so GB × object price per GB-month × job hours / 730;
- transfer: data-out = GB sent to the internet at the provider's internet egress tiers (a price of 0 up to a
  tier's ceiling is the source's free allowance, counted as unused by anything else that month); data-in from
  the internet = the provider's ingress price; from `provider:region`: free inside that region
  (`same-region`), the source region's inter-region price to another region of the same provider, its internet
  egress to another provider, plus the receiving provider's ingress;
- what no price row gives is unknown: the part says so, and the total leaves it out.

Amounts are exact Decimals in the quote's currency (the sources' USD converted with the catalog's FX rate).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from ..catalog.data_prices import DataPrice, DataPrices
from ..catalog.fx import FxRates
from ..facts import JobItem, NoCharge, PartCost, PartsUnknown
from .job_data import JobData
from .query import MONTH_S

_GIB_PER_GB = Decimal(10**9) / Decimal(2**30)


@dataclass(frozen=True)
class JobParts:
    """The charges of a job's data at one provider's region: storage and transfer, each known or not."""

    costs: tuple[PartCost, ...]

    def part(self, name: str) -> Decimal | None:
        """The sum of one part's (`storage`, `transfer`) charges; None when any is unknown; 0 when none."""
        amounts = [cost.amount for cost in self.costs if cost.what.part == name]
        return None if None in amounts else sum((a for a in amounts if a is not None), Decimal(0))

    @property
    def known(self) -> Decimal:
        """What the known charges add up to."""
        return sum((cost.amount for cost in self.costs if cost.amount is not None), Decimal(0))

    @property
    def complete(self) -> bool:
        return all(cost.amount is not None for cost in self.costs)

    def notes(self, provider: str) -> list[PartsUnknown | NoCharge]:
        """What the reader must know: which parts no source gives, and which the provider states are free."""
        unknown = tuple(dict.fromkeys(cost.what for cost in self.costs if cost.amount is None))
        notes: list[PartsUnknown | NoCharge] = [PartsUnknown(unknown, provider)] if unknown else []
        for what in dict.fromkeys(cost.what for cost in self.costs):
            charges = [cost for cost in self.costs if cost.what == what]
            if all(cost.amount is not None and all(rate == 0 for _, rate in cost.tiers) for cost in charges) \
                    and not any(cost.item == "same-region" for cost in charges):
                notes.append(NoCharge(what, charges[-1].provider, charges[-1].source))
        return notes


def job_parts(data: JobData, prices: DataPrices, *, provider: str, region: str, duration_s: int, fx: FxRates,
              currency: str) -> JobParts:
    """The job's data priced at `provider`'s `region` for a job of `duration_s`."""
    months = Decimal(duration_s) / MONTH_S
    costs: list[PartCost] = []

    def charge(what: JobItem, item: str, where: tuple[str, str], gb: Decimal, months_: Decimal | None) -> None:
        costs.append(_cost(what, item, where, gb, months_, prices.tiers(*where, item), fx, currency))

    here = (provider, region)
    if data.disk_gb:
        charge(JobItem.DISK, "block", here, data.disk_gb, months)
    if data.checkpoint_gb and data.checkpoint_every_s:
        charge(JobItem.CHECKPOINTS, "object", here, data.checkpoint_gb, months)
    if data.data_in_gb:
        source = data.data_from
        if source is None:
            charge(JobItem.DATA_IN, "ingress", here, data.data_in_gb, None)
        elif (source.provider, source.region) == here:
            charge(JobItem.DATA_IN, "same-region", here, data.data_in_gb, None)
        else:
            leaving = "egress-inter-region" if source.provider == provider else "egress-internet"
            charge(JobItem.DATA_IN, leaving, (source.provider, source.region), data.data_in_gb, None)
            charge(JobItem.DATA_IN, "ingress", here, data.data_in_gb, None)
    if data.data_out_gb:
        charge(JobItem.DATA_OUT, "egress-internet", here, data.data_out_gb, None)
    return JobParts(tuple(costs))


def _cost(what: JobItem, item: str, where: tuple[str, str], gb: Decimal, months: Decimal | None,
          rows: tuple[DataPrice, ...], fx: FxRates, currency: str) -> PartCost:
    """One charge: `gb` through the rows' tiers (storage: one tier, × months); amount None when no row gives it or
    the quantity runs past the last tier's ceiling."""
    provider, region = where
    if not rows:
        return PartCost(what, item, provider, region, gb, "GB", months, (), "USD", None, currency)
    first = rows[0]
    quantity = gb * _GIB_PER_GB if first.unit == "GiB" else gb
    tiers: list[tuple[Decimal, Decimal]] = []
    left, floor = quantity, Decimal(0)
    for row in rows:
        if left <= 0:
            break
        room = left if row.up_to is None else min(left, row.up_to - floor)
        tiers.append((room, row.price))
        left -= room
        floor = row.up_to if row.up_to is not None else floor
    amount = None
    if left <= 0:
        priced = sum((units * rate for units, rate in tiers), Decimal(0)) * (months if months is not None else 1)
        amount = fx.convert(priced, first.currency, currency)
    return PartCost(what, item, provider, region, quantity, first.unit, months, tuple(tiers), first.currency,
                    amount, currency, first.source, first.as_of, all(row.verified for row in rows))


def checkpoint_storage(checkpoint_gb: Decimal, prices: DataPrices, *, provider: str, region: str, hours: Decimal,
                       fx: FxRates, currency: str) -> PartCost:
    """The object storage of a plan's checkpoints (the latest kept) for `hours`: what `recommend` adds to the
    spot plans it checkpoints; the amount is None when no source gives the provider's price."""
    return _cost(JobItem.CHECKPOINTS, "object", (provider, region), checkpoint_gb, hours / (MONTH_S // 3600),
                 prices.tiers(provider, region, "object"), fx, currency)

