"""Workload → plans: which GPUs, how many, where and how to pay, with the reasoning shown. Pure.

Formulas (each constant is an `Assumptions` field, printed with every answer and overridable):

Memory, in bytes (GB = 1e9 bytes; GPU memory is GiB, of which `usable_memory` is usable):
- full training / full fine-tuning, mixed precision with Adam: 16 B/param (2 weights + 2 gradients
  + 4 fp32 master weights + 8 Adam moments), sharded over all GPUs (ZeRO-3/FSDP), plus
  `runtime_overhead` × that for activations (with activation checkpointing) and buffers;
- LoRA / QLoRA, as published practice runs them (Hu et al. 2021; Dettmers et al. 2023):
  base weights frozen at their storage precision: LoRA at the precision's bytes/param (bf16: 2); QLoRA in
  4-bit NF4 with double quantisation, 4 + 0.127 bits/param (blocks of 64 with 8-bit constants, themselves
  quantised in blocks of 256), except the embeddings and LM head (2 × vocab × d_model) kept in bf16;
  adapters: r × (d_in + d_out) per adapted matrix, per layer: `lora_targets` all = q, k, v, o (4 × 2d·r)
  + the MLP's two d × 4d matrices (2 × 5d·r) = 18·d·r; attention = 8·d·r; qv = 4·d·r;
  adapter weights, gradients and Adam moments only for the adapters: LoRA 16 B/param (fp32 weights and
  gradients, two fp32 moments), QLoRA 12 B/param (bf16 weights and gradients, paged 32-bit AdamW whose
  states page to CPU memory under spikes instead of failing);
  activations with gradient checkpointing: one d_model × 2 B checkpoint per layer and token, plus one
  layer recomputed at 34 × d_model bytes per token (Korthikanti et al. 2022, flash attention), for
  `batch_tokens` tokens per micro-batch;
- serving: weights at the precision's bytes/param + KV cache = users × context × KV bytes per token, plus
  10 % runtime overhead. KV bytes/token = 2 (K and V) × layers × d_model × 2 bytes / `kv_group`, for a dense
  transformer with d_model = 128 × layers and params = 12 × layers × d_model².
- minimum GPUs of an offer = ceil(memory / (memory per GPU × usable_memory)), the memory per GPU the offer
  lists (a cloud may list less than the datasheet), else the datasheet's; serving uses a power-of-two
  tensor-parallel group, kept inside one host by adding replicas (each holds the KV cache of fewer users); an
  offer whose hosts are too small for one user's group, or that needs more than `max_instances` instances, is
  refused.

Time:
- training FLOPs = 6 × params × tokens (LoRA/QLoRA: 4 × params × tokens: no weight gradients), or the
  FLOPs a reference run did: gpu_hours × 3600 × reference peak TFLOPS × MFU;
- throughput = GPUs × peak dense TFLOPS (gpus.csv, for the precision) × MFU × (`multi_host_efficiency` when
  the job spans more than one host, else 1); time = FLOPs / throughput. One rule for every GPU: a job at bf16,
  fp16 or fp8 runs at that precision's rate; a GPU gpus.csv gives no such rate for (V100 and T4: fp16 only) is
  not planned, and "not chosen" says why; fp32 trains as 16-bit mixed precision (bf16, else fp16) and says so;
- the GPU count is the smallest multiple of the instance size that fits the memory and meets the deadline
  (at most `max_instances` instances), even on spot with its checkpoint overhead when spot is allowed; an offer
  that needs more than `max_instances` instances just to hold the job is refused;
- spot with checkpointing: time × (1 + write/interval + rate × (interval/2 + restart)), the expected
  cost of checkpoint writes and of the work lost and restarted after each interruption;
- serving decode: each step reads the weights and the KV cache once: step = bytes / (GPUs × bandwidth ×
  `bandwidth_efficiency`); users get 1/step tokens/s each; replicas are added until that reaches
  `target_tokens_per_s`. Serving plans are priced for `serve_hours` (default 730 h, one month).

Plans: each feasible (GPU type, count, offer, pricing model) — on-demand, spot with checkpoints, a mixed
`spot_share` spot + on-demand fleet, reserved terms and monthly subscriptions where priced, and the
user's own GPUs (`own=2xRTX3090`, marginal cost 0: see `tco` for what owning costs). A plan's hourly rate is
for all its instances (monthly: per 730 h; reserved: the effective rate), its total for the whole job (reserved:
the whole terms that cover it), none when the job has no length: total = hourly × billed hours, the plan's own
hours rounded up to its offer's billing unit (a second, a minute or an hour; whole terms; whole months of 730 h),
for every part of a mixed fleet alike (`--explain` lists each plan's). A spot plan that checkpoints also pays for
its latest checkpoint in the provider's object storage for those hours (`catalogs/data_prices.csv`; said unknown
where no source gives it), as part of its hourly rate. Feasible = holds the job, meets the deadline
(30 days when none is given; `deadline=none` lifts it) and the budget. Ranked by total cost,
verified prices before unverified ones unless the search holds nothing verified or names those providers
(`provider=`); without a job length, fewest GPUs first, then the cheapest hour. The fastest verified plan is
always listed; the Pareto front of cost vs time is marked.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from decimal import Decimal
from typing import Any, NamedTuple

from . import facts
from .catalog import Catalog
from .facts import Fact, PricingModel
from .fx import FxRates
from .gpus import GpuSpec, GpuTable
from .offers import Offer
from .price_table import billed_seconds, cheapest_per_offer, price_table, select_offers
from .pricing import QuoteOption, to_option
from .regions import check_selectors
from .request import HOUR_S
from .sizing import (GB, MemoryEstimate, OfferSizes, describe_assumptions, effective_tflops, memory_needed,
                     missing_throughput, size_offers, spot_overhead, training_flops, training_hours, usable_gb)
from .workload import Workload

_NON_SPOT_MODELS = tuple(model for model in PricingModel if model != PricingModel.SPOT)
# Notes that doubt a plan's price: they lead its reasons, so the reader weighs them first.
_DOUBTS = (facts.Unverified, facts.Stale, facts.DateUnknown)


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


@dataclass(frozen=True)
class Recommendation:
    workload: Workload
    memory: MemoryEstimate
    plans: tuple[Plan, ...]           # feasible, cheapest first
    rejected: tuple[Plan, ...]        # infeasible, each with its reasons
    reasoning: tuple[str, ...]        # per GPU type: fits? how many? how fast?
    assumptions: tuple[str, ...]
    currency: str
    not_planned: tuple[str, ...] = ()  # GPU types of the search no plan was made for, and why (`V100: …`)

    def __repr__(self) -> str:
        return f"Recommendation({self.workload.describe()}: {len(self.plans)} feasible plans)"


def recommend(workload: Workload, catalog: Catalog, *, today: dt.date, currency: str = "USD",
              top: int | None = 10) -> Recommendation:
    """Plans for `workload` over `catalog` (`top` of them; None: every one, as `top=all` asks); `today` dates
    staleness; nothing is read from the clock."""
    currency = workload.currency or currency
    if workload.regions:
        check_selectors(workload.regions, catalog.regions, catalog.countries, example="recommend train 7B region=eu")
    memory = memory_needed(workload)
    flops = training_flops(workload, catalog.gpus) if workload.kind != "serve" else None
    reasoning: list[str] = []
    plans: list[Plan] = []
    unplanned: dict[str, list[str]] = {}  # why → the GPUs of the search left out for it
    specs = [catalog.gpus.specs[name] for name in workload.gpus] if workload.gpus else list(catalog.gpus)
    for spec in specs:
        offers = select_offers(catalog, spec.name, providers=workload.providers, regions=workload.regions)
        if not offers:
            continue
        line, sizes = size_offers(workload, spec, [int(o.gpu_count) for o in offers],
                                  [_memory_gib(o, spec) for o in offers], memory, flops)
        reasoning.append(line)
        if sizes is not None:
            plans += _offer_plans(workload, spec, offers, sizes, catalog.fx, currency, today)
        else:
            unplanned.setdefault(str(missing_throughput(spec, workload.precision)), []).append(spec.name)
    plans += _own_plans(workload, catalog.gpus, memory, flops, currency)
    plans = [_with_checkpoint_storage(plan, workload, memory, catalog, currency) for plan in plans]
    budget = None if workload.budget is None else catalog.fx.convert(workload.budget, workload.currency or currency,
                                                                      currency)
    judged = _mark_pareto([_judge(p, workload, budget) for p in plans])
    ranked = _ranked_providers(workload, judged)
    feasible = sorted((p for p in judged if p.feasible), key=lambda p: (not _trusted(p, ranked), p.rank_key))
    rejected = sorted((p for p in judged if not p.feasible), key=lambda p: p.rank_key)
    return Recommendation(workload=workload, memory=memory, plans=tuple(_with_fastest(feasible, top, ranked)),
                          rejected=tuple(_one_per_gpu(rejected)), reasoning=tuple(reasoning),
                          assumptions=tuple(describe_assumptions(workload, memory, flops)), currency=currency,
                          not_planned=tuple(f"{', '.join(names)}: {why}" for why, names in unplanned.items()))


def _memory_gib(offer: Offer, spec: GpuSpec) -> float:
    """Memory per GPU as the offer lists it (a cloud may list less than the datasheet), else the datasheet's."""
    return offer.gpu_memory_gib or spec.memory_gib


