"""Reserved and committed-use prices from two public datasets, added to the SkyPilot offers they price.

- `aws_reserved_3y_allupfront.csv` (SOURCES.txt §18, Netflix-Skunkworks/service-capacity-modeling): 3-year
  Standard RI, All Upfront, us-east-1, Linux, shared tenancy, as `annual_cost`; the effective hourly is
  annual_cost / 8760 (the extract's computed column). 14 types are priced by the 3-year EC2 Instance Savings
  Plan instead (inferred in SOURCES.txt); their rows say so.
- `gcp_cud.csv` (§19, Cyclenerd/google-cloud-pricing-cost-calculator): resource-based 1-year and 3-year
  committed-use prices per month (730 h) of a2/a3/g2/g4 machine types; effective hourly = month_1y / 730.

Both only add to offers the SkyPilot extract has (same instance type and region): a dataset region is where
its SKUs exist, not where the machine is sold. GCP's `hour` is cross-checked against SkyPilot's host +
accelerator price: equal within 1e-4, or higher by exactly the bundled local SSD, agrees; more than 10 % apart,
pricing.yml (read from GCP's Cloud Billing Catalog) wins and the other figure is kept in a `Replaced` label (sanity
rule (b): SkyPilot's figure is then mostly a Flex-start GPU rate, `sanity.py`); anything else is labelled
"sources disagree" with both figures and dates (`catalog validate` lists every such pair).
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from ..facts import Flag, Replaced, ScopedFlag, parse_flags
from ..pricing.query import HOURS_PER_MONTH
from . import spot_flags
from .offer_row import OfferRow, csv_text, sorted_flags, with_label
from .refresh import CountingSource

AWS_FILE = "aws_reserved_3y_allupfront.csv"
GCP_FILE = "gcp_cud.csv"
AWS_SOURCE, AWS_AS_OF = "aws-reserved-3y", "2026-06-09"  # commit c15e03e of 2026-06-09 (SOURCES.txt §18)
GCP_SOURCE, GCP_AS_OF = "gcp-cud", "2026-07-30"  # pricing.yml generated 2026-07-30 (SOURCES.txt §19)
_MICRO = Decimal("0.000001")
_HOURS_PER_MONTH = Decimal(HOURS_PER_MONTH)
# Inferred in SOURCES.txt §18: the types this dataset prices by the EC2 Instance Savings Plan, not a Standard RI.
SAVINGS_PLAN_TYPES = frozenset({
    "g6f.large", "g6f.xlarge", "g6f.2xlarge", "g6f.4xlarge", "gr6f.4xlarge", "g7e.2xlarge", "g7e.4xlarge",
    "g7e.8xlarge", "g7e.12xlarge", "g7e.24xlarge", "g7e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge",
    "p6-b300.48xlarge",
})
# Local SSD bundled with the machine type, GB per GPU (GCP documents 375 GB per A100 80GB and 750 GB per H100:
# 6000 GB on a3-highgpu-8g and a3-megagpu-8g). SkyPilot's price leaves it out, pricing.yml includes it.
_LOCAL_SSD_GB = [(re.compile(r"^a2-ultragpu-(\d+)g$"), 375), (re.compile(r"^a3-(high|mega)gpu-(\d+)g$"), 750)]
# A difference counts as the local SSD when it is that many GB at a plausible local-SSD list price
# (GCP's range is about $0.08 to $0.12 per GB-month; the band is wider to allow for regions).
_SSD_PER_GB_MONTH = (Decimal("0.05"), Decimal("0.15"))
_AGREE = Decimal("0.0001")
REPLACE_ABOVE = Decimal("0.10")  # rule (b): two sources more than 10 % apart: the billing catalog wins
_SPOT_CHECKS = {Flag.NOT_BELOW_ON_DEMAND, Flag.AT_ON_DEMAND_CAP}


def _hourly(value: Decimal) -> str:
    return format(value.quantize(_MICRO, rounding=ROUND_HALF_UP).normalize(), "f")


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@dataclass
class CommittedPrices:
    """Adds the committed-use datasets under `directory` to one provider's rows (AWS or GCP; others pass)."""

    directory: Path

    def apply(self, provider: str, rows: list[OfferRow]) -> list[OfferRow]:
        if provider == "aws":
            return self._aws(rows)
        if provider == "gcp":
            return self._gcp(rows)
        return rows

    def _aws(self, rows: list[OfferRow]) -> list[OfferRow]:
        reserved = {r["instance_type"]: r for r in _read(self.directory / AWS_FILE) if r["region"] == "us-east-1"}
        return [_aws_reserved(row, reserved.get(row.instance_type)) if row.region == "us-east-1" else row
                for row in rows]

    def _gcp(self, rows: list[OfferRow]) -> list[OfferRow]:
        committed = {(r["machine_type"], r["region"]): r for r in _read(self.directory / GCP_FILE)}
        return [_gcp_committed(row, committed.get((row.instance_type, row.region))) for row in rows]


def _aws_reserved(row: OfferRow, priced: dict[str, str] | None) -> OfferRow:
    if priced is None:
        return row
    annual = Decimal(priced["annual_cost_usd"])
    if row.instance_type in SAVINGS_PLAN_TYPES:
        what = ("3-year EC2 Instance Savings Plan, All Upfront (the dataset prices this type by the "
                "plan, not a Standard RI)")
    else:
        what = "3-year Standard Reserved Instance, All Upfront"
    row = replace(row, reserved_3y_hourly=Decimal(_hourly(annual / 8760)), reserved_source=AWS_SOURCE,
                  reserved_as_of=dt.date.fromisoformat(AWS_AS_OF))
    return with_label(row, f"reserved_3y:{what}: about ${annual * 3:,.2f} upfront per instance "
                           f"(${annual:,.2f} a year), no hourly charge")


