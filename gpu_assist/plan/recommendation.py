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

from .. import facts
from ..catalog import Catalog, default_catalog_dir
from ..catalog.fabric import BLOCK_MAX_INSTANCES, Link, PlanData, SpotBand, block_days, plan_data_for
from ..catalog.fx import FxRates
from ..catalog.gpus import GpuSpec, GpuTable
from ..catalog.offers import MARKETPLACES, Offer
from ..catalog.regions import check_selectors
from ..facts import Fact, PricingModel
from ..pricing.job_costs import checkpoint_storage
from ..pricing.price_table import billed_units, cheapest_per_offer, price_table, select_offers
from ..pricing.query import HOUR_S
from ..pricing.quote import QuoteOption, edge_spot, to_option
from .sizing import (
    CALIBRATION,
    GB,
    GpuSizing,
    HostFacts,
    MemoryEstimate,
    MissingRate,
    NotPlanned,
    OfferSizes,
    Part,
    block_size,
    calibrated,
    effective_tflops,
    finish_chance,
    memory_needed,
    missing_throughput,
    size_offers,
    sizing_basis,
    spot_overhead,
    training_flops,
    training_hours,
    usable_gb,
)
from .workload import Workload

_NON_SPOT_MODELS = tuple(model for model in PricingModel if model != PricingModel.SPOT)
# Notes that doubt a plan's price: they lead its reasons, so the reader weighs them first.
_DOUBTS = (facts.Unverified, facts.Stale, facts.DateUnknown)
# AWS vCPU quota families (SOURCES-plans.txt part C): instance family letter → (on-demand, spot) quota code and name.
QUOTA_FAMILIES = {"p": (("L-417A185B", "Running On-Demand P instances"),
                        ("L-7212CCBC", "All P Spot Instance Requests")),
                  "g": (("L-DB2E81BA", "Running On-Demand G and VT instances"),
                        ("L-3819A6DF", "All G and VT Spot Instance Requests"))}


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
    reasoning: tuple[GpuSizing, ...]  # per GPU type: fits? how many? how fast?
    assumptions: tuple[Fact, ...]     # what the answer rests on (`sizing_basis`)
    currency: str
    not_planned: tuple[NotPlanned, ...] = ()  # GPU types of the search no plan was made for, and why
    # The scaling model against published figures: (what, source, published, model, note), for `--explain`.
    calibration: tuple[tuple[str, str, float, float, str], ...] = ()

    def __repr__(self) -> str:
        return f"Recommendation({self.workload.describe()}: {len(self.plans)} feasible plans)"


def recommend(workload: Workload, catalog: Catalog, *, today: dt.date, currency: str = "USD",
              top: int | None = 10, plan_data: PlanData | None = None) -> Recommendation:
    """Plans for `workload` over `catalog` (`top` of them; None: every one, as `top=all` asks); `today` dates
    staleness; nothing is read from the clock. `plan_data`: fabrics, spot bands and Capacity Blocks (default: the
    catalog's `sources/`, else the bundled ones)."""
    currency = workload.currency or currency
    data = plan_data if plan_data is not None else plan_data_for(catalog.directory, default_catalog_dir())
    if workload.regions:
        check_selectors(workload.regions, catalog.region_providers, catalog.countries,
                        example="recommend train 7B region=eu")
    memory = memory_needed(workload)
    flops = training_flops(workload, catalog.gpus) if workload.kind != "serve" else None
    reasoning: list[GpuSizing] = []
    plans: list[Plan] = []
    unplanned: dict[MissingRate, list[str]] = {}  # why → the GPUs of the search left out for it
    specs = [catalog.gpus.specs[name] for name in workload.gpus] if workload.gpus else list(catalog.gpus)
    for spec in specs:
        offers = select_offers(catalog, spec.name, providers=workload.providers, regions=workload.regions)
        if not offers:
            continue
        hosts = [_host_facts(o, workload, data) for o in offers]
        sized, sizes = size_offers(workload, spec, [int(o.gpu_count) for o in offers],
                                   [_memory_gib(o, spec) for o in offers], memory, flops, hosts)
        reasoning.append(sized)
        if sizes is not None:
            plans += _offer_plans(workload, spec, offers, sizes, hosts, catalog.fx, currency, today, data)
            if flops and workload.kind != "serve":
                plans += _block_plans(workload, spec, offers, data, flops, catalog.fx, currency)
        elif sized.missing is not None:
            unplanned.setdefault(sized.missing, []).append(spec.name)
    plans += _own_plans(workload, catalog.gpus, memory, flops, currency)
    plans = [_with_checkpoint_storage(plan, workload, memory, catalog, currency) for plan in plans]
    budget = None if workload.budget is None else catalog.fx.convert(workload.budget, workload.currency or currency,
                                                                      currency)
    judged = _mark_pareto([_judge(p, workload, budget) for p in plans])
    ranked = _ranked_providers(workload, judged)
    feasible = _folded(sorted((p for p in judged if p.feasible),
                              key=lambda p: (not _trusted(p, ranked), _risky(p), p.rank_key)))
    # The closest per GPU: a plan that could run the job (late, over budget) before one refused outright.
    rejected = sorted((p for p in judged if not p.feasible), key=lambda p: (not p.fits, p.rank_key))
    return Recommendation(workload=workload, memory=memory, plans=tuple(_with_fastest(feasible, top, ranked)),
                          rejected=tuple(_one_per_gpu(rejected)), reasoning=tuple(reasoning),
                          assumptions=sizing_basis(workload, memory, flops), currency=currency,
                          not_planned=tuple(NotPlanned(tuple(names), why) for why, names in unplanned.items()),
                          calibration=tuple((p.name, p.source, p.published, calibrated(p, catalog.gpus), p.note)
                                            for p in CALIBRATION) if workload.kind != "serve" else ())


