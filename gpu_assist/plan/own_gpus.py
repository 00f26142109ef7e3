"""The user's own GPUs as plans (`own=2xRTX3090`): marginal cost 0, held to the same memory and precision rules
as the cloud's GPUs. What owning costs is `tco`'s question."""

from __future__ import annotations

from decimal import Decimal

from .. import facts
from ..catalog.gpus import GpuTable
from ..facts import Fact
from .plans import Plan
from .sizing import GB, MemoryEstimate, missing_throughput, training_hours, usable_gb
from .workload import Workload


def own_plans(workload: Workload, gpus: GpuTable, memory: MemoryEstimate, flops: float | None,
               currency: str) -> list[Plan]:
    plans = []
    for name, count in workload.own:
        spec = gpus.specs[name]
        holds = usable_gb(count, spec.memory_gib, workload.assumptions.usable_memory)
        fits = holds * GB >= memory.total_bytes
        hours = training_hours(flops, count, spec, workload, 1) if flops and workload.kind != "serve" else None
        reasons: list[Fact] = [facts.OwnHardware(), facts.Hybrid()]
        if not fits:
            reasons.insert(0, facts.OwnTooSmall(count, name, holds, memory.total_bytes / GB))
        missing = missing_throughput(spec, workload.precision) if workload.kind != "serve" else None
        if missing:  # the same rule as the cloud's GPUs: no plan at a precision the GPU has no rate for
            fits = False
            reasons.insert(0, missing)
        plans.append(Plan(gpu=name, gpu_count=count, instances=1, provider="own", region="", zone="",
                          instance_type=f"{count}x{name}", pricing_model="own", strategy="own GPUs",
                          hours=hours if fits else None, hourly=Decimal(0),
                          total=Decimal(0) if fits and hours is not None else None,
                          billed_hours=Decimal(hours) if fits and hours is not None else None, currency=currency,
                          meets_deadline=None, within_budget=None, verified=True, gpus_per_instance=count,
                          gpu_memory_gib=spec.memory_gib, fits=fits, reasons=tuple(reasons)))
    return plans
