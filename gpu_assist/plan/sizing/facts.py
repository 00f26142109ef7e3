"""What sizing states, as facts: per GPU type how many it takes and how fast, and each assumption an answer rests
on. The words are the renderers' (`render/sizing.py`); these hold the numbers."""

from __future__ import annotations

from ...facts import Fact
from ..workload import Workload
from .memory import MemoryEstimate, kv_bytes_per_token, model_shape


class MissingRate(Fact):
    """A job at `precision` cannot be timed on a GPU: gpus.csv gives no `compute_precision` rate for it, only
    `others` (none: no dense 16- or 8-bit rate at all). The GPU's name is left out, so GPUs missing the same
    rate share one fact."""

    precision: str
    compute_precision: str
    others: tuple[str, ...]


class ServingLayout(Fact):
    """A serving layout on one offer: `tp` GPUs per replica × `replicas`, `users` each, decoding at
    `tokens_per_s` per user (None: no bandwidth in gpus.csv)."""

    tp: int
    replicas: int
    users: int
    tokens_per_s: float | None


class GpuSizing(Fact):
    """One GPU type sized for the job: the job's `needed_gb` takes `need` GPUs of `smallest_gib` each
    (`need_largest` of the offers with `largest_gib`); the biggest host has `biggest_host` of them holding
    `host_usable_gb`. Serving: the layout of its offers (the last one sized). Training: `gpu_hours` at `tflops`
    × `mfu`, computed in `compute_precision`. `missing`: why it cannot be planned at all (the rest is then
    unset)."""

    gpu: str
    smallest_gib: float = 0.0
    largest_gib: float = 0.0
    needed_gb: float = 0.0
    need: int = 0
    need_largest: int = 0
    biggest_host: int = 0
    host_usable_gb: float = 0.0
    layout: ServingLayout | None = None
    gpu_hours: float | None = None
    tflops: float | None = None
    mfu: float = 0.0
    precision: str = ""
    compute_precision: str = ""
    missing: MissingRate | None = None


class NotPlanned(Fact):
    """GPU types of the search no plan was made for, and why."""

    gpus: tuple[str, ...]
    why: MissingRate


class MemoryBasis(Fact):
    """The job's memory, part by part."""

    workload: Workload
    memory: MemoryEstimate


class DeadlineBasis(Fact):
    """A training job's deadline: `days` when the default one was assumed, None when there is none."""

    days: float | None


class ServingBasis(Fact):
    """The serving workload and the model shape its KV cache comes from (`kv_bytes_per_token`)."""

    workload: Workload
    layers: float
    d_model: float
    kv_bytes_per_token: float


class DecodeBasis(Fact):
    """Decode speed: the bandwidth share reached, the speed each user should get, the hours priced."""

    workload: Workload


class ComputeBasis(Fact):
    """A training job's FLOPs (None: unknown, no tokens= or gpu_hours=)."""

    workload: Workload
    flops: float | None


class ScalingBasis(Fact):
    """MFU and how plans scale over hosts."""

    workload: Workload


class SpotBasis(Fact):
    """How spot interruptions and checkpoints are costed."""

    workload: Workload


class QuotaBasis(Fact):
    """AWS's GPU quota families (SOURCES-plans.txt part C)."""


class UsableBasis(Fact):
    """The usable share of GPU memory and the runtime overhead, or LoRA's rank, targets and micro-batch."""

    workload: Workload


def sizing_basis(workload: Workload, memory: MemoryEstimate, flops: float | None) -> tuple[Fact, ...]:
    """Every assumption the answer for `workload` rests on, in the order an answer shows them."""
    basis: list[Fact] = [MemoryBasis(workload, memory)]
    if workload.kind == "serve":
        layers, d_model = model_shape(workload)
        basis += [ServingBasis(workload, layers, d_model, kv_bytes_per_token(workload)), DecodeBasis(workload)]
    else:
        if workload.deadline_assumed and workload.deadline_s is not None:
            basis.append(DeadlineBasis(workload.deadline_s / 86400))
        elif workload.deadline_s is None:
            basis.append(DeadlineBasis(None))
        basis += [ComputeBasis(workload, flops), ScalingBasis(workload)]
        if workload.may_interrupt:
            basis.append(SpotBasis(workload))
        basis.append(QuotaBasis())
    basis.append(UsableBasis(workload))
    return tuple(basis)