def _host_facts(offer: Offer, workload: Workload, data: PlanData) -> HostFacts:
    """An offer's network, its per-instance spot rate (the Spot Advisor's band where it gives one, unless the user
    set `interruption_rate=`) and the hosts a marketplace listing has."""
    rate = None
    if workload.may_interrupt and workload.kind != "serve" and offer.spot_hourly is not None:
        band = data.band(offer.provider, offer.region, offer.instance_type)
        rate = band.rate_per_h if band and "interruption_rate_per_h" not in workload.overridden else \
            workload.assumptions.interruption_rate_per_h
    return HostFacts(data.link(offer.provider, offer.instance_type), rate,
                     1 if offer.provider in MARKETPLACES else None)


def _risky(plan: Plan) -> bool:
    """A spot plan whose expected overhead is over the limit: behind every plan that is not."""
    return any(isinstance(r, facts.SpotOverheadHigh) for r in plan.reasons)


def _fabric(option_type: str, instances: int, link: Link | None, scaled: facts.Scaling | None) -> facts.Fabric:
    return facts.Fabric(option_type, instances, link.fabric if link else "", link.gbps if link else None,
                        bool(link and link.trains), scaled if instances > 1 else None, link.source if link else "")


def _quota(provider: str, instance_type: str, instances: int, vcpus: float | None,
           spot: bool) -> facts.QuotaNeeded | None:
    """The AWS vCPU quota a plan needs, where its family has one of the codes we know."""
    family = QUOTA_FAMILIES.get(instance_type[:1]) if provider == "aws" else None
    if family is None or vcpus is None:
        return None
    code, name = family[1] if spot else family[0]
    return facts.QuotaNeeded(code, name, int(vcpus) * instances)


def _folded(plans: list[Plan]) -> list[Plan]:
    """Plans that differ only in how the same GPUs split into hosts, at the same price and time, as one line: the
    first as ranked, naming the others."""
    kept: dict[tuple[Any, ...], Plan] = {}
    splits: dict[tuple[Any, ...], list[str]] = {}
    for plan in plans:
        key = (plan.gpu, plan.gpu_count, plan.provider, plan.region, plan.zone, plan.pricing_model, plan.total,
               plan.hours, plan.hourly)
        if key not in kept:
            kept[key] = plan
        elif kept[key].instance_type != plan.instance_type:
            splits.setdefault(key, []).append(f"{plan.instances:,}× {plan.instance_type}")
    return [replace(p, reasons=(*p.reasons, facts.Folded(tuple(splits[k])))) if k in splits else p
            for k, p in kept.items()]


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
    """The `top` cheapest plans (all with None), the cheapest Capacity Block (a strategy of its own, its price
    dated) and the fastest trusted plan too when they are not among them."""
    shown = feasible[:top]
    block = next((p for p in feasible if p.pricing_model == CAPACITY_BLOCK), None)
    if block is not None and block not in shown:
        shown.append(block)
    timed = [p for p in feasible if p.hours is not None and _trusted(p, ranked)]
    if timed:
        fastest = min(timed, key=lambda p: (p.hours, float(p.total or 0)))
        if fastest not in shown:
            shown.append(replace(fastest, reasons=(facts.Fastest(), *fastest.reasons)))
    return shown


CAPACITY_BLOCK = "capacity-block"  # a plan's pricing model, like "spot+on-demand": not a catalog price column


