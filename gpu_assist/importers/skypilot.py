"""SkyPilot's public catalog CSVs (AWS, GCP, Azure, Lambda) → gpu-assist offer rows.

Values are copied as published; nothing is rounded. Known defects (listed in the extract's
SOURCES.txt) are flagged, not repaired:

- spot price not below on-demand → `spot:not-below-on-demand` (the spot price is left out of quotes);
- GCP host row priced 0.0 (a4-highgpu-8g) → `all:zero-host-price`;
- fractional GPUs (AWS g6f/gr6f: 1/8 to 1/2 of an L4) → `all:fractional-gpu` (no whole GPU to quote);
- Azure Standard_ND96isr_H100_v5 listed with 12 GPUs (the VM has 8) → `all:gpu-count-mismatch`.

Skipped, with counts in the report: accelerators that are not GPUs (TPU, Trainium, Inferentia,
Gaudi, FPGAs), GCP accelerators whose host family is not in the extract (T4/V100/P100/P4 attach
to n1 hosts, which were not kept), rows without any price.

GCP prices the host VM and its GPUs in separate rows; an offer is host + accelerator in the
same zone, with the accelerator row of the count that the machine family attaches.
"""

from __future__ import annotations

import ast
import csv
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path

from ..gpus import GpuTable
from . import interconnect, number_text, spot_flags

# Per-second billing with a one-minute minimum on AWS and GCP; per-minute on Azure and Lambda
# (see catalogs/SOURCES.md, `billing-granularity`).
BILLING_GRANULARITY_S = {"aws": 1, "gcp": 1, "azure": 60, "lambda": 60}
SOURCE_KEYS = {"aws": "skypilot-aws", "gcp": "skypilot-gcp", "azure": "skypilot-azure", "lambda": "skypilot-lambda"}
FILES = {"aws": "aws_gpu.csv", "gcp": "gcp_gpu.csv", "azure": "azure_gpu.csv", "lambda": "lambda_gpu.csv"}

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
_G2_L4_COUNT = {"4": 1, "8": 1, "12": 1, "16": 1, "32": 1, "24": 2, "48": 4, "96": 8}

def _gpu_memory_gib(gpu_info: str, fallback: float) -> float:
    """Per-GPU memory from a SkyPilot GpuInfo cell (a Python dict literal), else the spec sheet's."""
    if gpu_info.startswith("{"):
        try:
            info = ast.literal_eval(gpu_info)
            mib = info["Gpus"][0]["MemoryInfo"]["SizeInMiB"]
            return round(float(mib) / 1024, 2)
        except (ValueError, SyntaxError, KeyError, IndexError, TypeError):
            pass
    return fallback


class SkyPilotSource:
    """One provider's rows from a directory of SkyPilot catalog extracts."""

    def __init__(self, provider: str, directory: Path, gpus: GpuTable, as_of: str):
        self.provider = provider
        self.source = SOURCE_KEYS[provider]
        self.path = Path(directory) / FILES[provider]
        self.gpus = gpus
        self.as_of = as_of
        self.skipped: Counter[str] = Counter()

    def _read(self) -> list[dict]:
        with self.path.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))

    def _offer(self, **values) -> dict:
        row = {
            "provider": self.provider, "currency": "USD", "verified": "yes", "source": self.source,
            "as_of": self.as_of, "billing_granularity_s": str(BILLING_GRANULARITY_S[self.provider]),
            "interconnect": interconnect(values["instance_type"]), "zone": "",
        }
        row.update(values)
        return row

    def _gpu(self, accelerator: str):
        spec = self.gpus.find(accelerator)
        if spec is None:
            self.skipped[f"not a GPU ({accelerator.split('-')[0]})"] += 1
        return spec

    def rows(self):
        return getattr(self, f"_rows_{self.provider}")()

    def _priced_gpu_rows(self):
        """(raw row, GPU spec, flags) for the extract's rows of a known GPU with at least one price."""
        for r in self._read():
            spec = self._gpu(r["AcceleratorName"])
            if spec is None:
                continue
            if not (r["Price"] or r.get("SpotPrice")):
                self.skipped["no price"] += 1
                continue
            yield r, spec, spot_flags(r["Price"], r.get("SpotPrice", ""))

    def _rows_aws(self):
        for r, spec, flags in self._priced_gpu_rows():
            count = number_text(r["AcceleratorCount"])
            if Decimal(count) < 1:
                flags.append("all:fractional-gpu")
            yield self._offer(
                region=r["Region"], zone=r["AvailabilityZone"], instance_type=r["InstanceType"], gpu=spec.name,
                gpu_count=count, gpu_memory_gib=str(_gpu_memory_gib(r["GpuInfo"], spec.memory_gib)),
                vcpus=number_text(r["vCPUs"]), memory_gib=number_text(r["MemoryGiB"]),
                on_demand_hourly=r["Price"], spot_hourly=r["SpotPrice"], flags=";".join(flags),
            )

    def _rows_gcp(self):
        hosts, accelerators = [], {}
        for r in self._read():
            if r["InstanceType"]:
                hosts.append(r)
            elif r["AcceleratorName"].startswith("tpu-"):
                self.skipped["not a GPU (tpu)"] += 1
            else:
                accelerators[(r["AcceleratorName"], r["AcceleratorCount"], r["AvailabilityZone"])] = r
        used = set()
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
            on_demand = _sum_prices(host["Price"], accelerator["Price"])
            spot = _sum_prices(host["SpotPrice"], accelerator["SpotPrice"])
            # A defect in either part (SOURCES.txt: A100-80GB and H200 accelerator spot above on-demand)
            # makes the summed spot price suspect too.
            flags = sorted(set(spot_flags(on_demand, spot) + spot_flags(host["Price"], host["SpotPrice"])
                               + spot_flags(accelerator["Price"], accelerator["SpotPrice"])))
            if host["Price"] and Decimal(host["Price"]) == 0:
                flags.insert(0, "all:zero-host-price")
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

    def _gcp_family(self, instance_type: str):
        for pattern, name, fixed in _GCP_FAMILIES:
            match = pattern.match(instance_type)
            if match:
                return name, fixed if fixed is not None else int(match.group(1))
        match = re.match(r"^g2-standard-(\d+)$", instance_type)
        if match and match.group(1) in _G2_L4_COUNT:
            return "L4", _G2_L4_COUNT[match.group(1)]
        return None

    def _rows_azure(self):
        for r, spec, flags in self._priced_gpu_rows():
            if r["InstanceType"] == "Standard_ND96isr_H100_v5" and number_text(r["AcceleratorCount"]) != "8":
                flags.append("all:gpu-count-mismatch")
            yield self._offer(
                region=r["Region"], instance_type=r["InstanceType"], gpu=spec.name,
                gpu_count=number_text(r["AcceleratorCount"]),
                gpu_memory_gib=str(_gpu_memory_gib(r["GpuInfo"], spec.memory_gib)),
                vcpus=number_text(r["vCPUs"]), memory_gib=number_text(r["MemoryGiB"]),
                on_demand_hourly=r["Price"], spot_hourly=r["SpotPrice"], flags=";".join(flags),
            )

    def _rows_lambda(self):
        for r in self._read():
            spec = self._gpu(r["AcceleratorName"])
            if spec is None:
                continue
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


def _sum_prices(host: str, accelerator: str) -> str:
    """Host + accelerator, exactly; blank when either is unknown."""
    if not host or not accelerator:
        return ""
    return format(Decimal(host) + Decimal(accelerator), "f")