def _trusted(plan: Plan, ranked: set[str]) -> bool:
    return plan.verified or plan.provider in ranked


def _ranked_providers(workload: Workload, plans: list[Plan]) -> set[str]:
    """Providers whose unverified plans rank with verified ones: all when the search holds nothing verified
    (the user restricted it to such providers), else those named with `provider=`."""
    if not any(p.verified and p.provider != "own" for p in plans):
        return {p.provider for p in plans}
    return set(workload.providers)


def _with_fastest(feasible: list[Plan], top: int | None, ranked: set[str]) -> list[Plan]:
    """The `top` cheapest plans (all with None), and the fastest trusted plan too when it is not among them."""
    shown = feasible[:top]
    timed = [p for p in feasible if p.hours is not None and _trusted(p, ranked)]
    if timed:
        fastest = min(timed, key=lambda p: (p.hours, float(p.total or 0)))
        if fastest not in shown:
            shown.append(replace(fastest, reasons=(facts.Fastest(), *fastest.reasons)))
    return shown


def _offer_plans(workload: Workload, spec: GpuSpec, offers: Sequence[Offer], sizes: OfferSizes, fx: FxRates,
                 currency: str, today: dt.date) -> list[Plan]:
    """Each offer's cheapest region per pricing model as a plan: through the same price table as quotes."""
    table = price_table(offers, instances=sizes.instances, duration_s=sizes.duration_s, models=_NON_SPOT_MODELS,
                        fx=fx, currency=currency)[0]
    if workload.may_interrupt:
        # Training on spot runs longer by the checkpoint overhead; serving on spot is priced for the same hours.
        slowdown = 1 + spot_overhead(workload.assumptions) if workload.kind != "serve" else 1
        table += price_table(offers, instances=sizes.instances, models=(PricingModel.SPOT,), fx=fx, currency=currency,
                             duration_s=[math.ceil(seconds * slowdown) for seconds in sizes.duration_s])[0]
    plans = []
    for priced in cheapest_per_offer(table, all_regions=False):
        position = priced.position
        gpus, base_hours, refusal = sizes.gpus[position], sizes.job_hours[position], sizes.refusals[position]
        option = to_option(priced, gpus, fx, currency, today, job_length_known=base_hours is not None)
        # What every plan on this offer shares; a refusal (the offer cannot run the job) leads its reasons.
        sized = _Sized(gpus, _memory_gib(priced.offer, spec), None if workload.kind == "serve" else
                       effective_tflops(spec, gpus, option.instances, workload), refusal)
        plans.append(_plan_from_option(option, workload, base_hours, sized))
        on_demand = priced.offer.on_demand_hourly
        if workload.kind != "serve" and priced.pricing_model == PricingModel.SPOT and option.instances >= 2 \
                and on_demand is not None:
            plans.append(_mixed_plan(option, fx.convert(on_demand, priced.offer.currency, currency), workload,
                                     base_hours, sized, priced.offer.billing_granularity_s))
    return plans


