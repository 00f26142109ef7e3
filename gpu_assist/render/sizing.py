"""The words of sizing's facts (`plan/sizing/facts.py`): each GPU type's reasoning line, the GPUs not planned and
every assumption line of a recommendation, registered on `notes.words` so that every medium says them alike."""

from __future__ import annotations

import math

from ..plan.sizing import facts as s
from ..plan.sizing.compute import active_params
from ..plan.sizing.memory import SERVING_OVERHEAD, MemoryEstimate, Part, kv_bytes_per_token
from ..plan.workload import Workload
from ..pricing.amounts import format_count
from .notes import words

GB = 1e9
_ATTENTION = {"mha": "multi-head", "mqa": "multi-query", "gqa": "grouped-query", "mla": "multi-head latent"}


def part_name(part: Part, workload: Workload, memory: MemoryEstimate) -> str:
    """What a part of the memory holds, in words."""
    a = workload.assumptions
    if part is Part.BASE_WEIGHTS:
        return "base weights (NF4 + double quant; embeddings bf16)" if workload.method == "qlora" else \
            f"base weights ({workload.precision}, frozen)"
    if part is Part.ADAPTERS:
        optimizer = "paged AdamW" if workload.method == "qlora" else "AdamW"
        return f"adapters r={a.lora_rank} on {a.lora_targets} ({memory.adapter_params / 1e6:,.0f}M params: " \
               f"weights, gradients, {optimizer})"
    if part is Part.ACTIVATIONS:
        return f"activations (gradient checkpointing, {a.batch_tokens:,} tokens)"
    return {Part.WEIGHTS: "weights", Part.KV_CACHE: "KV cache", Part.RUNTIME: "runtime",
            Part.MODEL_STATES: "weights + gradients + optimizer state",
            Part.BUFFERS: "activations + buffers"}[part]


def memory_parts(workload: Workload, memory: MemoryEstimate) -> dict[str, float]:
    """Each part's bytes under its name."""
    return {part_name(part, workload, memory): size for part, size in memory.parts}


def memory_needed_line(workload: Workload, memory: MemoryEstimate) -> str:
    """The memory the job needs, and for a named model whose shape it comes from (the short answer's footer)."""
    line = f"{memory.total_bytes / GB:,.1f} GB of GPU memory needed"
    model = workload.model
    if model is None:
        return line
    if workload.kind == "serve":
        kv = kv_bytes_per_token(workload) / 1e3
        return line + f" ({model.name}'s {_ATTENTION[model.attention]} attention: {kv:,.0f} KB of KV cache a token)"
    return line + f" ({model.name}: {format_count(model.params)} parameters held, " \
                  f"{format_count(model.active_params)} computing)" if model.mixture_of_experts else line


@words.register(s.MissingRate)
def _missing_rate(fact: s.MissingRate) -> str:
    if fact.others:
        return f"not planned at {fact.precision} (gpus.csv gives no {fact.compute_precision} rate, only " \
               f"{', '.join(fact.others)}: ask for {fact.others[0]})"
    return f"no dense {fact.precision} TFLOPS known (gpus.csv): not planned for training"


@words.register(s.ServingLayout)
def _serving_layout(fact: s.ServingLayout) -> str:
    if fact.tokens_per_s is None:
        return "decode speed unknown (no bandwidth in gpus.csv)"
    return f"{fact.tp:,} GPU(s) per replica × {fact.replicas:,} replica(s), {fact.users:,} users each: " \
           f"≈{fact.tokens_per_s:,.0f} tokens/s per user, ≈{fact.users * fact.replicas * fact.tokens_per_s:,.0f} " \
           "tokens/s in all"


@words.register(s.GpuSizing)
def _gpu_sizing(fact: s.GpuSizing) -> str:
    if fact.missing is not None:
        return f"{fact.gpu}: {words(fact.missing)}"
    line = f"{fact.gpu} ({fact.smallest_gib:g} GiB): {fact.needed_gb:,.0f} GB needs ≥ {fact.need:,} " \
           f"GPU{'s' if fact.need > 1 else ''}"
    if fact.need_largest != fact.need:
        line += f" (≥ {fact.need_largest:,} of the offers with {fact.largest_gib:g} GiB)"
    if fact.need > fact.biggest_host:
        line += f"; one {fact.biggest_host}×{fact.gpu} host holds {fact.host_usable_gb:,.0f} GB usable < " \
                f"{fact.needed_gb:,.0f} GB needed → {math.ceil(fact.need / fact.biggest_host):,}+ hosts"
    if fact.layout is not None:
        return f"{line}; {words(fact.layout)}"
    if fact.gpu_hours is not None:
        line += f"; {fact.gpu_hours:,.0f} GPU-hours at {fact.tflops:g} TFLOPS × MFU {fact.mfu:g}"
        if fact.compute_precision != fact.precision:
            line += f" ({fact.precision} computes in {fact.compute_precision} on {fact.gpu})"
    return line


@words.register(s.NotPlanned)
def _not_planned(fact: s.NotPlanned) -> str:
    return f"{', '.join(fact.gpus)}: {words(fact.why)}"


@words.register(s.MemoryBasis)
def _memory(fact: s.MemoryBasis) -> str:
    memory = fact.memory
    items = ", ".join(f"{name} {size / GB:,.1f} GB" for name, size in memory_parts(fact.workload, memory).items())
    return f"memory: {memory.total_bytes / GB:,.1f} GB ({items})"


