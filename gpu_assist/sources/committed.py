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
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from ..facts import Flag, Replaced
from ..pricing.query import HOURS_PER_MONTH
from . import spot_flags
from .refresh import FieldSource, RowFields

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

    def apply(self, provider: str, rows: list[RowFields]) -> list[RowFields]:
        if provider == "aws":
            return self._aws(rows)
        if provider == "gcp":
            return self._gcp(rows)
        return rows

    def _aws(self, rows: list[RowFields]) -> list[RowFields]:
        reserved = {r["instance_type"]: r for r in _read(self.directory / AWS_FILE) if r["region"] == "us-east-1"}
        for row in rows:
            priced = reserved.get(row["instance_type"])
            if row["region"] != "us-east-1" or priced is None:
                continue
            annual = Decimal(priced["annual_cost_usd"])
            row["reserved_3y_hourly"] = _hourly(annual / 8760)
            row["reserved_source"], row["reserved_as_of"] = AWS_SOURCE, AWS_AS_OF
            if row["instance_type"] in SAVINGS_PLAN_TYPES:
                what = ("3-year EC2 Instance Savings Plan, All Upfront (the dataset prices this type by the "
                        "plan, not a Standard RI)")
            else:
                what = "3-year Standard Reserved Instance, All Upfront"
            _add_note(row, f"reserved_3y:{what}: about ${annual * 3:,.2f} upfront per instance "
                           f"(${annual:,.2f} a year), no hourly charge")
        return rows

    def _gcp(self, rows: list[RowFields]) -> list[RowFields]:
        committed = {(r["machine_type"], r["region"]): r for r in _read(self.directory / GCP_FILE)}
        for row in rows:
            priced = committed.get((row["instance_type"], row["region"]))
            if priced is None:
                continue
            for term, column in (("1y", "month_1y"), ("3y", "month_3y")):
                if priced[column]:
                    row[f"reserved_{term}_hourly"] = _hourly(Decimal(priced[column]) / _HOURS_PER_MONTH)
            if row.get("reserved_1y_hourly") or row.get("reserved_3y_hourly"):
                row["reserved_source"], row["reserved_as_of"] = GCP_SOURCE, GCP_AS_OF
                for term in ("1y", "3y"):
                    if row.get(f"reserved_{term}_hourly"):
                        _add_note(row, f"reserved_{term}:{term[0]}-year resource-based committed use, billed monthly "
                                       f"(${Decimal(priced[f'month_{term}']):,.2f} a month), no upfront")
            if row["on_demand_hourly"] and priced["hour"] and not agrees(row, priced["hour"]):
                if far_apart(row["on_demand_hourly"], priced["hour"]):
                    _replace_on_demand(row, priced["hour"])
                else:
                    _add_note(row, f"all:sources disagree on on-demand: {row['source']} ${row['on_demand_hourly']}/h "
                                   f"({row['as_of'] or 'date unknown'}) vs {GCP_SOURCE} ${priced['hour']}/h "
                                   f"({GCP_AS_OF})")
            _check_spot(row, priced.get("hour_spot", ""))
        return rows


def _check_spot(row: RowFields, billing_spot: str) -> None:
    """The spot cross-check: a spot price more than `REPLACE_ABOVE` from the billing catalog's own spot price
    (gcp_cud.csv `hour_spot`) is flagged `spot:spot-disagrees-with-billing` and both figures are named. Not
    replaced: GCP may change a spot price once every 30 days, and the billing figure is older than that."""
    spot = row.get("spot_hourly", "")
    if spot and billing_spot and far_apart(spot, billing_spot):
        flags = [f for f in row.get("flags", "").split(";") if f]
        row["flags"] = ";".join(sorted({*flags, f"spot:{Flag.SPOT_DISAGREES_WITH_BILLING}"}))
        _add_note(row, f"spot:sources disagree on spot: {row['source']} ${spot}/h "
                       f"({row['as_of'] or 'date unknown'}) vs {GCP_SOURCE} ${_hourly(Decimal(billing_spot))}/h "
                       f"({GCP_AS_OF})")


def far_apart(figure: str, billing: str) -> bool:
    """Rule (b): whether a figure differs from the provider's billing catalog's by more than `REPLACE_ABOVE`."""
    return abs(Decimal(figure) - Decimal(billing)) > Decimal(billing) * REPLACE_ABOVE


def _replace_on_demand(row: RowFields, billing_hour: str) -> None:
    """Rule (b): the billing catalog's on-demand price wins; the replaced figure stays in a `Replaced` label (a
    Flex-start rate, rule c, when the importer flagged it so); the defects of the replaced figure go with it and
    the spot price is checked again against the price that is now on-demand. The row keeps its date: elsewhere
    the two sources agree within 0.2 % (SOURCES-plans.txt part B), so list prices did not move between them."""
    flags = [f for f in row.get("flags", "").split(";") if f]
    flex_start = f"on_demand:{Flag.FLEX_START_PRICE}" in flags
    _add_note(row, Replaced.entry("on_demand", figure=row["on_demand_hourly"], was_source=row["source"],
                                  by=GCP_SOURCE, by_as_of=GCP_AS_OF, flex_start="yes" if flex_start else "no"))
    row["on_demand_hourly"] = _hourly(Decimal(billing_hour))
    kept = [f for f in flags if not f.startswith("on_demand:") and f.partition(":")[2] not in _SPOT_CHECKS]
    row["flags"] = ";".join(sorted(set(kept + spot_flags(row["on_demand_hourly"], row.get("spot_hourly", "")))))


def local_ssd_gb(machine_type: str) -> int:
    """GB of local SSD bundled with a machine type (0 when none)."""
    for pattern, per_gpu in _LOCAL_SSD_GB:
        match = pattern.match(machine_type)
        if match:
            return per_gpu * int(match.groups()[-1])
    return 0


def agrees(row: RowFields, other_hour: str) -> bool:
    """Whether pricing.yml's hourly price equals SkyPilot's, or exceeds it by just the bundled local SSD."""
    difference = Decimal(other_hour) - Decimal(row["on_demand_hourly"])
    if abs(difference) <= _AGREE:
        return True
    ssd_gb = local_ssd_gb(row["instance_type"])
    if not ssd_gb or difference <= 0:
        return False
    per_gb_month = difference * _HOURS_PER_MONTH / ssd_gb
    return _SSD_PER_GB_MONTH[0] <= per_gb_month <= _SSD_PER_GB_MONTH[1]


def _add_note(row: RowFields, note: str) -> None:
    row["notes"] = ";".join(filter(None, [row.get("notes", ""), note]))


class WithCommittedPrices:
    """A SkyPilot source whose AWS/GCP rows carry the committed-use prices of `CommittedPrices`."""

    def __init__(self, source: FieldSource, directory: Path):
        self.source_rows, self.committed = source, CommittedPrices(Path(directory))
        self.provider, self.source = source.provider, source.source

    @property
    def skipped(self) -> Mapping[str, int]:
        return self.source_rows.skipped

    def rows(self) -> list[RowFields]:
        return self.committed.apply(self.provider, list(self.source_rows.rows()))
