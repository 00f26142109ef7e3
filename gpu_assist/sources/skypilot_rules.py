"""The rules of the 13 newer clouds in SkyPilot's catalog: `Listed` (one row while its provider's rule adjusts it)
and one small function per provider, its docstring the defect it handles (`RULES`; `_as_published` when the data
needs none). `skypilot.SkyPilotSource` reads the files and applies them."""

from __future__ import annotations

import ast
import json
from decimal import Decimal

from ..catalog.gpus import GpuSpec
from ..facts import Derived, Flag
from . import number_text


def gpu_info_mib(gpu_info: str) -> float | None:
    """`SizeInMiB` of the first GPU in a SkyPilot GpuInfo cell (a Python dict literal, or JSON), else None."""
    if not gpu_info.startswith("{"):
        return None
    for parse in (ast.literal_eval, json.loads):
        try:
            return float(parse(gpu_info)["Gpus"][0]["MemoryInfo"]["SizeInMiB"])
        except (ValueError, SyntaxError, KeyError, IndexError, TypeError):
            continue
    return None


class Listed:
    """One row of a newer cloud's file while its provider rule adjusts it (prices as text, memory per GPU)."""

    def __init__(self, row: dict[str, str], spec: GpuSpec, count: Decimal, on_demand: str, spot: str,
                 memory_gib: float):
        self.row, self.spec, self.count = row, spec, count
        self.region = row["Region"]
        self.on_demand, self.spot, self.memory_gib = on_demand, spot, memory_gib
        self.vcpus = number_text(row["vCPUs"]) if row.get("vCPUs") else ""
        self.memory = number_text(row["MemoryGiB"]) if row.get("MemoryGiB") else ""
        self.flags: list[str] = []
        self.notes: list[str] = []

    def memory_is_total(self) -> None:
        """GpuInfo's SizeInMiB covers all the instance's GPUs: divide by the count."""
        mib = gpu_info_mib(self.row.get("GpuInfo", ""))
        if mib is not None:
            self.memory_gib = round(mib / float(self.count) / 1024, 2)


MARKETPLACE = "all:marketplace offer, may be gone (a snapshot of hosts' asks, not a price list)"


def _vast(raw: Listed) -> None:
    """vast.ai: SpotPrice is 0.00 in every row (a placeholder: no spot); vCPUs/MemoryGiB are the request size
    of the InstanceType suffix, not the host; SizeInMiB is the total over the GPUs; merged models (A100 40/80 GB,
    H100 SXM/NVL) are told apart by that memory (`GpuTable.variant`). The Region is "State, CC, Continent" with
    the state sometimes blank (", US, NA"): only the parts it gives are kept ("US, NA")."""
    raw.region = ", ".join(part for part in (p.strip() for p in raw.region.split(",")) if part)
    raw.spot = ""
    raw.vcpus = raw.memory = ""
    raw.memory_is_total()
    raw.notes.append(MARKETPLACE)


def _lium(raw: Listed) -> None:
    """Lium: a marketplace snapshot (one InstanceType per country at different prices)."""
    raw.notes.append(MARKETPLACE)


def _primeintellect(raw: Listed) -> None:
    """Prime Intellect: SizeInMiB is already the total in multi-GPU rows (TotalGpuMemoryInMiB counts it twice);
    the provider's location is the zone (the region is a country code)."""
    if raw.count > 1:
        raw.memory_is_total()


def _memory_from_spec(raw: Listed) -> None:
    """Hyperstack (GpuInfo 'Manufacturer': null) and Shadeform (SizeInMiB holds GB): memory from gpus.csv."""
    raw.memory_gib = raw.spec.memory_gib


def _oci(raw: Listed) -> None:
    """OCI: the same 21 shapes at the same prices in all 54 region blocks: a global list price."""
    raw.notes.append("all:list price, regional availability not in the source")


# Prices flagged for review: far below every comparable offer (SOURCES.txt §7: 1V100.6V looks low).
_REVIEW = {("verda", "1V100.6V", "0.1381")}
VERDA_SPOT_SHARE = "0.35"  # the share of on-demand Verda's list sets every spot price to


def _verda(raw: Listed) -> None:
    """Verda: spot is a fixed 0.35 × on-demand (derived, not a market price); the 0.1381 V100 is flagged."""
    if raw.spot:
        raw.notes.append(Derived.entry("spot", share=VERDA_SPOT_SHARE))
    if ("verda", raw.row["InstanceType"], raw.on_demand) in _REVIEW:
        raw.flags.append(f"on_demand:{Flag.PRICE_NEEDS_REVIEW}")


def _mithril(raw: Listed) -> None:
    """Mithril: every price is 1.00 per GPU-hour, spot and on-demand, H100 and H200 alike: a placeholder."""
    raw.flags.append(f"all:{Flag.PLACEHOLDER_PRICE}")


def _hyperbolic(raw: Listed) -> None:
    """Hyperbolic: the region is the placeholder 'default'."""
    raw.notes.append("all:region not given in the source")


def _yotta(raw: Listed) -> None:
    """Yotta: GpuInfo's Count is 1 in every row; the count is AcceleratorCount (as for every cloud) and
    SizeInMiB is per GPU, so nothing else to correct."""


def _as_published(raw: Listed) -> None:
    """Nebius, Cudo, JarvisLabs: nothing beyond the shared reader."""


RULES = {
    "vast": _vast, "lium": _lium, "primeintellect": _primeintellect, "hyperstack": _memory_from_spec,
    "shadeform": _memory_from_spec, "oci": _oci, "verda": _verda, "mithril": _mithril, "hyperbolic": _hyperbolic,
    "yotta": _yotta, "nebius": _as_published, "cudo": _as_published, "jarvislabs": _as_published,
}