def _gcp_committed(row: OfferRow, priced: dict[str, str] | None) -> OfferRow:
    if priced is None:
        return row
    terms = {term: Decimal(_hourly(Decimal(priced[f"month_{term}"]) / _HOURS_PER_MONTH))
             for term in ("1y", "3y") if priced[f"month_{term}"]}
    if terms:
        row = replace(row, reserved_1y_hourly=terms.get("1y", row.reserved_1y_hourly),
                      reserved_3y_hourly=terms.get("3y", row.reserved_3y_hourly), reserved_source=GCP_SOURCE,
                      reserved_as_of=dt.date.fromisoformat(GCP_AS_OF))
        for term in terms:
            row = with_label(row, f"reserved_{term}:{term[0]}-year resource-based committed use, billed monthly "
                                  f"(${Decimal(priced[f'month_{term}']):,.2f} a month), no upfront")
    if row.on_demand_hourly is not None and priced["hour"] and not agrees(row, priced["hour"]):
        if far_apart(row.on_demand_hourly, priced["hour"]):
            row = _replace_on_demand(row, priced["hour"])
        else:
            row = with_label(row, f"all:sources disagree on on-demand: {row.source} "
                                  f"${csv_text(row.on_demand_hourly)}/h ({csv_text(row.as_of) or 'date unknown'}) "
                                  f"vs {GCP_SOURCE} ${priced['hour']}/h ({GCP_AS_OF})")
    return _check_spot(row, priced.get("hour_spot", ""))


def _check_spot(row: OfferRow, billing_spot: str) -> OfferRow:
    """The spot cross-check: a spot price more than `REPLACE_ABOVE` from the billing catalog's own spot price
    (gcp_cud.csv `hour_spot`) is flagged `spot:spot-disagrees-with-billing` and both figures are named. Not
    replaced: GCP may change a spot price once every 30 days, and the billing figure is older than that."""
    spot = row.spot_hourly
    if spot is None or not billing_spot or not far_apart(spot, billing_spot):
        return row
    row = replace(row, flags=sorted_flags([*row.flags, ScopedFlag("spot", Flag.SPOT_DISAGREES_WITH_BILLING)]))
    return with_label(row, f"spot:sources disagree on spot: {row.source} ${csv_text(spot)}/h "
                           f"({csv_text(row.as_of) or 'date unknown'}) vs {GCP_SOURCE} "
                           f"${_hourly(Decimal(billing_spot))}/h ({GCP_AS_OF})")


def far_apart(figure: Decimal, billing: str) -> bool:
    """Rule (b): whether a figure differs from the provider's billing catalog's by more than `REPLACE_ABOVE`."""
    return abs(figure - Decimal(billing)) > Decimal(billing) * REPLACE_ABOVE


def _replace_on_demand(row: OfferRow, billing_hour: str) -> OfferRow:
    """Rule (b): the billing catalog's on-demand price wins; the replaced figure stays in a `Replaced` label (a
    Flex-start rate, rule c, when the importer flagged it so); the defects of the replaced figure go with it and
    the spot price is checked again against the price that is now on-demand. The row keeps its date: elsewhere
    the two sources agree within 0.2 % (SOURCES-plans.txt part B), so list prices did not move between them."""
    flex_start = ScopedFlag("on_demand", Flag.FLEX_START_PRICE) in row.flags
    row = with_label(row, Replaced.entry("on_demand", figure=csv_text(row.on_demand_hourly), was_source=row.source,
                                         by=GCP_SOURCE, by_as_of=GCP_AS_OF, flex_start="yes" if flex_start else "no"))
    on_demand = Decimal(_hourly(Decimal(billing_hour)))
    kept = [f for f in row.flags if f.scope != "on_demand" and f.flag not in _SPOT_CHECKS]
    spot_defects = parse_flags(";".join(spot_flags(csv_text(on_demand), csv_text(row.spot_hourly))))
    return replace(row, on_demand_hourly=on_demand, flags=sorted_flags([*kept, *spot_defects]))


def local_ssd_gb(machine_type: str) -> int:
    """GB of local SSD bundled with a machine type (0 when none)."""
    for pattern, per_gpu in _LOCAL_SSD_GB:
        match = pattern.match(machine_type)
        if match:
            return per_gpu * int(match.groups()[-1])
    return 0


def agrees(row: OfferRow, other_hour: str) -> bool:
    """Whether pricing.yml's hourly price equals SkyPilot's, or exceeds it by just the bundled local SSD."""
    difference = Decimal(other_hour) - (row.on_demand_hourly or Decimal(0))
    if abs(difference) <= _AGREE:
        return True
    ssd_gb = local_ssd_gb(row.instance_type)
    if not ssd_gb or difference <= 0:
        return False
    per_gb_month = difference * _HOURS_PER_MONTH / ssd_gb
    return _SSD_PER_GB_MONTH[0] <= per_gb_month <= _SSD_PER_GB_MONTH[1]


class WithCommittedPrices:
    """A SkyPilot source whose AWS/GCP rows carry the committed-use prices of `CommittedPrices`."""

    def __init__(self, source: CountingSource, directory: Path):
        self.source_rows, self.committed = source, CommittedPrices(Path(directory))
        self.provider, self.source = source.provider, source.source

    @property
    def skipped(self) -> Mapping[str, int]:
        return self.source_rows.skipped

    def rows(self) -> list[OfferRow]:
        return self.committed.apply(self.provider, list(self.source_rows.rows()))
