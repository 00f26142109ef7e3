"""A plan, and the facts only plans state: what every module of the planner makes, ranks and renders."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from ..facts import Fact

CAPACITY_BLOCK = "capacity-block"  # a plan's pricing model, like "spot+on-demand": not a catalog price column
# The orders a recommendation can be in: the lowest expected total first (the default), the shortest time, the
# fewest GPUs. Each keeps verified prices ahead of the rest.
PLAN_SORTS = ("cost", "fastest", "fewest-gpus")


@dataclass(frozen=True)
class Plan:
    """One way to run the workload, priced, with why it does or does not fit the constraints."""

    gpu: str
    gpu_count: int
    instances: int
    provider: str
    region: str
    zone: str
    instance_type: str
    pricing_model: str  # a PricingModel, or "spot+on-demand" (a mixed fleet), or "own"
    strategy: str
    hours: float | None  # the job's expected length; None when the compute is unknown (no tokens=, gpu_hours=)
    hourly: Decimal  # for all the plan's instances, per hour (reserved: effective; monthly: per 730 h)
    total: Decimal | None  # for the whole job (serving: its horizon, a month by default); None when `hours` is
    currency: str
    # What `total` bills: `hours` rounded up to the offer's billing unit (whole reserved terms, whole months), so
    # total = hourly × billed_hours; None with `total`.
    billed_hours: Decimal | None
    meets_deadline: bool | None
    within_budget: bool | None
    verified: bool
    gpus_per_instance: int = 1
    gpu_memory_gib: float = 0.0  # per GPU, as the offer lists it (the GPU's datasheet when it does not)
    effective_tflops: float | None = None  # GPUs × peak × MFU × scaling: what the plan's money buys
    pareto: bool = False
    fits: bool = True  # False: this configuration cannot run the job at all (the first reason says why)
    reasons: tuple[Fact, ...] = ()  # why it is what it is (`facts`), the weightiest first

    @property
    def rank_key(self) -> tuple[float, float]:
        """Cheapest first. With no job length known a plan is ranked by the smallest configuration of its GPU
        that fits: fewest GPUs first (one GPU that holds the job beats eight faster ones, and two hosts linked by
        a network), then the cheapest hour."""
        if self.total is None or self.hours is None:
            return (self.gpu_count, float(self.hourly))
        return (float(self.total), self.hours)

    @property
    def feasible(self) -> bool:
        return self.fits and self.meets_deadline is not False and self.within_budget is not False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class NoRate(Fact):
    """gpus.csv gives the GPU no dense rate at `precision`, so no plan times a job on it; `others` are the
    precisions it has a rate for (none: no training rate at all)."""

    precision: str
    others: tuple[str, ...]


class OtherPackings(Fact):
    """The same GPU from the same provider, bought the same way, in other host sizes (vCPUs, memory, GPUs per
    host), folded into the plan that ranks first: each as (instances, instance type, where, hourly, total or
    None, currency)."""

    packings: tuple[tuple[int, str, str, Decimal, Decimal | None, str], ...]


class DatasetAssumed(Fact):
    """A fine-tune given no `tokens=`: one epoch of `tokens` tokens, the size of `dataset` (`samples` examples)
    as `source` states it, so that every plan has a time and a total."""

    tokens: float
    samples: float
    dataset: str
    source: str
