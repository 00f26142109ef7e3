"""How much GPU a workload needs: memory (`memory.py`), compute and time (`compute.py`), and its layout on each
offer (`layout.py`), stated as facts (`facts.py`) whose words are the renderers'. Pure.

The formulas are `recommend`'s module docstring (what `recommend … explain` prints); each constant is an
`Assumptions` field, and every answer lists the assumptions it rests on (`sizing_basis`).
"""

from .compute import (
    CALIBRATION,
    calibrated,
    effective_tflops,
    finish_chance,
    missing_throughput,
    scaling,
    spot_overhead,
    training_flops,
    training_hours,
)
from .facts import GpuSizing, MissingRate, NotPlanned, sizing_basis
from .layout import HostFacts, OfferSizes, block_size, size_offers
from .memory import GB, GIB, MemoryEstimate, Part, kv_bytes_per_token, memory_needed, min_gpus, usable_gb

__all__ = ["CALIBRATION", "GB", "GIB", "GpuSizing", "HostFacts", "MemoryEstimate", "MissingRate", "NotPlanned",
           "OfferSizes", "Part", "block_size", "calibrated", "effective_tflops", "finish_chance",
           "kv_bytes_per_token", "memory_needed", "min_gpus", "missing_throughput", "scaling", "size_offers",
           "sizing_basis", "spot_overhead", "training_flops", "training_hours", "usable_gb"]
