"""SkyPilot's public catalog CSVs (17 clouds) → gpu-assist offer rows.

Values are copied as published; nothing is rounded except float artefacts beyond the catalog's
6 decimals (cudo's 0.36979999999999996 → 0.3698). Known defects (listed in the extract's
SOURCES.txt) are flagged, not repaired:

- spot price not below on-demand → `spot:not-below-on-demand`; within 0.1 % of it (a cap, not a
  discount) → `spot:at-on-demand-cap` (both leave the spot price out of quotes);
- GCP host row priced 0.0 (a4-highgpu-8g) → `all:zero-host-price`;
- fractional GPUs (AWS g6f/gr6f: 1/8 to 1/2 of an L4) → `all:fractional-gpu` (no whole GPU to quote);
- Azure Standard_ND96isr_H100_v5 listed with 12 GPUs (the VM has 8) → corrected to 8 (`facts.Corrected`);
- GCP GPU parts at a Flex-start (DWS) rate billed as on-demand → `on_demand:flex-start-price`, and a host priced
  below its GPUs' list rate → `on_demand:below-parts-price` (`sanity.py`, rules c and a).

The 13 newer clouds share one reader (`_rows_listed`) and a small rule each where their data
needs it (`skypilot_rules.RULES`, one function per provider; see each function's docstring).

Skipped, with counts in the report: accelerators that are not GPUs (TPU, Trainium, Inferentia,
Gaudi, FPGAs), GCP accelerators whose host family is not in the extract (T4/V100/P100/P4 attach
to n1 hosts, which were not kept), rows without any price.

GCP prices the host VM and its GPUs in separate rows; an offer is host + accelerator in the
same zone, with the accelerator row of the count that the machine family attaches.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from ..catalog.gpus import GpuSpec, GpuTable
from ..catalog.regions import location
from ..errors import CatalogError
from ..facts import Corrected, Flag, parse_flags, parse_labels
from . import interconnect as interconnect_of
from . import number_text, spot_flags
from .china import Documented, read_specs
from .china import interconnect as _interconnect
from .offer_row import OfferRow
from .sanity import below_parts, flex_start_rate
from .skypilot_rules import RULES, Listed, gpu_info_mib


@dataclass(frozen=True)
class Extract:
    """One vendored SkyPilot file: its name under catalogs/sources/, the commit it was read at, and how the
    provider bills (not in the data: see catalogs/SOURCES.md, `billing-granularity`): documented by the provider for
    the four large clouds, assumed hourly (the conservative choice) for the others."""

    file: str
    commit: str
    billing_granularity_s: int
    billing_assumed: bool = False


def _hourly_assumed(file: str, commit: str) -> Extract:
    return Extract(file, commit, 3600, billing_assumed=True)


EXTRACTS = {
    "aws": Extract("aws_gpu.csv", "00148f2af3672e2229b4f7bf8157d5a3f36e3c35", 1),
    "gcp": Extract("gcp_gpu.csv", "006059e0f18acb1341e22a27751e9f80df6ba92f", 1),
    "azure": Extract("azure_gpu.csv", "098741e70562f65d7af1cceb81e33b284f742604", 60),
    "lambda": Extract("lambda_gpu.csv", "0f4070387edc953d7004cff197940e1918a1d6aa", 60),
    "nebius": _hourly_assumed("nebius_gpu.csv", "0082b0435f3912ae4c566856b272455cc78f4f61"),
    "oci": _hourly_assumed("oci_gpu.csv", "0588751183820cf2dab5c8a89447e8aac9f73fd5"),
    "verda": _hourly_assumed("verda_gpu.csv", "000c1d0bf24621f4ac37cfa585f0897c1aa1d9cf"),
    "vast": _hourly_assumed("vast_gpu.csv", "01b8cdda287814b30ff0acb49746cca19fbd4355"),
    "cudo": _hourly_assumed("cudo_gpu.csv", "113567a74b2f208af08e0c9236e26cc354a2bf65"),
    "hyperbolic": _hourly_assumed("hyperbolic_gpu.csv", "0082b0435f3912ae4c566856b272455cc78f4f61"),
    "shadeform": _hourly_assumed("shadeform_gpu.csv", "002363dac75913b446b2d3d564ae795678849dfd"),
    "hyperstack": _hourly_assumed("hyperstack_gpu.csv", "fdc9d908ab0b2af9f468f139fb3f662c8c6b3257"),
    "jarvislabs": _hourly_assumed("jarvislabs_gpu.csv", "57d65781a544958d7d07014f062f7d1cad8415a7"),
    "primeintellect": _hourly_assumed("primeintellect_gpu.csv", "d9a304ea01e96cd4a043159c60d9326d8de4cf0f"),
    "mithril": _hourly_assumed("mithril_gpu.csv", "1f9eb0c264f9a6d78833766f4b18353ac7dfdde9"),
    "yotta": _hourly_assumed("yotta_gpu.csv", "1f6904890c9bb9408f1d11e2865c3c1ee4d409c0"),
    "lium": _hourly_assumed("lium_gpu.csv", "04a03aee12247fb62be7a2ee9d460bbf6dff30b1"),
}
_MICRO = Decimal("0.000001")
_RATE = Decimal("0.00001")  # SkyPilot's GCP prices: 5 decimals

# GCP machine family → (accelerator, GPUs attached), as GCP documents the accelerator-optimised families.
_GCP_FAMILIES = [
    (re.compile(r"^a2-highgpu-(\d+)g$"), "A100", None),
    (re.compile(r"^a2-megagpu-16g$"), "A100", 16),
    (re.compile(r"^a2-ultragpu-(\d+)g$"), "A100-80GB", None),
    (re.compile(r"^a3-highgpu-(\d+)g$"), "H100", None),
    (re.compile(r"^a3-edgegpu-8g(-nolssd)?$"), "H100", 8),
    (re.compile(r"^a3-megagpu-8g$"), "H100-MEGA", 8),
    (re.compile(r"^a3-ultragpu-8g(-nolssd)?$"), "H200", 8),
    (re.compile(r"^a4-highgpu-8g$"), "B200", 8),
]
# GPU model, count, memory and interconnect of each Azure size, from Microsoft's size pages (SOURCES-azure.txt).
AZURE_SPECS_FILE = "azure_gpu_specs.csv"
# Azure's rows come from SkyPilot's older catalog v6, of unknown date: each says so, and where Microsoft's price is.
AZURE_AGE = ("all:from SkyPilot's older catalog (v6), date unknown, and `catalog refresh azure` gets Microsoft's "
             "current price")
_G2_L4_COUNT = {"4": 1, "8": 1, "12": 1, "16": 1, "32": 1, "24": 2, "48": 4, "96": 8}


def _gpu_memory_gib(gpu_info: str, fallback: float) -> float:
    """Per-GPU memory from a SkyPilot GpuInfo cell, else the spec sheet's."""
    mib = gpu_info_mib(gpu_info)
    return round(mib / 1024, 2) if mib is not None else fallback


