"""How much GPU a workload needs: memory, compute, time on a GPU, and a serving layout. Pure.

The formulas are `recommend`'s module docstring (what `recommend … explain` prints); each constant is an
`Assumptions` field, printed with every answer by `describe_assumptions`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from ..catalog.fabric import Link
from ..catalog.gpus import GpuSpec, GpuTable
from ..facts import Fact, GroupSpansHosts, MarketplaceHosts, NoFabric, Scaling, TooManyToHold, TooManyToServe
from ..pricing import spot_risk
from ..pricing.amounts import format_count
from .workload import Assumptions, Workload, parse_workload

GB = 1e9
GIB = 2 ** 30
_WEIGHT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
SERVING_OVERHEAD = 0.1


@dataclass(frozen=True)
class MemoryEstimate:
    parts: dict[str, float]  # name → bytes

    @property
    def total_bytes(self) -> float:
        return sum(self.parts.values())

    def describe(self) -> str:
        items = ", ".join(f"{name} {value / GB:,.1f} GB" for name, value in self.parts.items())
        return f"{self.total_bytes / GB:,.1f} GB ({items})"


def memory_needed(workload: Workload) -> MemoryEstimate:
    a = workload.assumptions
    params = workload.params
    if workload.kind == "serve":
        weights = params * _WEIGHT_BYTES[workload.precision]
        kv = workload.users * a.context_tokens * kv_bytes_per_token(params, a.kv_group)
        return MemoryEstimate({"weights": weights, "KV cache": kv, "runtime": SERVING_OVERHEAD * (weights + kv)})
    if workload.kind == "finetune" and workload.method in ("lora", "qlora"):
        return adapter_memory(workload)
    states = 16 * params
    return MemoryEstimate({"weights + gradients + optimizer state": states,
                           "activations + buffers": a.runtime_overhead * states})


ADAPTED_PER_LAYER = {"all": 18, "attention": 8, "qv": 4}  # × d_model × rank adapter parameters per layer
NF4_DQ_BITS = 4 + 8 / 64 + 32 / (64 * 256)  # NF4 weights + 8-bit block constants + their fp32 constants


def adapter_memory(workload: Workload) -> MemoryEstimate:
    """LoRA / QLoRA memory as the papers describe it (see `recommend`'s module docstring), part by part."""
    a = workload.assumptions
    layers, d_model = transformer_shape(workload.params)
    if workload.method == "qlora":
        embeddings = min(workload.params, 2 * a.vocab * d_model)
        base = (workload.params - embeddings) * NF4_DQ_BITS / 8 + embeddings * 2
        base_name, per_adapter = "base weights (NF4 + double quant; embeddings bf16)", 12
    else:
        base = workload.params * _WEIGHT_BYTES[workload.precision]
        base_name, per_adapter = f"base weights ({workload.precision}, frozen)", 16
    adapters = ADAPTED_PER_LAYER[a.lora_targets] * d_model * a.lora_rank * layers
    optimizer = "paged AdamW" if workload.method == "qlora" else "AdamW"
    activations = a.batch_tokens * d_model * (2 * layers + 34)
    return MemoryEstimate({
        base_name: base,
        f"adapters r={a.lora_rank} on {a.lora_targets} ({adapters / 1e6:,.0f}M params: weights, gradients, "
        f"{optimizer})": adapters * per_adapter,
        f"activations (gradient checkpointing, {a.batch_tokens:,} tokens)": activations})


def transformer_shape(params: float) -> tuple[float, float]:
    """(layers, d_model) of a dense transformer with d_model = 128 × layers and params = 12 × layers × d²."""
    layers = (params / (12 * 128 ** 2)) ** (1 / 3)
    return layers, 128 * layers


def kv_bytes_per_token(params: float, kv_group: int) -> float:
    layers, d_model = transformer_shape(params)
    return 2 * layers * d_model * 2 / kv_group


def training_flops(workload: Workload, gpus: GpuTable) -> float | None:
    """Total FLOPs of the job, None when neither tokens nor reference GPU-hours are given."""
    if workload.tokens:
        factor = 4 if workload.kind == "finetune" and workload.method in ("lora", "qlora") else 6
        return factor * workload.params * workload.tokens
    if workload.reference_gpu_hours and workload.reference_gpu:
        reference = gpus.specs[workload.reference_gpu]
        tflops = reference.dense_tflops(workload.precision)
        if tflops is None:
            return None
        return workload.reference_gpu_hours * 3600 * tflops * 1e12 * workload.assumptions.mfu
    return None


def min_gpus(memory: MemoryEstimate, gpu_memory_gib: float, usable: float) -> int:
    """The fewest GPUs of `gpu_memory_gib` each whose usable memory holds the job."""
    return max(1, math.ceil(memory.total_bytes / (gpu_memory_gib * GIB * usable)))


def usable_gb(gpus: int, gpu_memory_gib: float, usable: float) -> float:
    """What `gpus` GPUs of `gpu_memory_gib` each hold for the job, in GB (the unit memory needs are given in)."""
    return gpus * gpu_memory_gib * GIB * usable / GB


def missing_throughput(spec: GpuSpec, precision: str) -> str | None:
    """Why a job at `precision` cannot be timed on `spec` (one rule for every GPU: a plan at a precision runs at
    that precision's rate, none other), without the GPU's name so that GPUs missing the same rate share it;
    None when gpus.csv gives the rate."""
    if spec.dense_tflops(precision) is not None:
        return None
    others = [p for p in ("bf16", "fp16", "fp8") if spec.dense_tflops(p) is not None]
    if others:
        return f"not planned at {precision} (gpus.csv gives no {spec.compute_precision(precision)} rate, only " \
               f"{', '.join(others)}: ask for {others[0]})"
    return f"no dense {precision} TFLOPS known (gpus.csv): not planned for training"


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
        layers, d_model = transformer_shape(workload.params)
        return ADAPTED_PER_LAYER[workload.assumptions.lora_targets] * d_model * workload.assumptions.lora_rank * layers
    return workload.params


GRADIENT_BYTES = 2  # gradients are all-reduced in 16 bits (bf16/fp16 mixed precision; fp8 recipes too)


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
    (SOURCES-plans.txt D2); `sizing.CALIBRATION` holds the published points it is checked against.
    The user's `multi_host_efficiency=` wins; without a bandwidth it is the assumption (basis "assumed")."""
    a = workload.assumptions
    gbps = link.gbps if link else None
    if hosts <= 1:
        return Scaling(hosts, gbps, 0.0, 0.0, a.comm_overlap, 1.0, "one host")
    tflops = spec.dense_tflops(workload.precision) or 0.0
    factor = 4 if workload.kind == "finetune" and workload.method in ("lora", "qlora") else 6
    gpus = hosts * gpus_per_host
    compute_s = factor * workload.params * (a.global_batch_tokens / gpus) / (tflops * 1e12 * a.mfu) if tflops else 0.0
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


class HostFacts(NamedTuple):
    """What sizing knows of one offer besides its GPUs: its network, its spot rate, how many hosts it has."""

    link: Link | None
    spot_rate: float | None  # per instance-hour; None: no spot price to plan
    hosts_listed: int | None  # a marketplace listing's machines; None: a cloud's, no limit

    @property
    def trains(self) -> bool:
        return self.link is not None and self.link.trains


def _serving_layout(memory: MemoryEstimate, spec: GpuSpec, gpu_memory_gib: float, workload: Workload,
                    host_gpus: int) -> tuple[int, int, list[str]]:
    """(GPUs per replica, replicas, reasons): the fewest replicas whose power-of-two TP group fits inside one host
    (more replicas, each holding the KV cache of fewer users, rather than a group spanning hosts) and decodes at
    the target speed. A group wider than a host is left only when one user's replica needs it (the offer is then
    refused)."""
    a = workload.assumptions
    weights, kv_per_user = memory.parts["weights"], memory.parts["KV cache"] / workload.users
    usable = gpu_memory_gib * GIB * a.usable_memory

    def group(users: int) -> int:
        need = (weights + kv_per_user * users) * (1 + SERVING_OVERHEAD)
        return 1 << max(0, math.ceil(math.log2(max(1.0, need / usable))))

    # When not even one user's group fits a host, the offer is refused whatever the replicas: sized as before.
    host_limit = host_gpus if group(1) <= host_gpus else math.inf
    replicas = 1
    while True:
        # Replica counts giving the same users per replica give the same layout: only the first of each is tried
        # (about 2√users of them, not one per user).
        users = math.ceil(workload.users / replicas)
        tp = group(users)
        if tp <= host_limit:
            if not spec.memory_bandwidth_gbs:
                return tp, replicas, ["decode speed unknown (no bandwidth in gpus.csv)"]
            step = (weights + kv_per_user * users) / (tp * spec.memory_bandwidth_gbs * 1e9 * a.bandwidth_efficiency)
            if 1 / step >= a.target_tokens_per_s or users == 1:
                reasons = [f"{tp:,} GPU(s) per replica × {replicas:,} replica(s), {users:,} users each: "
                           f"≈{1 / step:,.0f} tokens/s per user, ≈{users * replicas / step:,.0f} tokens/s in all"]
                if tp > host_gpus:
                    reasons.append(f"a replica needs {tp:,} GPUs but a host has {host_gpus}")
                return tp, replicas, reasons
        replicas = math.ceil(workload.users / (users - 1))  # the fewest replicas with fewer users each


def describe_assumptions(workload: Workload, memory: MemoryEstimate, flops: float | None) -> list[str]:
    a = workload.assumptions
    lines = [f"memory: {memory.describe()}"]
    if workload.kind != "serve":
        if workload.deadline_assumed and workload.deadline_s is not None:
            lines.append(f"deadline: {workload.deadline_s / 86400:g} days (none given; deadline=none lifts it)")
        elif workload.deadline_s is None:
            lines.append("deadline: none (the cheapest plans may take long)")
    if workload.kind == "serve":
        layers, d_model = transformer_shape(workload.params)
        lines.append(f"serving {workload.users:,} users × {a.context_tokens:,} tokens of context; model shape "
                     f"≈{layers:.0f} layers × d_model {d_model:,.0f}, KV group {a.kv_group}: "
                     f"{kv_bytes_per_token(workload.params, a.kv_group) / 1e3:,.0f} KB/token")
        lines.append(f"decode at {a.bandwidth_efficiency:.0%} of peak bandwidth, target {a.target_tokens_per_s:g} "
                     f"tokens/s per user; priced for {workload.serve_hours:g} h")
    else:
        if flops:
            source = f"6 × {format_count(workload.params)} × {format_count(workload.tokens)} tokens" \
                if workload.tokens else f"{workload.reference_gpu_hours:g} GPU-h on {workload.reference_gpu}"
            lines.append(f"compute: {flops:.3g} FLOPs ({source})")
        else:
            lines.append("compute: unknown — give tokens=… or gpu_hours=…@GPU for times; plans are priced per hour")
        lines.append(f"MFU {a.mfu:g}; " + (
            f"multi-host scaling efficiency {a.multi_host_efficiency:g} (yours)"
            if "multi_host_efficiency" in workload.overridden else
            f"multi-host scaling from each plan's network: ring all-reduce of 16-bit gradients per "
            f"{format_count(a.global_batch_tokens)}-token step at {a.link_efficiency:g} of the link, "
            f"{a.comm_overlap:.0%} overlapped with compute ({a.multi_host_efficiency:g} where the bandwidth is "
            "unknown); no pretraining or full fine-tune over more than 2 hosts without EFA, InfiniBand, RoCE or "
            "GPUDirect at ≥ 100 Gbps"))
        if workload.may_interrupt:
            rate = f"{a.interruption_rate_per_h:g}/h per instance (yours)" \
                if "interruption_rate_per_h" in workload.overridden else \
                "AWS Spot Advisor band per region and type (its upper bound a month), else " \
                f"{a.interruption_rate_per_h:g}/h per instance"
            lines.append(f"spot: interruptions {rate}, × instances (a synchronous job restarts when any is taken "
                         f"back); checkpoint every {a.checkpoint_interval_h * 60:g} min taking "
                         f"{a.checkpoint_write_h * 60:g} min, restart {a.restart_h * 60:g} min; plans expected over "
                         f"+{a.spot_overhead_limit:.0%} rank behind the rest")
        lines.append("quotas: AWS counts vCPUs per family (L-417A185B on-demand P, L-DB2E81BA on-demand G and "
                         "VT, L-7212CCBC P spot, L-3819A6DF G and VT spot); a new account starts at 0 vCPUs of P "
                         "and G spot and may start at 0 on demand (SOURCES-plans.txt part C)")
    if workload.kind == "finetune" and workload.method in ("lora", "qlora"):
        lines.append(f"usable GPU memory {a.usable_memory:.0%}; LoRA rank {a.lora_rank} on {a.lora_targets}, "
                     f"{a.batch_tokens:,} tokens per micro-batch")
    else:
        overhead = SERVING_OVERHEAD if workload.kind == "serve" else a.runtime_overhead
        lines.append(f"usable GPU memory {a.usable_memory:.0%}; runtime overhead {overhead:.0%}")
    return lines


@dataclass(frozen=True)
class OfferSizes:
    """One GPU type's offers sized for a workload, per offer in order: what a plan on each buys and for how long."""

    instances: list[int]
    gpus: list[int]  # GPUs the plan uses (serving: tensor-parallel group × replicas)
    duration_s: list[int]  # priced for
    job_hours: list[float | None]  # at full speed; None when the compute is unknown
    refusals: list[Fact | None]  # why a plan on this offer cannot run the job (None: it can)
    scaling: list[Scaling]  # training: how its hosts scale (serving: one host's, 1.0)


def size_offers(workload: Workload, spec: GpuSpec, host_gpus: list[int], gpu_memory_gib: list[float],
                memory: MemoryEstimate, flops: float | None,
                hosts: list[HostFacts] | None = None) -> tuple[str, OfferSizes | None]:
    """A reasoning line for one GPU type, and how many of each offer's instances a plan takes (None: this GPU
    cannot be planned, the line says why). `host_gpus` and `gpu_memory_gib` are each offer's GPUs per instance and
    memory per GPU: an offer that lists less memory than the GPU's datasheet needs more of them."""
    a = workload.assumptions
    smallest, largest = min(gpu_memory_gib), max(gpu_memory_gib)
    need = min_gpus(memory, smallest, a.usable_memory)
    needed_gb = memory.total_bytes / GB
    line = f"{spec.name} ({smallest:g} GiB): {needed_gb:,.0f} GB needs ≥ {need:,} GPU{'s' if need > 1 else ''}"
    if min_gpus(memory, largest, a.usable_memory) != need:
        line += f" (≥ {min_gpus(memory, largest, a.usable_memory):,} of the offers with {largest:g} GiB)"
    biggest = max(host_gpus)
    if need > biggest:
        line += f"; one {biggest}×{spec.name} host holds {usable_gb(biggest, smallest, a.usable_memory):,.0f} GB " \
                f"usable < {needed_gb:,.0f} GB needed → {math.ceil(need / biggest):,}+ hosts"
    if workload.kind == "serve":
        return _serving_sizes(workload, spec, host_gpus, gpu_memory_gib, memory, line,
                              hosts or [HostFacts(None, None, None)] * len(host_gpus))
    tflops = spec.dense_tflops(workload.precision)
    if tflops is None:
        return f"{spec.name}: {missing_throughput(spec, workload.precision)}", None
    per_gpu = training_hours(flops, 1, spec, workload, 1) if flops else None
    sizes = _training_sizes(workload, spec, host_gpus, gpu_memory_gib, memory, flops, per_gpu,
                            hosts or [HostFacts(None, None, None)] * len(host_gpus))
    if per_gpu is not None:
        line += f"; {per_gpu:,.0f} GPU-hours at {tflops:g} TFLOPS × MFU {a.mfu:g}"
        compute = spec.compute_precision(workload.precision)
        if compute != workload.precision:
            line += f" ({workload.precision} computes in {compute} on {spec.name})"
    return line, sizes


def _serving_sizes(workload: Workload, spec: GpuSpec, host_gpus: list[int], gpu_memory_gib: list[float],
                   memory: MemoryEstimate, line: str, hosts: list[HostFacts]) -> tuple[str, OfferSizes]:
    """Each offer's instances for the serving layout; a tensor-parallel group wider than the offer's host is
    refused (tensor parallelism across hosts is too slow to serve from), and so are more replicas' hosts than a
    marketplace listing has."""
    layouts: dict[tuple[int, float], tuple[int, int, list[str]]] = {}
    instances: list[int] = []
    gpus: list[int] = []
    refusals: list[Fact | None] = []
    notes: list[str] = []
    for g, memory_gib, host in zip(host_gpus, gpu_memory_gib, hosts):
        layout = layouts.get((g, memory_gib))
        if layout is None:
            layout = layouts[g, memory_gib] = _serving_layout(memory, spec, memory_gib, workload, g)
        tp, replicas, notes = layout
        total_gpus = tp * replicas
        needed = math.ceil(total_gpus / g) if tp <= g else replicas * math.ceil(tp / g)
        instances.append(needed)
        gpus.append(total_gpus)
        if tp > g:
            refusals.append(GroupSpansHosts(tp, g))
        elif needed > workload.assumptions.max_instances:
            refusals.append(TooManyToServe(needed, g, spec.name, total_gpus, workload.users,
                                           workload.assumptions.max_instances))
        elif host.hosts_listed is not None and needed > host.hosts_listed:
            refusals.append(MarketplaceHosts(needed, host.hosts_listed))
        else:
            refusals.append(None)
    count = len(host_gpus)
    one = Scaling(1, None, 0.0, 0.0, workload.assumptions.comm_overlap, 1.0, "one host")
    sizes = OfferSizes(instances, gpus, [math.ceil(workload.serve_hours * 3600)] * count,
                       [workload.serve_hours] * count, refusals, [one] * count)
    return line + "; " + notes[0], sizes


def _training_sizes(workload: Workload, spec: GpuSpec, host_gpus: list[int], gpu_memory_gib: list[float],
                    memory: MemoryEstimate, flops: float | None, per_gpu: float | None,
                    hosts: list[HostFacts]) -> OfferSizes:
    """The smallest multiple of each instance that fits the memory and meets the deadline (`per_gpu`: the job's
    GPU-hours) at the scaling its network gives (`scaling`), sized for spot with its fleet-scale overhead when the
    offer has a spot price and spot can meet the deadline at all, else for on-demand speed.
    At most `max_instances` instances: more for the deadline are cut to it (the plan then says it is late); an
    offer that needs more only to hold the job is refused, as fewer instances could not run it at all. Refused
    too: pretraining or a full fine-tune over more than two hosts without a training fabric (`NoFabric`), and more
    hosts than a marketplace listing has (`MarketplaceHosts`)."""
    a = workload.assumptions
    sizes = OfferSizes([], [], [], [], [], [])
    needs: dict[float, int] = {}  # GPUs needed per memory size: offers share a few
    sharded = workload.kind == "train" or (workload.kind == "finetune" and workload.method == "full")
    for g, memory_gib, host in zip(host_gpus, gpu_memory_gib, hosts):
        need = needs.get(memory_gib) or needs.setdefault(memory_gib, min_gpus(memory, memory_gib, a.usable_memory))
        holding = math.ceil(need / g)
        count = holding

        def efficiency(n: int, g: int = g, host: HostFacts = host) -> float:
            return scaling(workload, spec, g, n, host.link).efficiency

        if per_gpu is not None and workload.deadline_s:
            deadline_h = workload.deadline_s / 3600
            count = _fewest(holding, per_gpu, g, efficiency, lambda n: 1.0, deadline_h, a.max_instances)
            rate = host.spot_rate
            if rate is not None:
                def slowdown(n: int, rate: float = rate) -> float:
                    return 1 + spot_overhead(a, n, rate)

                spot = _fewest(holding, per_gpu, g, efficiency, slowdown, deadline_h, a.max_instances)
                if per_gpu / (spot * g * efficiency(spot)) * slowdown(spot) <= deadline_h:
                    count = spot
        refusal: Fact | None = None
        if holding > a.max_instances:
            refusal = TooManyToHold(holding, g, spec.name, need, memory.total_bytes / GB, a.max_instances)
        else:
            count = min(count, a.max_instances)
        if refusal is None and host.hosts_listed is not None and count > host.hosts_listed:
            refusal = MarketplaceHosts(count, host.hosts_listed)
        # No pretraining or full fine-tune over more than two hosts without a sourced fabric; a user who sets
        # multi_host_efficiency= vouches for hosts whose network no source states (not for a known slow one).
        vouched = host.link is None and "multi_host_efficiency" in workload.overridden
        if refusal is None and sharded and count > 2 and not host.trains and not vouched:
            link = host.link
            refusal = NoFabric(count, link.fabric if link else "", link.gbps if link else None)
        scaled = scaling(workload, spec, g, count, host.link)
        hours = training_hours(flops, count * g, spec, workload, count, scaled.efficiency) if flops else None
        sizes.instances.append(count)
        sizes.gpus.append(count * g)
        sizes.job_hours.append(hours)
        sizes.duration_s.append(math.ceil((hours if hours else 1) * 3600))
        sizes.refusals.append(refusal)
        sizes.scaling.append(scaled)
    return sizes


def _fewest(start: int, per_gpu: float, g: int, efficiency: Callable[[int], float],
            slowdown: Callable[[int], float], deadline_h: float, cap: int) -> int:
    """The fewest instances from `start` (at most `cap`) whose expected hours meet `deadline_h`: per_gpu / (n × g ×
    efficiency(n)) × slowdown(n); each try jumps to the count the last one's time asks for."""
    n = start
    while n < cap:
        expected = per_gpu / (n * g * efficiency(n)) * slowdown(n)
        if expected <= deadline_h:
            break
        n = min(cap, max(n + 1, math.ceil(n * expected / deadline_h)))
    return n


def block_size(workload: Workload, spec: GpuSpec, g: int, memory_gib: float, flops: float, link: Link | None,
               cap: int) -> tuple[int, float, Scaling] | None:
    """(instances, hours, scaling) of a reserved block of hosts of `g` GPUs: the fewest that hold the job and meet
    its deadline, at most `cap` (the reservation's own limit, not `max_instances`); None when none can (too big,
    no training fabric beyond two hosts, no rate for the precision)."""
    a = workload.assumptions
    per_gpu = training_hours(flops, 1, spec, workload, 1)
    if per_gpu is None:
        return None
    holding = math.ceil(min_gpus(memory_needed(workload), memory_gib, a.usable_memory) / g)
    if holding > cap:
        return None

    def efficiency(n: int) -> float:
        return scaling(workload, spec, g, n, link).efficiency

    n = _fewest(holding, per_gpu, g, efficiency, lambda n: 1.0, workload.deadline_s / 3600, cap) \
        if workload.deadline_s else holding
    sharded = workload.kind == "train" or workload.method == "full"
    if sharded and n > 2 and not (link and link.trains) and not (link is None and "multi_host_efficiency" in
                                                                  workload.overridden):
        return None
    scaled = scaling(workload, spec, g, n, link)
    return n, per_gpu / (n * g * scaled.efficiency), scaled


@dataclass(frozen=True)
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
