"""How long a job takes on a GPU: its FLOPs, the rate it runs at, how it scales over hosts and what spot
interruptions add. Pure.

A mixture of experts computes with the parameters a token runs through (`active_params`) while its
gradients are all its parameters'.
"""

from __future__ import annotations

import dataclasses
import math

from ...catalog.fabric import Link
from ...catalog.gpus import GpuSpec, GpuTable
from ...facts import Scaling
from ...pricing import spot_risk
from ..workload import Assumptions, Workload, parse_workload
from .facts import MissingRate
from .memory import adapter_params

GRADIENT_BYTES = 2  # gradients are all-reduced in 16 bits (bf16/fp16 mixed precision; fp8 recipes too)


def active_params(workload: Workload) -> float:
    """The parameters one token runs through: a named mixture of experts' active ones, else all of them."""
    return workload.model.active_params if workload.model is not None else workload.params


def flops_factor(workload: Workload) -> int:
    """FLOPs per parameter and token: 6 (forward and backward), 4 under LoRA/QLoRA (no weight gradients)."""
    return 4 if workload.kind == "finetune" and workload.method in ("lora", "qlora") else 6


def training_flops(workload: Workload, gpus: GpuTable) -> float | None:
    """Total FLOPs of the job, None when neither tokens nor reference GPU-hours are given."""
    if workload.tokens:
        return flops_factor(workload) * active_params(workload) * workload.tokens
    if workload.reference_gpu_hours and workload.reference_gpu:
        reference = gpus.specs[workload.reference_gpu]
        tflops = reference.dense_tflops(workload.precision)
        if tflops is None:
            return None
        return workload.reference_gpu_hours * 3600 * tflops * 1e12 * workload.assumptions.mfu
    return None


def missing_throughput(spec: GpuSpec, precision: str) -> MissingRate | None:
    """Why a job at `precision` cannot be timed on `spec` (one rule for every GPU: a plan at a precision runs at
    that precision's rate, none other); None when gpus.csv gives the rate."""
    if spec.dense_tflops(precision) is not None:
        return None
    others = tuple(p for p in ("bf16", "fp16", "fp8") if spec.dense_tflops(p) is not None)
    return MissingRate(precision, spec.compute_precision(precision), others)


def training_hours(flops: float, gpus: int, spec: GpuSpec, workload: Workload, hosts: int,
                   efficiency: float | None = None) -> float | None:
    """Hours at `efficiency` over hosts (None: `multi_host_efficiency` when `hosts` > 1)."""
    tflops = spec.dense_tflops(workload.precision)
    if tflops is None:
        return None
    if efficiency is None:
        efficiency = workload.assumptions.multi_host_efficiency if hosts > 1 else 1.0
    return flops / (gpus * tflops * 1e12 * workload.assumptions.mfu * efficiency) / 3600


def effective_tflops(spec: GpuSpec, gpus: int, efficiency: float, workload: Workload) -> float | None:
    tflops = spec.dense_tflops(workload.precision)
    if tflops is None:
        return None
    return gpus * tflops * workload.assumptions.mfu * efficiency


def trainable_params(workload: Workload) -> float:
    """Parameters with gradients: all of them, or LoRA's adapters only."""
    if workload.kind == "finetune" and workload.method in ("lora", "qlora"):
        return adapter_params(workload)
    return workload.params


def scaling(workload: Workload, spec: GpuSpec, gpus_per_host: int, hosts: int, link: Link | None) -> Scaling:
    """Data-parallel efficiency over `hosts` hosts of `gpus_per_host` GPUs linked by `link`.

    Per optimizer step of `global_batch_tokens` tokens (each GPU computes its share at peak × MFU):
        compute_s = factor × params × (global_batch_tokens / GPUs) / (peak × MFU)   (factor 6; LoRA 4)
        comm_s    = 2 × (hosts − 1) / hosts × gradient bytes / (link Gbps / 8 × link_efficiency)
    the ring all-reduce of 16-bit gradients (LoRA: its adapters') over each host's network, the GPUs of a host
    reducing inside it first (NVLink/PCIe is not the bottleneck); `comm_overlap` of it runs behind the backward
    pass: efficiency = compute_s / (compute_s + (1 − comm_overlap) × comm_s). Model size cancels between
    compute and gradient bytes, so efficiency falls with hosts and GPUs per step and rises with bandwidth.
    `link_efficiency` 0.83 is Voltage Park's 4-node 3.2 Tbps all-reduce bus bandwidth, 330.93 GB/s × 8 / 3200 Gbps
    (SOURCES-plans.txt D2); `CALIBRATION` holds the published points it is checked against.
    The user's `multi_host_efficiency=` wins; without a bandwidth it is the assumption (basis "assumed")."""
    a = workload.assumptions
    gbps = link.gbps if link else None
    if hosts <= 1:
        return Scaling(hosts, gbps, 0.0, 0.0, a.comm_overlap, 1.0, "one host")
    tflops = spec.dense_tflops(workload.precision) or 0.0
    gpus = hosts * gpus_per_host
    compute_s = flops_factor(workload) * active_params(workload) * (a.global_batch_tokens / gpus) / \
        (tflops * 1e12 * a.mfu) if tflops else 0.0
    comm_s = 2 * (hosts - 1) / hosts * GRADIENT_BYTES * trainable_params(workload) / \
        (gbps * 1e9 / 8 * a.link_efficiency) if gbps else 0.0
    if "multi_host_efficiency" in workload.overridden:
        return Scaling(hosts, gbps, compute_s, comm_s, a.comm_overlap, a.multi_host_efficiency, "override")
    if not gbps or not compute_s:
        return Scaling(hosts, gbps, compute_s, comm_s, a.comm_overlap, a.multi_host_efficiency, "assumed")
    efficiency = compute_s / (compute_s + (1 - a.comm_overlap) * comm_s)
    return Scaling(hosts, gbps, compute_s, comm_s, a.comm_overlap, efficiency, "network")