def _number(text: str) -> Decimal | None:
    return Decimal(text) if text else None


def _azure_documented(doc: Documented) -> dict[str, str]:
    """A documented Azure size as catalog values: memory per GPU (a partial GPU's: all it has), the interconnect
    where the page states one ("" otherwise)."""
    count = Decimal(doc.gpu_count)
    memory = Decimal(doc.total_memory_gib) / max(count, Decimal(1))
    stated = _interconnect(doc)
    return {"gpu": doc.gpu, "gpu_count": doc.gpu_count, "gpu_memory_gib": str(float(memory)),
            "interconnect": "" if stated == "unknown" else stated}


def _same(value: str, documented: str) -> bool:
    try:
        return Decimal(value) == Decimal(documented)
    except ArithmeticError:  # not numbers: names
        return value == documented


def price_text(value: str) -> str:
    """A price as published, except float artefacts beyond 6 decimals, rounded half-up (0.36979999999999996 →
    0.3698); blank stays blank."""
    value = value.strip()
    if not value or Decimal(value) == Decimal(value).quantize(_MICRO):
        return value
    return format(Decimal(value).quantize(_MICRO, rounding=ROUND_HALF_UP).normalize(), "f")


# A GCP accelerator row's key: (GPU name, count, zone), as the extract writes them
GcpPart = tuple[str, str, str]