class _Sized(NamedTuple):
    """What sizing decided for one offer, the same for each way of buying it."""

    gpu_count: int
    gpu_memory_gib: float
    effective_tflops: float | None
    refusal: Fact | None  # why the offer cannot run the job; None when it can

    def fields(self, reasons: Iterable[Fact]) -> dict[str, Any]:
        """The Plan fields these give, with `reasons` behind the refusal."""
        return {"gpu_count": self.gpu_count, "gpu_memory_gib": self.gpu_memory_gib, "fits": self.refusal is None,
                "effective_tflops": self.effective_tflops,
                "reasons": (self.refusal, *reasons) if self.refusal else tuple(reasons)}


def _plan_from_option(option: QuoteOption, workload: Workload, base_hours: float | None, sized: _Sized) -> Plan:
    hours = base_hours
    # What the reader must weigh first: an unverified, stale or undated price leads the plan's notes.
    reasons: list[Fact] = sorted(option.notes, key=lambda n: not isinstance(n, _DOUBTS))
    strategy: str = option.pricing_model
    if option.pricing_model == PricingModel.SPOT and workload.kind != "serve" and base_hours is not None:
        overhead = spot_overhead(workload.assumptions)
        hours = base_hours * (1 + overhead)
        strategy = "spot + checkpoints"
        reasons = [r for r in reasons if not isinstance(r, facts.SpotInterruption)]
        reasons.insert(0, facts.Checkpointing(workload.assumptions.checkpoint_interval_h * 60, overhead))
    return Plan(gpu=option.gpu, instances=option.instances, provider=option.provider,
                region=option.region, zone=option.zone, instance_type=option.instance_type,
                pricing_model=option.pricing_model, strategy=strategy, hours=hours,
                hourly=option.hourly * option.instances, total=None if hours is None else option.total,
                currency=option.currency, billed_hours=None if hours is None else option.billed_hours,
                meets_deadline=None, within_budget=None, verified=option.trusted,
                gpus_per_instance=option.gpu_count, **sized.fields(reasons))


