"""What would pack the work of a lightly used GPU: a MIG profile that fits its measured memory and use, MPS for
several small processes, or a smaller instance type from the catalog and what it saves a month. Advice only:
nothing here acts.

A GPU is lightly used when, over the measured window, its memory stays at or under half the GPU's and its
compute use at or under half. Each way of packing keeps a headroom of `HEADROOM` over what was measured (peaks
are higher than window averages):
- **MIG** (A100, H100, H200, A30): the profile with the fewest compute slices, then the least memory, whose
  memory and share of the GPU's streaming multiprocessors both hold the measured use with headroom; one GPU holds
  as many of it as the profile's instance count ("3× 2g.20gb"). Profiles, their memory and how many fit a GPU:
  NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles"
  (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html, read 2026-12-05).
- **MPS** (every NVIDIA GPU since Volta): how many processes of the measured size one GPU holds, by memory and by
  compute, when that is two or more.
- **A smaller instance**: the cheapest verified, unflagged on-demand offer of the same provider and region with as
  many GPUs, each with the memory needed and the measured compute (use × the GPU's dense 16-bit TFLOPS, with
  headroom) at most `FILL` of its own, below the current hourly price; the saving is a month of 730 hours (the
  month the providers' price pages use).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal

from ..catalog.gpus import GpuSpec, GpuTable
from ..catalog.offers import Offer
from ..facts import PricingModel

HEADROOM = 1.2
LIGHT_USE = 0.5  # memory and compute at or under half the GPU's
FILL = 0.8       # a smaller GPU may be this busy with the moved work
HOURS_PER_MONTH = Decimal(730)


@dataclass(frozen=True)
class MigProfile:
    name: str         # as nvidia-smi names it: 2g.20gb
    slices: int       # compute slices it takes
    of: int           # compute slices of the whole GPU (7; 4 on A30)
    memory_gib: float
    per_gpu: int      # the most instances of this profile one GPU holds


def _profiles(*rows: tuple[str, int, int, float, int]) -> tuple[MigProfile, ...]:
    return tuple(MigProfile(*row) for row in rows)


# The guide's tables, by the catalog's GPU names (gpus.csv). The +me media profiles pack nothing more.
_80GB = _profiles(("1g.10gb", 1, 7, 10, 7), ("1g.20gb", 1, 7, 20, 4), ("2g.20gb", 2, 7, 20, 3),
                  ("3g.40gb", 3, 7, 40, 2), ("4g.40gb", 4, 7, 40, 1), ("7g.80gb", 7, 7, 80, 1))  # A100 and H100
MIG_PROFILES: dict[str, tuple[MigProfile, ...]] = {
    "A100": _profiles(("1g.5gb", 1, 7, 5, 7), ("1g.10gb", 1, 7, 10, 4), ("2g.10gb", 2, 7, 10, 3),
                      ("3g.20gb", 3, 7, 20, 2), ("4g.20gb", 4, 7, 20, 1), ("7g.40gb", 7, 7, 40, 1)),
    "A100-80GB": _80GB, "H100": _80GB, "H100-PCIE": _80GB,
    "H100-NVL": _profiles(("1g.12gb", 1, 7, 12, 7), ("1g.24gb", 1, 7, 24, 4), ("2g.24gb", 2, 7, 24, 3),
                          ("3g.47gb", 3, 7, 47, 2), ("4g.47gb", 4, 7, 47, 1), ("7g.94gb", 7, 7, 94, 1)),
    "H200": _profiles(("1g.18gb", 1, 7, 18, 7), ("1g.35gb", 1, 7, 35, 4), ("2g.35gb", 2, 7, 35, 3),
                      ("3g.71gb", 3, 7, 71, 2), ("4g.71gb", 4, 7, 71, 1), ("7g.141gb", 7, 7, 141, 1)),
    "A30": _profiles(("1g.6gb", 1, 4, 6, 4), ("2g.12gb", 2, 4, 12, 2), ("4g.24gb", 4, 4, 24, 1)),
}


@dataclass(frozen=True)
class MeasuredUse:
    """One instance's (or machine's) GPUs over a window: per-GPU figures."""

    gpu: GpuSpec
    gpus: int
    memory_used_gib: float    # the highest sample: what must fit
    utilization_pct: float    # the window's average
    window_s: int


@dataclass(frozen=True)
class MigFit:
    profile: MigProfile
    copies: int               # how many of it one GPU holds


@dataclass(frozen=True)
class SmallerInstance:
    offer: Offer
    hourly: Decimal            # at the current instance's pricing model, in its currency
    saving_per_month: Decimal  # against the current instance, run a whole month


@dataclass(frozen=True)
class SharingAdvice:
    use: MeasuredUse
    mig: MigFit | None         # None: the GPU has no MIG, or no profile holds the work
    mps_processes: int | None  # processes of this size one GPU holds under MPS; None below 2
    smaller: SmallerInstance | None


def lightly_used(use: MeasuredUse) -> bool:
    return (use.memory_used_gib <= LIGHT_USE * use.gpu.memory_gib
            and use.utilization_pct <= LIGHT_USE * 100)


def mig_fit(use: MeasuredUse) -> MigFit | None:
    need_memory, need_share = use.memory_used_gib * HEADROOM, use.utilization_pct / 100 * HEADROOM
    fitting = [p for p in MIG_PROFILES.get(use.gpu.name, ())
               if p.memory_gib >= need_memory and p.slices / p.of >= need_share]
    if not fitting:
        return None
    best = min(fitting, key=lambda p: (p.slices, p.memory_gib))
    return MigFit(best, best.per_gpu)


def mps_processes(use: MeasuredUse) -> int | None:
    by_memory = math.floor(use.gpu.memory_gib / max(use.memory_used_gib * HEADROOM, 0.1))
    by_compute = math.floor(100 / max(use.utilization_pct * HEADROOM, 1.0))
    processes = min(by_memory, by_compute)
    return processes if processes >= 2 else None


def _tflops(spec: GpuSpec) -> float | None:
    """Dense 16-bit tensor TFLOPS (bf16, else fp16): the measure of how much work a GPU's share holds."""
    return spec.bf16_tflops or spec.fp16_tflops


