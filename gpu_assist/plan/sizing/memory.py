"""How much GPU memory a workload needs, part by part, and how many GPUs hold it. Pure.

A named model (`models.csv`) gives its real shape: its layers and hidden size, and its KV cache per token by its
attention kind; a bare size (`70B`) is a dense transformer of that many parameters with d_model = 128 × layers
and params = 12 × layers × d_model², its KV heads one in `kv_group`. A mixture of experts holds all its
parameters (`params`), whichever few a token runs through.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from ..workload import Workload

GB = 1e9
GIB = 2 ** 30
WEIGHT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
SERVING_OVERHEAD = 0.1
KV_BYTES = 2  # K and V cached in 16 bits
ADAPTED_PER_LAYER = {"all": 18, "attention": 8, "qv": 4}  # × d_model × rank adapter parameters per layer
NF4_DQ_BITS = 4 + 8 / 64 + 32 / (64 * 256)  # NF4 weights + 8-bit block constants + their fp32 constants


class Part(Enum):
    """What a part of the memory holds (the renderers name each)."""

    WEIGHTS = "weights"
    KV_CACHE = "kv_cache"
    RUNTIME = "runtime"
    MODEL_STATES = "model_states"  # weights + gradients + optimizer state
    BUFFERS = "buffers"  # activations + buffers of full training
    BASE_WEIGHTS = "base_weights"  # LoRA/QLoRA's frozen base
    ADAPTERS = "adapters"  # their weights, gradients and optimizer state
    ACTIVATIONS = "activations"  # with gradient checkpointing


@dataclass(frozen=True)
class MemoryEstimate:
    parts: tuple[tuple[Part, float], ...]  # (part, bytes), in the order they are shown
    adapter_params: float = 0.0  # LoRA/QLoRA: the trainable adapter parameters the adapters' part holds

    @property
    def total_bytes(self) -> float:
        return sum(size for _, size in self.parts)

    def part(self, part: Part) -> float:
        """The bytes of `part` (0 when this workload has none)."""
        return sum(size for name, size in self.parts if name is part)


def memory_needed(workload: Workload) -> MemoryEstimate:
    a = workload.assumptions
    params = workload.params
    if workload.kind == "serve":
        weights = params * WEIGHT_BYTES[workload.precision]
        kv = workload.users * a.context_tokens * kv_bytes_per_token(workload)
        return MemoryEstimate(((Part.WEIGHTS, weights), (Part.KV_CACHE, kv),
                               (Part.RUNTIME, SERVING_OVERHEAD * (weights + kv))))
    if workload.kind == "finetune" and workload.method in ("lora", "qlora"):
        return adapter_memory(workload)
    states = 16 * params
    return MemoryEstimate(((Part.MODEL_STATES, states), (Part.BUFFERS, a.runtime_overhead * states)))


def adapter_memory(workload: Workload) -> MemoryEstimate:
    """LoRA / QLoRA memory as the papers describe it (see `recommend`'s module docstring), part by part."""
    a = workload.assumptions
    layers, d_model = model_shape(workload)
    if workload.method == "qlora":
        embeddings = min(workload.params, 2 * a.vocab * d_model)
        base, per_adapter = (workload.params - embeddings) * NF4_DQ_BITS / 8 + embeddings * 2, 12
    else:
        base, per_adapter = workload.params * WEIGHT_BYTES[workload.precision], 16
    adapters = adapter_params(workload)
    activations = a.batch_tokens * d_model * (2 * layers + 34)
    return MemoryEstimate(((Part.BASE_WEIGHTS, base), (Part.ADAPTERS, adapters * per_adapter),
                           (Part.ACTIVATIONS, activations)), adapter_params=adapters)


def adapter_params(workload: Workload) -> float:
    """LoRA's trainable parameters: r × (d_in + d_out) per adapted matrix, `lora_targets`' matrices per layer."""
    layers, d_model = model_shape(workload)
    a = workload.assumptions
    return ADAPTED_PER_LAYER[a.lora_targets] * d_model * a.lora_rank * layers


def transformer_shape(params: float) -> tuple[float, float]:
    """(layers, d_model) of a dense transformer with d_model = 128 × layers and params = 12 × layers × d²."""
    layers = (params / (12 * 128 ** 2)) ** (1 / 3)
    return layers, 128 * layers


def model_shape(workload: Workload) -> tuple[float, float]:
    """(layers, d_model): the named model's published ones, else a dense transformer's of its size."""
    if workload.model is not None:
        return float(workload.model.layers), float(workload.model.hidden_size)
    return transformer_shape(workload.params)


def kv_bytes_per_token(workload: Workload) -> float:
    """KV cache per token of context: the named model's by its attention kind (`ModelSpec.kv_bytes_per_token`),
    else a dense transformer's of its size with one KV head per `kv_group` attention heads."""
    if workload.model is not None:
        return workload.model.kv_bytes_per_token(workload.assumptions.context_tokens, KV_BYTES)
    layers, d_model = transformer_shape(workload.params)
    return 2 * layers * d_model * KV_BYTES / workload.assumptions.kv_group


def min_gpus(memory: MemoryEstimate, gpu_memory_gib: float, usable: float) -> int:
    """The fewest GPUs of `gpu_memory_gib` each whose usable memory holds the job."""
    return max(1, math.ceil(memory.total_bytes / (gpu_memory_gib * GIB * usable)))


def usable_gb(gpus: int, gpu_memory_gib: float, usable: float) -> float:
    """What `gpus` GPUs of `gpu_memory_gib` each hold for the job, in GB (the unit memory needs are given in)."""
    return gpus * gpu_memory_gib * GIB * usable / GB