def _mixed_plan(spot: QuoteOption, on_demand_hourly: Decimal, workload: Workload, base_hours: float | None,
                sized: _Sized, billing_granularity_s: int) -> Plan:
    """`spot_share` of the instances on spot, the rest on demand (at `on_demand_hourly` in the spot option's
    currency): interruptions slow only the spot part. Both parts run, and are billed, for the fleet's own hours
    (rounded up to the offer's billing unit), not for the longer all-spot run."""
    a = workload.assumptions
    on_demand_instances = max(1, round(spot.instances * (1 - a.spot_share)))
    spot_instances = spot.instances - on_demand_instances
    hours = None if base_hours is None else base_hours * (1 + spot_overhead(a) * spot_instances / spot.instances)
    billed = None if hours is None else \
        Decimal(billed_seconds(math.ceil(hours * HOUR_S), billing_granularity_s)) / HOUR_S
    hourly = spot.hourly * spot_instances + on_demand_hourly * on_demand_instances
    reasons = (facts.MixedFleet(spot_instances, on_demand_instances), *spot.notes)
    return Plan(gpu=spot.gpu, instances=spot.instances, provider=spot.provider,
                region=spot.region, zone=spot.zone, instance_type=spot.instance_type, pricing_model="spot+on-demand",
                strategy=f"{a.spot_share:.0%} spot + {1 - a.spot_share:.0%} on-demand", hours=hours, hourly=hourly,
                total=None if billed is None else hourly * billed, billed_hours=billed, currency=spot.currency,
                meets_deadline=None, within_budget=None, verified=spot.trusted, gpus_per_instance=spot.gpu_count,
                **sized.fields(reasons))