def _offer_plans(workload: Workload, spec: GpuSpec, offers: Sequence[Offer], sizes: OfferSizes,
                 hosts: Sequence[HostFacts], fx: FxRates, currency: str, today: dt.date,
                 data: PlanData) -> list[Plan]:
    """Each offer's cheapest region per pricing model as a plan: through the same price table as quotes."""
    table = price_table(offers, instances=sizes.instances, duration_s=sizes.duration_s, models=_NON_SPOT_MODELS,
                        fx=fx, currency=currency)[0]
    a = workload.assumptions
    if workload.may_interrupt:
        # Training on spot runs longer by its fleet's expected overhead; serving on spot is priced for the same hours.
        slowdown = [1 + spot_overhead(a, n, host.spot_rate) if workload.kind != "serve" and host.spot_rate is not None
                    else 1 for n, host in zip(sizes.instances, hosts)]
        longer = [math.ceil(seconds * slow) for seconds, slow in zip(sizes.duration_s, slowdown)]
        spot = price_table(offers, instances=sizes.instances, models=(PricingModel.SPOT,), fx=fx, currency=currency,
                           duration_s=longer)[0]
        table += [row for row in spot if not edge_spot(row, workload.regions)]  # a quote's rule: no Local Zone
    plans = []
    for priced in cheapest_per_offer(table, all_regions=False):
        position = priced.position
        gpus, base_hours, refusal = sizes.gpus[position], sizes.job_hours[position], sizes.refusals[position]
        option = to_option(priced, gpus, fx, currency, today, job_length_known=base_hours is not None)
        scaled = sizes.scaling[position]
        host = hosts[position]
        band = data.band(priced.offer.provider, priced.offer.region, priced.offer.instance_type) \
            if "interruption_rate_per_h" not in workload.overridden else None
        # What every plan on this offer shares; a refusal (the offer cannot run the job) leads its reasons.
        sized = _Sized(gpus, _memory_gib(priced.offer, spec), None if workload.kind == "serve" else
                       effective_tflops(spec, gpus, scaled.efficiency, workload), refusal,
                       _fabric(option.instance_type, option.instances, host.link,
                               None if workload.kind == "serve" else scaled), host.spot_rate, band,
                       priced.offer.vcpus)
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
    fabric: facts.Fabric
    spot_rate: float | None  # per instance-hour
    band: SpotBand | None  # where the rate came from (None: the default rate)
    vcpus: float | None  # per instance

    def fields(self, reasons: Iterable[Fact]) -> dict[str, Any]:
        """The Plan fields these give, with `reasons` behind the refusal."""
        return {"gpu_count": self.gpu_count, "gpu_memory_gib": self.gpu_memory_gib, "fits": self.refusal is None,
                "effective_tflops": self.effective_tflops,
                "reasons": (self.refusal, *reasons) if self.refusal else tuple(reasons)}


def _plan_notes(option: QuoteOption, sized: _Sized, spot: bool) -> list[Fact]:
    """An option's notes for a plan: doubts first, the network named instead of "spans N hosts", the quota."""
    reasons: list[Fact] = sorted((n for n in option.notes if not isinstance(n, facts.MultiHost)),
                                 key=lambda n: not isinstance(n, _DOUBTS))
    reasons.append(sized.fabric)
    quota = _quota(option.provider, option.instance_type, option.instances, sized.vcpus, spot)
    if quota is not None:
        reasons.append(quota)
    return reasons


