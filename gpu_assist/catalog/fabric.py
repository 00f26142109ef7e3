"""What a plan can count on besides a price: each instance type's inter-node fabric, AWS's published spot
interruption bands, and reserved windows of capacity (AWS Capacity Blocks). Pure: reads the sourced CSV files of
`catalogs/sources/` (SOURCES-plans.txt names each source and its doubts) and nothing else.

- `instance_network.csv`: per provider and instance type, GPUs per host, the inter-node bandwidth in Gbps (the
  instance's total across its network cards, AWS's baseline) and the fabric ("EFA (MaximumEfaInterfaces=32)",
  "InfiniBand (HDR, 8x200, GPUDirect RDMA)", "Ethernet (ENA)"). An instance type not in it has an unknown fabric:
  a marketplace or neocloud row says nothing about its hosts' network.
- `aws_spot_advisor.csv`: the Spot Instance Advisor's band of interruptions per month (0: <5 %, 1: 5-10 %,
  2: 10-15 %, 3: 15-20 %, 4: >20 %) per region and instance type, Linux, with the feed's date.
- `capacity_blocks.csv`: AWS EC2 Capacity Blocks for ML per instance type and region, per instance-hour, with the
  date the price was valid until (and GCP DWS Flex-start rows, which `recommend` does not plan: a queue, not a
  reservation).
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

RDMA_WORDS = ("efa", "infiniband", "roce", "gpudirect")
MIN_FABRIC_GBPS = 100.0  # below this a host's network is no training fabric (SOURCES-plans.txt, part D)
# The Spot Advisor's bands as a fraction of instances interrupted in a month: each band's upper bound, and for
# ">20 %" its lower bound (the feed gives no upper one), so band 4 is "at least".
BAND_MONTHLY = {0: 0.05, 1: 0.10, 2: 0.15, 3: 0.20, 4: 0.20}
MONTH_H = 730.0
# Capacity Blocks' durations (S-AWS-CB-RULES): 1-14 days in 1-day steps, then 7-day steps up to 182 days; up to
# 64 instances per block, in one Availability Zone.
BLOCK_MAX_INSTANCES = 64
BLOCK_MAX_DAYS = 182
# The price list's name for a size the network source names otherwise (the same VM or machine type).
_ALIASES = {("azure", "Standard_ND96asr_v4"): "Standard_ND96asr_A100_v4"}


@dataclass(frozen=True)
class Link:
    """One instance type's network to other hosts, as its source states it."""

    provider: str
    instance_type: str
    gbps: float | None  # None: the source names the fabric but gives no bandwidth
    fabric: str
    source: str

    @property
    def rdma(self) -> bool:
        """EFA, InfiniBand, RoCE or GPUDirect: a fabric built for collectives between hosts."""
        return any(word in self.fabric.lower() for word in RDMA_WORDS)

    @property
    def trains(self) -> bool:
        """Whether sharded training over more than two such hosts has a sourced fabric to run on."""
        return self.rdma and (self.gbps is None or self.gbps >= MIN_FABRIC_GBPS)


@dataclass(frozen=True)
class SpotBand:
    """The Spot Advisor's interruption band of one instance type in one region."""

    region: str
    instance_type: str
    band: int
    as_of: str
    source: str

    @property
    def rate_per_h(self) -> float:
        """Interruptions per instance-hour: a monthly fraction p of instances interrupted is −ln(1 − p) / 730 h."""
        return -math.log(1 - BAND_MONTHLY[self.band]) / MONTH_H


@dataclass(frozen=True)
class ReservedWindow:
    """A reserved window of capacity: its price per instance-hour and the date that price is labelled with."""

    provider: str
    instance_type: str
    region: str
    hourly: Decimal
    currency: str
    source: str
    as_of: str


@dataclass(frozen=True)
class PlanData:
    links: dict[tuple[str, str], Link] = field(default_factory=dict)
    bands: dict[tuple[str, str], SpotBand] = field(default_factory=dict)
    windows: tuple[ReservedWindow, ...] = ()

    def link(self, provider: str, instance_type: str) -> Link | None:
        """The fabric of a provider's instance type; None when no source states it."""
        name = _ALIASES.get((provider, instance_type), instance_type)
        found = self.links.get((provider, name))
        if found is None and provider == "gcp" and name.endswith("-nolssd"):
            found = self.links.get((provider, name.removesuffix("-nolssd")))  # the same machine without local SSD
        return found

    def band(self, provider: str, region: str, instance_type: str) -> SpotBand | None:
        return self.bands.get((region, instance_type)) if provider == "aws" else None

    def blocks(self, instance_type: str) -> list[ReservedWindow]:
        return [w for w in self.windows if w.provider == "aws" and w.instance_type == instance_type]


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@functools.lru_cache(maxsize=8)
def load_plan_data(directory: Path) -> PlanData:
    """The three files of `directory` (a catalog's `sources/`); a missing file reads as empty."""
    links = {(r["provider"], r["instance_type"]): Link(r["provider"], r["instance_type"],
                                                        float(r["inter_node_gbps"]) if r["inter_node_gbps"] else None,
                                                        r["fabric"], r["source_id"])
             for r in _rows(directory / "instance_network.csv")}
    bands = {(r["region"], r["instance_type"]): SpotBand(r["region"], r["instance_type"], int(r["interruption_band"]),
                                                         r["as_of"], r["source_id"])
             for r in _rows(directory / "aws_spot_advisor.csv")}
    windows = tuple(ReservedWindow(r["provider"], r["instance_type"], r["region"],
                                   Decimal(r["price_per_instance_hour"]), r["currency"], r["source_id"], r["as_of"])
                    for r in _rows(directory / "capacity_blocks.csv"))
    return PlanData(links, bands, windows)


def plan_data_for(catalog_directory: Path, fallback: Path) -> PlanData:
    """The plan data beside a catalog (its `sources/`), else the bundled catalogs' (`fallback`): a catalog made for
    a test or by hand has offers but no network sources of its own."""
    own = Path(catalog_directory) / "sources"
    return load_plan_data(own if (own / "instance_network.csv").is_file() else Path(fallback) / "sources")


def block_days(hours: float) -> int:
    """The shortest Capacity Block that holds `hours`: whole days up to 14, then 7-day steps (0: longer than
    182 days, no block holds it)."""
    days = max(1, math.ceil(hours / 24 - 1e-9))
    if days > 14:
        days = 14 + 7 * math.ceil((days - 14) / 7)
    return days if days <= BLOCK_MAX_DAYS else 0