def _own_plans(workload: Workload, gpus: GpuTable, memory: MemoryEstimate, flops: float | None,
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
            reasons.insert(0, facts.Refused(missing))
        plans.append(Plan(gpu=name, gpu_count=count, instances=1, provider="own", region="", zone="",
                          instance_type=f"{count}x{name}", pricing_model="own", strategy="own GPUs",
                          hours=hours if fits else None, hourly=Decimal(0),
                          total=Decimal(0) if fits and hours is not None else None,
                          billed_hours=Decimal(hours) if fits and hours is not None else None, currency=currency,
                          meets_deadline=None, within_budget=None, verified=True, gpus_per_instance=count,
                          gpu_memory_gib=spec.memory_gib, fits=fits, reasons=tuple(reasons)))
    return plans


def _judge(plan: Plan, workload: Workload, budget: Decimal | None) -> Plan:
    """The deadline and the budget, for a plan that can run the job; without a job length there is no total to
    hold against a budget."""
    if not plan.fits:
        return plan
    reasons = list(plan.reasons)
    meets = plan.meets_deadline
    if meets is None and workload.deadline_s and plan.hours is not None and workload.kind != "serve":
        deadline_h = workload.deadline_s / 3600
        meets = plan.hours <= deadline_h
        if not meets:
            reasons.insert(0, facts.OverDeadline(plan.hours, deadline_h))
    within = None
    if budget is not None and plan.total is not None:
        within = plan.total <= budget
        if not within:
            reasons.insert(0, facts.OverBudget(plan.total, budget, plan.currency))
    return replace(plan, meets_deadline=meets, within_budget=within, reasons=tuple(reasons))


def _mark_pareto(plans: list[Plan]) -> list[Plan]:
    """A plan is on the front when no other plan is both cheaper-or-equal and faster-or-equal (one strictly).
    The user's own GPUs count at their marginal cost, 0, as their plan says: nothing is cheaper, so they are on
    the front, and a cloud plan slower than them is not."""
    timed = [(p, p.total, p.hours) for p in plans if p.hours is not None and p.total is not None and p.fits
             and p.meets_deadline is not False]
    front: set[int] = set()
    for p, total, hours in timed:
        dominated = any((q_total <= total and q_hours <= hours) and (q_total < total or q_hours < hours)
                        for q, q_total, q_hours in timed)
        if not dominated:
            front.add(id(p))
    return [replace(p, pareto=True) if id(p) in front else p for p in plans]


def _one_per_gpu(rejected: list[Plan]) -> list[Plan]:
    seen: set[str] = set()
    kept = []
    for plan in rejected:
        if plan.gpu not in seen:
            seen.add(plan.gpu)
            kept.append(plan)
    return kept


# The whole bill (#33): the checkpoints a spot plan writes are stored at its provider, and that is part of its
# total. Kept apart from the planning above (one call in `recommend`).
_CHECKPOINTED = ("spot + checkpoints", "spot+on-demand")


def _with_checkpoint_storage(plan: Plan, workload: Workload, memory: MemoryEstimate, catalog: Catalog,
                             currency: str) -> Plan:
    """A spot plan that checkpoints with its checkpoint's object storage added to its total (the latest kept for
    the plan's hours); a price no source gives is said (`PartsUnknown`) and adds nothing. A checkpoint holds the
    trainable state: weights and AdamW's two moments in fp32 plus the bf16 weights (14 bytes a parameter), or a
    LoRA's adapters as sized (weights, gradients and optimizer state: an upper bound)."""
    if workload.kind == "serve" or plan.billed_hours is None or plan.total is None or \
            (plan.strategy != _CHECKPOINTED[0] and plan.pricing_model != _CHECKPOINTED[1]):
        return plan
    from .job_costs import checkpoint_storage

    adapters = [size for name, size in memory.parts.items() if name.startswith("adapters")]
    size_bytes = adapters[0] if adapters else 14 * workload.params
    cost = checkpoint_storage(Decimal(str(round(size_bytes / GB, 3))), catalog.data_prices, provider=plan.provider,
                              region=plan.region, hours=plan.billed_hours, fx=catalog.fx, currency=currency)
    if cost.amount is None:
        return replace(plan, reasons=(*plan.reasons, facts.PartsUnknown((facts.JobItem.CHECKPOINTS,), plan.provider)))
    # Billed for the plan's billed hours, as an hourly rate: total = hourly × billed hours still holds.
    return replace(plan, hourly=plan.hourly + cost.amount / plan.billed_hours, total=plan.total + cost.amount,
                   reasons=(*plan.reasons, cost))