def spot_overhead(a: Assumptions, instances: int = 1, rate_per_h: float | None = None) -> float:
    """Expected extra time per unit of work on spot with checkpoints, for a synchronous job on `instances`
    instances that each are interrupted `rate_per_h` times an hour (default: `interruption_rate_per_h`): any one
    interrupted stops them all, so the job's rate is instances × rate."""
    rate = a.interruption_rate_per_h if rate_per_h is None else rate_per_h
    return spot_risk.overhead(instances, rate, interval_h=a.checkpoint_interval_h, write_h=a.checkpoint_write_h,
                              restart_h=a.restart_h)


def finish_chance(a: Assumptions, base_hours: float, instances: int, rate_per_h: float, deadline_h: float) -> float:
    """The chance a spot job of `base_hours` (at full speed) ends by `deadline_h`: it runs base × (1 + write /
    interval) hours, interruptions arrive as a Poisson process at instances × rate over that run, and each costs
    half an interval of lost work plus the restart; the slack before the deadline absorbs k of them, so the chance
    is P(N ≤ k) for N ~ Poisson(instances × rate × run)."""
    run = base_hours * (1 + a.checkpoint_write_h / a.checkpoint_interval_h)
    if run > deadline_h:
        return 0.0
    mean = instances * rate_per_h * run
    k = math.floor((deadline_h - run) / (a.checkpoint_interval_h / 2 + a.restart_h))
    if mean <= 0 or k > mean + 12 * math.sqrt(mean) + 50:
        return 1.0
    log_mean = math.log(mean)
    return min(1.0, math.fsum(math.exp(-mean + i * log_mean - math.lgamma(i + 1)) for i in range(k + 1)))


@dataclasses.dataclass(frozen=True)
class CalibrationPoint:
    """A published multi-node scaling figure (SOURCES-plans.txt part D) and the configuration `scaling` is asked
    about to compare with it: the ratio of the model's efficiency at `hosts` to that at `base_hosts`."""

    name: str
    source: str
    published: float
    model: str  # the workload the model is run for (`parse_workload`'s words)
    gpu: str
    gpus_per_host: int
    gbps: float
    base_hosts: int
    hosts: int
    tokens_per_gpu: float  # per step at `base_hosts`
    strong: bool  # the same global batch at both sizes (else the same per GPU)
    note: str


# The published points; `comm_overlap` 0.25 is fitted to D4's GPT-3 pair, `link_efficiency` is D2's measurement.
CALIBRATION = (
    CalibrationPoint("GPT-3 175B, 1,536 → 3,072 H100 (OCI RoCE)", "D4 MLPerf v4.1", 0.81, "train 175B", "H100", 8,
                     3200, 192, 384, 2048, True,
                     "fitted: overlap 0.25; 3,200 Gbps and 2,048 tokens/GPU assumed (not in the source)"),
    CalibrationPoint("GPT-3 175B, 3,584 → 10,752 H100 (Quantum-2 IB)", "D5 MLPerf v3.0/v3.1", 0.93, "train 175B",
                     "H100", 8, 3200, 448, 1344, 2048, False,
                     "weak scaling; the rounds also differ in software"),
    CalibrationPoint("70B TP4×FSDP, 8 → 40 nodes of 4×H200 (IB)", "D1 KempnerForge", 0.92, "train 70B", "H200", 4,
                     1600, 8, 40, 4096, False, "weak scaling; IB rate not stated (1,600 Gbps assumed)"),
    CalibrationPoint("7B, 1 → 2 nodes of 4×H200 (IB)", "D1 KempnerForge", 0.57, "train 7B", "H200", 4, 1600, 1, 2,
                     4096, False, "not captured: the first node boundary with TP=4 across it; the model is "
                     "optimistic here"),
    CalibrationPoint("Llama-2-70B LoRA, 64 → 512 H100 (OCI RoCE)", "D4 MLPerf v4.1", 0.29, "finetune 70B lora", "H100",
                     8, 3200, 8, 64, 2048, True, "not captured: a fixed-size fine-tune starved of batch per GPU; "
                     "LoRA's gradients are small, so the model sees no cost"),
)


def calibrated(point: CalibrationPoint, gpus: GpuTable) -> float:
    """The model's efficiency ratio for `point` (see `CALIBRATION`)."""
    workload = parse_workload(point.model, gpus)
    spec = gpus.specs[point.gpu]
    link = Link("calibration", point.gpu, point.gbps, "InfiniBand/RoCE", point.source)

    def at(hosts: int) -> float:
        per_gpu = point.tokens_per_gpu * (point.base_hosts / hosts if point.strong else 1)
        a = dataclasses.replace(workload.assumptions,
                                global_batch_tokens=per_gpu * hosts * point.gpus_per_host)
        return scaling(dataclasses.replace(workload, assumptions=a), spec, point.gpus_per_host, hosts,
                       link).efficiency

    return at(point.hosts) / at(point.base_hosts)