PriceOf = Callable[[Offer], "Decimal | None"]


def smaller_instance(use: MeasuredUse, offers: Iterable[Offer], gpus: GpuTable, *, model: PricingModel,
                     price_of: PriceOf, current_hourly: Decimal) -> SmallerInstance | None:
    """The cheapest offer in `offers` (the same provider and region as the measured instance) that holds the work,
    at the current instance's pricing `model`; `price_of` gives an offer's price in the current one's currency."""
    current_tflops = _tflops(use.gpu)
    if current_tflops is None:
        return None
    needed_tflops = use.utilization_pct / 100 * current_tflops * HEADROOM
    best: tuple[Decimal, Offer] | None = None
    for offer in offers:
        spec = gpus.find(offer.gpu)
        hourly = price_of(offer)
        if (spec is None or hourly is None or not offer.verified or offer.flagged(model)
                or offer.gpu_count != use.gpus or hourly >= current_hourly):
            continue
        memory = offer.gpu_memory_gib or spec.memory_gib
        tflops = _tflops(spec)
        if memory < use.memory_used_gib * HEADROOM or tflops is None or tflops * FILL < needed_tflops:
            continue
        if best is None or hourly < best[0]:
            best = (hourly, offer)
    if best is None:
        return None
    hourly, offer = best
    return SmallerInstance(offer, hourly, (current_hourly - hourly) * HOURS_PER_MONTH)


def sharing_advice(use: MeasuredUse, offers: Iterable[Offer], gpus: GpuTable, *, model: PricingModel,
                   price_of: PriceOf, current_hourly: Decimal | None) -> SharingAdvice | None:
    """Advice for a lightly used GPU; None for one that is not (or where nothing would pack it)."""
    if not lightly_used(use):
        return None
    smaller = smaller_instance(use, offers, gpus, model=model, price_of=price_of, current_hourly=current_hourly) \
        if current_hourly is not None else None
    advice = SharingAdvice(use, mig_fit(use), mps_processes(use), smaller)
    return advice if advice.mig or advice.mps_processes or advice.smaller else None