class SkyPilotSource:
    """One provider's rows from a directory of SkyPilot catalog extracts, imported on `imported`. `observed` is
    the date of the catalog commit they were read at, the day SkyPilot's fetchers saw the prices; blank where it
    is not known (the bundled extracts record their commits but not the commits' dates: the rows say "date
    unknown" and their age counts from `imported`)."""

    def __init__(self, provider: str, directory: Path, gpus: GpuTable, imported: str, observed: str = "",
                 detail: str = "", specs_dir: Path | None = None):
        self.provider = provider
        self.detail = detail
        self.extract = EXTRACTS[provider]
        self.source = f"skypilot-{provider}"
        self.path = Path(directory) / self.extract.file
        self.gpus = gpus
        self.imported, self.observed = imported, observed
        self.specs_dir = Path(specs_dir or directory)  # where the documented specs are (`AZURE_SPECS_FILE`)
        self.skipped: Counter[str] = Counter()

    def _read(self) -> list[dict[str, str]]:
        with self.path.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))

    def _offer(self, *, region: str, instance_type: str, gpu: str, gpu_count: str, gpu_memory_gib: str,
               vcpus: str, memory_gib: str, on_demand_hourly: str, spot_hourly: str, flags: str, zone: str = "",
               interconnect: str | None = None, notes: str = "", source_detail: str = "") -> OfferRow:
        """A row from the extract's text (counts and prices as written, `flags` and `notes` as the columns write
        them); the provider, source, date, currency and location are this source's."""
        country, continent = location(self.provider, region)
        return OfferRow(
            provider=self.provider, region=region, zone=zone, instance_type=instance_type, gpu=gpu,
            gpu_count=Decimal(gpu_count), gpu_memory_gib=Decimal(gpu_memory_gib), vcpus=_number(vcpus),
            memory_gib=_number(memory_gib),
            interconnect=interconnect_of(instance_type) if interconnect is None else interconnect, currency="USD",
            on_demand_hourly=_number(on_demand_hourly), spot_hourly=_number(spot_hourly),
            billing_granularity_s=self.extract.billing_granularity_s, source=self.source,
            as_of=dt.date.fromisoformat(self.observed) if self.observed else None,
            imported=dt.date.fromisoformat(self.imported) if self.imported else None, verified=True,
            flags=parse_flags(flags), source_detail="; ".join(filter(None, [source_detail, self.detail])),
            country=country, continent=continent, notes=parse_labels(notes))

    def _gpu(self, accelerator: str) -> GpuSpec | None:
        spec = self.gpus.find(accelerator)
        if spec is None:
            self.skipped[f"not a GPU ({accelerator.split('-')[0]})"] += 1
        return spec

    def rows(self) -> Iterator[OfferRow]:
        if self.provider in RULES:
            return self._rows_listed(RULES[self.provider])
        readers = {"aws": self._rows_aws, "gcp": self._rows_gcp, "azure": self._rows_azure, "lambda": self._rows_lambda}
        return readers[self.provider]()

    def _priced_gpu_rows(self) -> Iterator[tuple[dict[str, str], GpuSpec, list[str]]]:
        """(raw row, GPU spec, flags) for the extract's rows of a known GPU with at least one price."""
        for r in self._read():
            spec = self._gpu(r["AcceleratorName"])
            if spec is None:
                continue
            if not (r["Price"] or r.get("SpotPrice")):
                self.skipped["no price"] += 1
                continue
            yield r, spec, spot_flags(r["Price"], r.get("SpotPrice", ""))

    def _rows_aws(self) -> Iterator[OfferRow]:
        for r, spec, flags in self._priced_gpu_rows():
            count = number_text(r["AcceleratorCount"])
            if Decimal(count) < 1:
                flags.append(f"all:{Flag.FRACTIONAL_GPU}")
            yield self._offer(
                region=r["Region"], zone=r["AvailabilityZone"], instance_type=r["InstanceType"], gpu=spec.name,
                gpu_count=count, gpu_memory_gib=str(_gpu_memory_gib(r["GpuInfo"], spec.memory_gib)),
                vcpus=number_text(r["vCPUs"]), memory_gib=number_text(r["MemoryGiB"]),
                on_demand_hourly=r["Price"], spot_hourly=r["SpotPrice"], flags=";".join(flags),
            )

    def _rows_gcp(self) -> Iterator[OfferRow]:
        hosts: list[dict[str, str]] = []
        accelerators: dict[GcpPart, dict[str, str]] = {}
        for r in self._read():
            if r["InstanceType"]:
                hosts.append(r)
            elif r["AcceleratorName"].startswith("tpu-"):
                self.skipped["not a GPU (tpu)"] += 1
            else:
                accelerators[(r["AcceleratorName"], r["AcceleratorCount"], r["AvailabilityZone"])] = r
        flex_start, list_rate = _gcp_gpu_rates(accelerators)
        used: set[GcpPart] = set()
        for host in hosts:
            family = self._gcp_family(host["InstanceType"])
            if family is None:
                self.skipped["GCP host of unknown family"] += 1
                continue
            name, count = family
            key = (name, str(count), host["AvailabilityZone"])
            accelerator = accelerators.get(key)
            if accelerator is None:
                self.skipped["GCP host without its accelerator row"] += 1
                continue
            used.add(key)
            spec = self.gpus.find(name)
            if spec is None:  # a family whose GPU gpus.csv lost: counted, as the rows above are
                self.skipped["GCP host whose GPU is not in gpus.csv"] += 1
                continue
            on_demand = _sum_prices(host["Price"], accelerator["Price"])
            spot = _sum_prices(host["SpotPrice"], accelerator["SpotPrice"])
            # A defect in either part (SOURCES.txt: A100-80GB and H200 accelerator spot above on-demand)
            # makes the summed spot price suspect too.
            flags = sorted(set(spot_flags(on_demand, spot) + spot_flags(host["Price"], host["SpotPrice"])
                               + spot_flags(accelerator["Price"], accelerator["SpotPrice"])))
            if host["Price"] and Decimal(host["Price"]) == 0:
                flags.insert(0, f"all:{Flag.ZERO_HOST_PRICE}")
            if key in flex_start:
                flags.append(f"on_demand:{Flag.FLEX_START_PRICE}")
            elif on_demand and below_parts(Decimal(on_demand), _parts_floor(host, accelerator, count,
                                                                              list_rate.get(name))):
                flags.append(f"on_demand:{Flag.BELOW_PARTS_PRICE}")
            yield self._offer(
                region=host["Region"], zone=host["AvailabilityZone"], instance_type=host["InstanceType"],
                gpu=spec.name, gpu_count=str(count),
                gpu_memory_gib=str(_gpu_memory_gib(accelerator["GpuInfo"], spec.memory_gib)),
                vcpus=number_text(host["vCPUs"]), memory_gib=number_text(host["MemoryGiB"]),
                on_demand_hourly=on_demand, spot_hourly=spot, flags=";".join(flags),
                source_detail="host + accelerator rows of the same zone",
            )
        unused = [k for k in accelerators if k not in used]
        self.skipped["GCP accelerator without a matching host row (e.g. n1 hosts, not in extract)"] += len(unused)

    def _gcp_family(self, instance_type: str) -> tuple[str, int] | None:
        for pattern, name, fixed in _GCP_FAMILIES:
            match = pattern.match(instance_type)
            if match:
                return name, fixed if fixed is not None else int(match.group(1))
        match = re.match(r"^g2-standard-(\d+)$", instance_type)
        if match and match.group(1) in _G2_L4_COUNT:
            return "L4", _G2_L4_COUNT[match.group(1)]
        return None

    def _rows_azure(self) -> Iterator[OfferRow]:
        """GPU model, count, memory and interconnect as Microsoft's size page documents them (`AZURE_SPECS_FILE`);
        each value the extract gives otherwise is corrected, with a label saying from what to what on which page."""
        specs = self.specs_dir / AZURE_SPECS_FILE
        if not specs.is_file():
            raise CatalogError(f"{specs} not found: Azure's rows need Microsoft's documented GPU specs "
                               "(the catalog is unchanged)")
        documented = {d.instance_type: d for d in read_specs(specs)["azure"]}
        for r, spec, flags in self._priced_gpu_rows():
            values = {"gpu": spec.name, "gpu_count": number_text(r["AcceleratorCount"]),
                      "gpu_memory_gib": str(_gpu_memory_gib(r["GpuInfo"], spec.memory_gib)),
                      "interconnect": interconnect_of(r["InstanceType"])}
            notes = []
            # a `_Promo` size is its base size at a promotional price: the page documents the base size
            doc = documented.get(r["InstanceType"].removesuffix("_Promo"))
            for column, now in (_azure_documented(doc) if doc else {}).items():
                if doc and now and not _same(values[column], now):
                    notes.append(Corrected.entry("all", column=column, was=values[column], now=now, on=doc.source))
                    values[column] = now
            if Decimal(values["gpu_count"]) < 1:
                flags.append(f"all:{Flag.FRACTIONAL_GPU}")
            yield self._offer(
                region=r["Region"], instance_type=r["InstanceType"], notes=";".join([*notes, AZURE_AGE]), **values,
                vcpus=number_text(r["vCPUs"]), memory_gib=number_text(r["MemoryGiB"]),
                on_demand_hourly=r["Price"], spot_hourly=r["SpotPrice"], flags=";".join(flags),
            )

    def _rows_lambda(self) -> Iterator[OfferRow]:
        """Lambda names the H100 PCIe card only in the instance type (`gpu_1x_h100_pcie`; AcceleratorName is
        plain "H100", which gpus.csv reads as the SXM part): the type's `_pcie` suffix picks H100-PCIE."""
        for r in self._read():
            spec = self._gpu(r["AcceleratorName"])
            if spec is None:
                continue
            if spec.name == "H100" and r["InstanceType"].endswith("_pcie"):
                spec = self.gpus.find("H100-PCIE") or spec
            if not r["Price"]:
                self.skipped["no price"] += 1
                continue
            yield self._offer(
                region=r["Region"], instance_type=r["InstanceType"], gpu=spec.name,
                gpu_count=number_text(r["AcceleratorCount"]),
                gpu_memory_gib=str(_gpu_memory_gib(r["GpuInfo"], spec.memory_gib)),
                vcpus=number_text(r["vCPUs"]), memory_gib=number_text(r["MemoryGiB"]),
                on_demand_hourly=r["Price"], spot_hourly="", flags="",
            )

    def _rows_listed(self, rule: Callable[[Listed], None]) -> Iterator[OfferRow]:
        """The newer clouds' files: one row per offer, columns by name, then the provider's `rule`."""
        for r in self._read():
            count = number_text(r["AcceleratorCount"] or "0")
            if Decimal(count) == 0:
                self.skipped["no GPU"] += 1
                continue
            spec = self._gpu(r["AcceleratorName"])
            if spec is None:
                continue
            raw = Listed(row=r, spec=spec, count=Decimal(count), on_demand=price_text(r.get("Price", "")),
                         spot=price_text(r.get("SpotPrice", "")),
                         memory_gib=_gpu_memory_gib(r.get("GpuInfo", ""), spec.memory_gib))
            rule(raw)
            if not (raw.on_demand or raw.spot):
                self.skipped["no price"] += 1
                continue
            spec = self.gpus.variant(raw.spec, raw.memory_gib)
            flags = raw.flags + spot_flags(raw.on_demand, raw.spot)
            yield self._offer(
                region=raw.region, zone=r.get("AvailabilityZone", ""),
                instance_type=r["InstanceType"], gpu=spec.name, gpu_count=count,
                gpu_memory_gib=str(raw.memory_gib), vcpus=raw.vcpus, memory_gib=raw.memory,
                interconnect=_named_interconnect(r["InstanceType"], r["AcceleratorName"]),
                on_demand_hourly=raw.on_demand, spot_hourly=raw.spot, flags=";".join(flags),
                notes=";".join(raw.notes),
            )