@words.register(s.DeadlineBasis)
def _deadline(fact: s.DeadlineBasis) -> str:
    if fact.days is None:
        return "deadline: none (the cheapest plans may take long)"
    return f"deadline: {fact.days:g} days (none given; deadline=none lifts it)"


@words.register(s.ServingBasis)
def _serving(fact: s.ServingBasis) -> str:
    workload, a = fact.workload, fact.workload.assumptions
    served = f"serving {workload.users:,} users × {a.context_tokens:,} tokens of context; "
    kv = f"{fact.kv_bytes_per_token / 1e3:,.0f} KB/token"
    model = workload.model
    if model is None:
        return served + f"model shape ≈{fact.layers:.0f} layers × d_model {fact.d_model:,.0f}, KV group " \
                        f"{a.kv_group}: {kv}"
    if model.attention == "mla":
        cache = f"a {model.kv_latent:,}-value latent per layer"
    else:
        cache = f"{model.kv_heads:,} KV heads × {model.head_dim:,}"
        if model.window_tokens:
            cache += f", {model.windowed_layers:,} layers windowed to {model.window_tokens:,} tokens"
    moe = f", {format_count(model.active_params)} of {format_count(model.params)} active" \
        if model.mixture_of_experts else ""
    config = model.config_url.removeprefix("https://huggingface.co/").removesuffix("/blob/main/config.json")
    return served + f"{model.name} ({model.layers:,} layers × d_model {model.hidden_size:,}{moe}; " \
                    f"{_ATTENTION[model.attention]} attention, {cache}; config: {config}): {kv}"


@words.register(s.DecodeBasis)
def _decode(fact: s.DecodeBasis) -> str:
    workload, a = fact.workload, fact.workload.assumptions
    return f"decode at {a.bandwidth_efficiency:.0%} of peak bandwidth, target {a.target_tokens_per_s:g} tokens/s " \
           f"per user; priced for {workload.serve_hours:g} h"


@words.register(s.ComputeBasis)
def _compute(fact: s.ComputeBasis) -> str:
    workload = fact.workload
    if not fact.flops:
        return "compute: unknown — give tokens=… or gpu_hours=…@GPU for times; plans are priced per hour"
    active = " active" if workload.model is not None and workload.model.mixture_of_experts else ""
    source = f"6 × {format_count(active_params(workload))}{active} × {format_count(workload.tokens)} tokens" \
        if workload.tokens else f"{workload.reference_gpu_hours:g} GPU-h on {workload.reference_gpu}"
    return f"compute: {fact.flops:.3g} FLOPs ({source})"


@words.register(s.ScalingBasis)
def _scaling(fact: s.ScalingBasis) -> str:
    workload, a = fact.workload, fact.workload.assumptions
    if "multi_host_efficiency" in workload.overridden:
        return f"MFU {a.mfu:g}; multi-host scaling efficiency {a.multi_host_efficiency:g} (yours)"
    return f"MFU {a.mfu:g}; multi-host scaling from each plan's network: ring all-reduce of 16-bit gradients per " \
           f"{format_count(a.global_batch_tokens)}-token step at {a.link_efficiency:g} of the link, " \
           f"{a.comm_overlap:.0%} overlapped with compute ({a.multi_host_efficiency:g} where the bandwidth is " \
           "unknown); no pretraining or full fine-tune over more than 2 hosts without EFA, InfiniBand, RoCE or " \
           "GPUDirect at ≥ 100 Gbps"


@words.register(s.SpotBasis)
def _spot(fact: s.SpotBasis) -> str:
    workload, a = fact.workload, fact.workload.assumptions
    rate = f"{a.interruption_rate_per_h:g}/h per instance (yours)" \
        if "interruption_rate_per_h" in workload.overridden else \
        "AWS Spot Advisor band per region and type (its upper bound a month), else " \
        f"{a.interruption_rate_per_h:g}/h per instance"
    return f"spot: interruptions {rate}, × instances (a synchronous job restarts when any is taken back); " \
           f"checkpoint every {a.checkpoint_interval_h * 60:g} min taking {a.checkpoint_write_h * 60:g} min, " \
           f"restart {a.restart_h * 60:g} min; plans expected over +{a.spot_overhead_limit:.0%} rank behind the rest"


@words.register(s.QuotaBasis)
def _quota(_fact: s.QuotaBasis) -> str:
    return "quotas: AWS counts vCPUs per family (L-417A185B on-demand P, L-DB2E81BA on-demand G and VT, " \
           "L-7212CCBC P spot, L-3819A6DF G and VT spot); a new account starts at 0 vCPUs of P and G spot and may " \
           "start at 0 on demand (SOURCES-plans.txt part C)"


@words.register(s.UsableBasis)
def _usable(fact: s.UsableBasis) -> str:
    workload, a = fact.workload, fact.workload.assumptions
    if workload.kind == "finetune" and workload.method in ("lora", "qlora"):
        return f"usable GPU memory {a.usable_memory:.0%}; LoRA rank {a.lora_rank} on {a.lora_targets}, " \
               f"{a.batch_tokens:,} tokens per micro-batch"
    overhead = SERVING_OVERHEAD if workload.kind == "serve" else a.runtime_overhead
    return f"usable GPU memory {a.usable_memory:.0%}; runtime overhead {overhead:.0%}"
