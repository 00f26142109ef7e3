"""How much GPU a workload needs: memory, compute, time on a GPU, and a serving layout. Pure.

The formulas are `recommend`'s module docstring (what `recommend … explain` prints); each constant is an
`Assumptions` field, printed with every answer by `describe_assumptions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .facts import Fact, GroupSpansHosts, TooManyToHold, TooManyToServe
from .gpus import GpuSpec, GpuTable
from .amounts import format_count
from .workload import Assumptions, Workload

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


def training_hours(flops: float, gpus: int, spec: GpuSpec, workload: Workload, hosts: int) -> float | None:
    tflops = spec.dense_tflops(workload.precision)
    if tflops is None:
        return None
    efficiency = workload.assumptions.multi_host_efficiency if hosts > 1 else 1.0
    return flops / (gpus * tflops * 1e12 * workload.assumptions.mfu * efficiency) / 3600


def effective_tflops(spec: GpuSpec, gpus: int, hosts: int, workload: Workload) -> float | None:
    tflops = spec.dense_tflops(workload.precision)
    if tflops is None:
        return None
    efficiency = workload.assumptions.multi_host_efficiency if hosts > 1 else 1.0
    return gpus * tflops * workload.assumptions.mfu * efficiency


def spot_overhead(a: Assumptions) -> float:
    """Expected extra time per unit of work on spot with checkpoints."""
    return a.checkpoint_write_h / a.checkpoint_interval_h + \
        a.interruption_rate_per_h * (a.checkpoint_interval_h / 2 + a.restart_h)


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
        lines.append(f"MFU {a.mfu:g}; multi-host scaling efficiency {a.multi_host_efficiency:g}")
        if workload.may_interrupt:
            lines.append(f"spot: {a.interruption_rate_per_h:g} interruptions/h, checkpoint every "
                         f"{a.checkpoint_interval_h * 60:g} min taking {a.checkpoint_write_h * 60:g} min, restart "
                         f"{a.restart_h * 60:g} min → +{spot_overhead(a):.0%} time")
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


def size_offers(workload: Workload, spec: GpuSpec, host_gpus: list[int], gpu_memory_gib: list[float],
                memory: MemoryEstimate, flops: float | None) -> tuple[str, OfferSizes | None]:
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
        return _serving_sizes(workload, spec, host_gpus, gpu_memory_gib, memory, line)
    tflops = spec.dense_tflops(workload.precision)
    if tflops is None:
        return f"{spec.name}: {missing_throughput(spec, workload.precision)}", None
    per_gpu = training_hours(flops, 1, spec, workload, 1) if flops else None
    sizes = _training_sizes(workload, spec, host_gpus, gpu_memory_gib, memory, flops, per_gpu)
    if per_gpu is not None:
        line += f"; {per_gpu:,.0f} GPU-hours at {tflops:g} TFLOPS × MFU {a.mfu:g}"
        compute = spec.compute_precision(workload.precision)
        if compute != workload.precision:
            line += f" ({workload.precision} computes in {compute} on {spec.name})"
    return line, sizes


def _serving_sizes(workload: Workload, spec: GpuSpec, host_gpus: list[int], gpu_memory_gib: list[float],
                   memory: MemoryEstimate, line: str) -> tuple[str, OfferSizes]:
    """Each offer's instances for the serving layout; a tensor-parallel group wider than the offer's host is
    refused (tensor parallelism across hosts is too slow to serve from)."""
    layouts: dict[tuple[int, float], tuple[int, int, list[str]]] = {}
    instances: list[int] = []
    gpus: list[int] = []
    refusals: list[Fact | None] = []
    notes: list[str] = []
    for g, memory_gib in zip(host_gpus, gpu_memory_gib):
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
        else:
            refusals.append(None)
    count = len(host_gpus)
    sizes = OfferSizes(instances, gpus, [math.ceil(workload.serve_hours * 3600)] * count,
                       [workload.serve_hours] * count, refusals)
    return line + "; " + notes[0], sizes


def _training_sizes(workload: Workload, spec: GpuSpec, host_gpus: list[int], gpu_memory_gib: list[float],
                    memory: MemoryEstimate, flops: float | None, per_gpu: float | None) -> OfferSizes:
    """The smallest multiple of each instance that fits the memory and meets the deadline (`per_gpu`: the job's
    GPU-hours), sized for the slowest strategy offered, so that spot with its checkpoint overhead meets it too.
    At most `max_instances` instances: more for the deadline are cut to it (the plan then says it is late); an
    offer that needs more only to hold the job is refused, as fewer instances could not run it at all."""
    a = workload.assumptions
    slowdown = 1 + spot_overhead(a) if workload.may_interrupt else 1
    sizes = OfferSizes([], [], [], [], [])
    needs: dict[float, int] = {}  # GPUs needed per memory size: offers share a few
    for g, memory_gib in zip(host_gpus, gpu_memory_gib):
        need = needs.get(memory_gib) or needs.setdefault(memory_gib, min_gpus(memory, memory_gib, a.usable_memory))
        holding = math.ceil(need / g)
        count = holding
        if per_gpu is not None and workload.deadline_s:
            deadline_h = workload.deadline_s / 3600 / slowdown
            single = math.ceil(per_gpu / (deadline_h * g))
            count = max(count, single if single <= 1 else
                        math.ceil(per_gpu / (deadline_h * g * a.multi_host_efficiency)))
        refusal: Fact | None = None
        if holding > a.max_instances:
            refusal = TooManyToHold(holding, g, spec.name, need, memory.total_bytes / GB, a.max_instances)
        else:
            count = min(count, a.max_instances)
        hours = training_hours(flops, count * g, spec, workload, count) if flops else None
        sizes.instances.append(count)
        sizes.gpus.append(count * g)
        sizes.job_hours.append(hours)
        sizes.duration_s.append(math.ceil((hours if hours else 1) * 3600))
        sizes.refusals.append(refusal)
    return sizes