def _gcp_gpu_rates(accelerators: dict[GcpPart, dict[str, str]]) -> tuple[set[GcpPart], dict[str, Decimal]]:
    """The GPU parts priced at a Flex-start rate (rule c: their keys), and each GPU's list rate per GPU-hour for
    rule (a): its lowest on-demand rate over the regions, Flex-start rates left out."""
    rates: dict[str, set[Decimal]] = {}
    per_gpu: dict[GcpPart, Decimal] = {}
    for key, row in accelerators.items():
        if row["Price"] and Decimal(row["AcceleratorCount"]) > 0:
            per_gpu[key] = Decimal(row["Price"]) / Decimal(row["AcceleratorCount"])
            rates.setdefault(key[0], set()).add(per_gpu[key].quantize(_RATE))
    flex_start = {key for key, rate in per_gpu.items()
                  if flex_start_rate(key[0], rate.quantize(_RATE), rates[key[0]] - {rate.quantize(_RATE)})}
    list_rate: dict[str, Decimal] = {}
    for key, rate in per_gpu.items():
        if key not in flex_start:  # exact, not rounded: a machine's own parts never undercut it
            list_rate[key[0]] = min(rate, list_rate.get(key[0], rate))
    return flex_start, list_rate


def _parts_floor(host: dict[str, str], accelerator: dict[str, str], count: int, list_rate: Decimal | None) -> Decimal:
    """Rule (a)'s least on-demand price of a GCP machine: its host's on-demand price and its GPUs at no less than
    their list rate, and no less than their own preemptible (spot) price: an on-demand GPU part priced below its
    spot part is not an on-demand rate (SOURCES-plans.txt part B: the H200 rows at 4.5753 per GPU)."""
    gpus = max(count * (list_rate or Decimal(0)), Decimal(accelerator["SpotPrice"] or 0))
    return Decimal(host["Price"] or 0) + gpus


def _sum_prices(host: str, accelerator: str) -> str:
    """Host + accelerator, exactly; blank when either is unknown."""
    if not host or not accelerator:
        return ""
    return format(Decimal(host) + Decimal(accelerator), "f")


def _named_interconnect(instance_type: str, accelerator: str) -> str:
    """NVLink or PCIe where the provider's names say so (SXM parts are NVLink-connected), else by family."""
    names = f"{instance_type} {accelerator}".lower()
    if "nvlink" in names or "sxm" in names:
        return "nvlink"
    if "pci" in names:
        return "pcie"
    return interconnect_of(instance_type)