def _plan_from_option(option: QuoteOption, workload: Workload, base_hours: float | None, sized: _Sized) -> Plan:
    hours = base_hours
    # What the reader must weigh first: an unverified, stale or undated price leads the plan's notes.
    spot = option.pricing_model == PricingModel.SPOT
    reasons = _plan_notes(option, sized, spot)
    strategy: str = option.pricing_model
    if spot and workload.kind != "serve" and base_hours is not None:
        a = workload.assumptions
        rate = a.interruption_rate_per_h if sized.spot_rate is None else sized.spot_rate
        overhead = spot_overhead(a, option.instances, rate)
        hours = base_hours * (1 + overhead)
        strategy = "spot + checkpoints"
        reasons = [r for r in reasons if not isinstance(r, facts.SpotInterruption)]
        deadline_h = workload.deadline_s / 3600 if workload.deadline_s else None
        chance = None if deadline_h is None else finish_chance(a, base_hours, option.instances, rate, deadline_h)
        band = sized.band
        risk = facts.FleetSpotRisk(option.instances, rate, band.band if band else None, option.region,
                                   band.as_of if band else "", a.checkpoint_interval_h * 60, overhead, chance)
        reasons.insert(0, risk)
        if overhead > a.spot_overhead_limit:
            reasons.insert(0, facts.SpotOverheadHigh(overhead, a.spot_overhead_limit))
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
    currency): an elastic job that the on-demand part keeps alive, so an interruption costs only the spot part's
    share of the work, at each spot instance's own rate. Both parts run, and are billed, for the fleet's own hours
    (rounded up to the offer's billing unit), not for the longer all-spot run."""
    a = workload.assumptions
    on_demand_instances = max(1, round(spot.instances * (1 - a.spot_share)))
    spot_instances = spot.instances - on_demand_instances
    hours = None if base_hours is None else \
        base_hours * (1 + spot_overhead(a, 1, sized.spot_rate) * spot_instances / spot.instances)
    billed = None if hours is None else \
        billed_units(PricingModel.ON_DEMAND, math.ceil(hours * HOUR_S), billing_granularity_s)
    hourly = spot.hourly * spot_instances + on_demand_hourly * on_demand_instances
    reasons = (facts.MixedFleet(spot_instances, on_demand_instances), *_plan_notes(spot, sized, True))
    return Plan(gpu=spot.gpu, instances=spot.instances, provider=spot.provider,
                region=spot.region, zone=spot.zone, instance_type=spot.instance_type, pricing_model="spot+on-demand",
                strategy=f"{a.spot_share:.0%} spot + {1 - a.spot_share:.0%} on-demand", hours=hours, hourly=hourly,
                total=None if billed is None else hourly * billed, billed_hours=billed, currency=spot.currency,
                meets_deadline=None, within_budget=None, verified=spot.trusted, gpus_per_instance=spot.gpu_count,
                **sized.fields(reasons))


def _block_plans(workload: Workload, spec: GpuSpec, offers: Sequence[Offer], data: PlanData, flops: float,
                 fx: FxRates, currency: str) -> list[Plan]:
    """AWS Capacity Blocks for ML as plans: the instance types `capacity_blocks.csv` prices, in its regions, sized
    like on-demand but up to the blocks' own limit (64 instances a block, 256 across blocks, one zone), reserved
    for the shortest block that holds the job (1-14 days, then 7-day steps to 182). The price is the published
    one of its date: unverified (AWS sets it by supply and demand), so it ranks behind verified prices."""
    plans: list[Plan] = []
    seen: set[str] = set()  # one plan per instance type: its first region in the price list (same price)
    for offer in offers:
        if offer.provider != "aws" or offer.instance_type in seen:
            continue
        window = next((w for w in data.blocks(offer.instance_type) if w.region == offer.region), None)
        if window is None:
            continue
        seen.add(offer.instance_type)
        g = int(offer.gpu_count)
        link = data.link("aws", offer.instance_type)
        sized = block_size(workload, spec, g, _memory_gib(offer, spec), flops, link, 4 * BLOCK_MAX_INSTANCES)
        if sized is None:
            continue
        instances, hours, scaled = sized
        days = block_days(hours)
        if not days:
            continue
        hourly = fx.convert(window.hourly, window.currency, currency) * instances
        billed = Decimal(days * 24)
        reasons: list[Fact] = [facts.CapacityBlock(days, instances, BLOCK_MAX_INSTANCES, window.as_of, window.source),
                               facts.Unverified(window.source), _fabric(offer.instance_type, instances, link, scaled)]
        plans.append(Plan(gpu=spec.name, gpu_count=instances * g, instances=instances, provider="aws",
                          region=offer.region, zone="", instance_type=offer.instance_type,
                          pricing_model=CAPACITY_BLOCK, strategy=f"Capacity Block, {days} days", hours=hours,
                          hourly=hourly, total=hourly * billed, currency=currency, billed_hours=billed,
                          meets_deadline=None, within_budget=None, verified=False, gpus_per_instance=g,
                          gpu_memory_gib=_memory_gib(offer, spec),
                          effective_tflops=effective_tflops(spec, instances * g, scaled.efficiency, workload),
                          reasons=tuple(reasons)))
    return plans


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
            reasons.insert(0, missing)
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


# The whole bill: the checkpoints a spot plan writes are stored at its provider, and that is part of its
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
    size_bytes = memory.part(Part.ADAPTERS) or 14 * workload.params
    cost = checkpoint_storage(Decimal(str(round(size_bytes / GB, 3))), catalog.data_prices, provider=plan.provider,
                              region=plan.region, hours=plan.billed_hours, fx=catalog.fx, currency=currency)
    if cost.amount is None:
        return replace(plan, reasons=(*plan.reasons, facts.PartsUnknown((facts.JobItem.CHECKPOINTS,), plan.provider)))
    # Billed for the plan's billed hours, as an hourly rate: total = hourly × billed hours still holds.
    return replace(plan, hourly=plan.hourly + cost.amount / plan.billed_hours, total=plan.total + cost.amount,
                   reasons=(*plan.reasons, cost))

