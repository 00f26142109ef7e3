"""The whole bill of a spot plan: the checkpoints it writes are stored at its provider, and that is part of its
total. Kept apart from the planning (one call in `recommend`)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from .. import facts
from ..catalog import Catalog
from ..pricing.job_costs import checkpoint_storage
from .plans import Plan
from .sizing import GB, MemoryEstimate, Part
from .workload import Workload

_CHECKPOINTED = ("spot + checkpoints", "spot+on-demand")


def with_checkpoint_storage(plan: Plan, workload: Workload, memory: MemoryEstimate, catalog: Catalog,
                             currency: str) -> Plan:
    """A spot plan that checkpoints with its checkpoint's object storage added to its total (the latest kept for
    the plan's hours); a price no source gives is said (`PartsUnknown`) and adds nothing. A checkpoint holds the
    trainable state: weights and AdamW's two moments in fp32 plus the bf16 weights (14 bytes a parameter), or a
    LoRA's adapters as sized (weights, gradients and optimizer state: an upper bound)."""
    if workload.kind == "serve" or plan.billed_hours is None or plan.total is None or \
            (plan.strategy != _CHECKPOINTED[0] and plan.pricing_model != _CHECKPOINTED[1]):
        return plan
    size_bytes = memory.part(Part.ADAPTERS) or 14 * workload.params
    cost = checkpoint_storage(Decimal(str(round(size_bytes / GB, 3))), catalog.data_prices, provider=plan.provider,
                              region=plan.region, hours=plan.billed_hours, fx=catalog.fx, currency=currency)
    if cost.amount is None:
        return replace(plan, reasons=(*plan.reasons, facts.PartsUnknown((facts.JobItem.CHECKPOINTS,), plan.provider)))
    # Billed for the plan's billed hours, as an hourly rate: total = hourly × billed hours still holds.
    return replace(plan, hourly=plan.hourly + cost.amount / plan.billed_hours, total=plan.total + cost.amount,
                   reasons=(*plan.reasons, cost))
