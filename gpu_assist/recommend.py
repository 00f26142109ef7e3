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
- minimum GPUs of a type = ceil(memory / (GPU memory × usable_memory)); serving uses a power-of-two
  tensor-parallel group, kept inside one host where the host has enough GPUs.

Time:
- training FLOPs = 6 × params × tokens (LoRA/QLoRA: 4 × params × tokens: no weight gradients), or the
  FLOPs a reference run did: gpu_hours × 3600 × reference peak TFLOPS × MFU;
- throughput = GPUs × peak dense TFLOPS (gpus.csv, for the precision) × MFU × (`multi_host_efficiency` when
  the job spans more than one host, else 1); time = FLOPs / throughput;
- the GPU count is the smallest multiple of the instance size that fits the memory and meets the deadline
  (at most `max_instances` instances), even on spot with its checkpoint overhead when spot is allowed;
- spot with checkpointing: time × (1 + write/interval + rate × (interval/2 + restart)), the expected
  cost of checkpoint writes and of the work lost and restarted after each interruption;
- serving decode: each step reads the weights and the KV cache once: step = bytes / (GPUs × bandwidth ×
  `bandwidth_efficiency`); users get 1/step tokens/s each; replicas are added until that reaches
  `target_tokens_per_s`. Serving plans are priced for `serve_hours` (default 730 h, one month).

Plans: each feasible (GPU type, count, offer, pricing model) — on-demand, spot with checkpoints, a mixed
`spot_share` spot + on-demand fleet, reserved terms and monthly subscriptions where priced, and the
user's own GPUs (`own=2xRTX3090`, marginal cost 0: see `tco` for what owning costs). Feasible = meets
the deadline (30 days when none is given; `deadline=none` lifts it) and the budget. Ranked by total cost,
verified prices before unverified ones unless the search holds nothing verified or names those providers
(`provider=`); without a job length, fewest GPUs first, then the cheapest hour. The fastest verified plan is
always listed; the Pareto front of cost vs time is marked.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import asdict, dataclass, replace
from decimal import Decimal

from .catalog import Catalog
from .gpus import GpuSpec
from .pricing import QuoteOption, cheapest_per_offer, price_table, priced_offers, select_offers, to_option
from .regions import check_selectors
from .workload import Workload, format_count

GB = 1e9
GIB = 2 ** 30
_WEIGHT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
_NON_SPOT_MODELS = ("on-demand", "reserved-1y", "reserved-3y", "monthly")
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
    pricing_model: str
    strategy: str
    hours: float | None
    total: Decimal
    currency: str
    meets_deadline: bool | None
    within_budget: bool | None
    verified: bool
    gpus_per_instance: int = 1
    effective_tflops: float | None = None  # GPUs × peak × MFU × scaling: what the plan's money buys
    pareto: bool = False
    reasons: tuple[str, ...] = ()

    @property
    def rank_key(self) -> tuple:
        """Cheapest first. With no job length known a plan is priced for one hour of the smallest configuration
        of its GPU that fits: fewest GPUs first (one GPU that holds the job beats eight faster ones, and two
        hosts linked by a network), then the cheapest hour."""
        if self.hours is None:
            return (self.gpu_count, float(self.total))
        return (float(self.total), self.hours)

    @property
    def feasible(self) -> bool:
        return self.meets_deadline is not False and self.within_budget is not False

    def to_dict(self) -> dict:
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

    def __repr__(self) -> str:
        return f"Recommendation({self.workload.describe()}: {len(self.plans)} feasible plans)"

    @property
    def best(self) -> Plan | None:
        return self.plans[0] if self.plans else None


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
    """LoRA / QLoRA memory as the papers describe it (see the module docstring), part by part."""
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


def training_flops(workload: Workload, gpus) -> float | None:
    """Total FLOPs of the job, None when neither tokens nor reference GPU-hours are given."""
    if workload.tokens:
        factor = 4 if workload.kind == "finetune" and workload.method in ("lora", "qlora") else 6
        return factor * workload.params * workload.tokens
    if workload.reference_gpu_hours:
        reference = gpus.specs[workload.reference_gpu]
        tflops = reference.dense_tflops(workload.precision)
        if tflops is None:
            return None
        return workload.reference_gpu_hours * 3600 * tflops * 1e12 * workload.assumptions.mfu
    return None


def min_gpus(memory: MemoryEstimate, spec: GpuSpec, usable: float) -> int:
    return max(1, math.ceil(memory.total_bytes / (spec.memory_gib * GIB * usable)))


def training_tflops(spec: GpuSpec, precision: str) -> float | None:
    """Peak dense TFLOPS a training run gets; fp8 on a GPU without fp8 runs at bf16/fp16 speed."""
    tflops = spec.dense_tflops(precision)
    if tflops is None and precision == "fp8":
        tflops = spec.dense_tflops("bf16")
    return tflops


def training_hours(flops: float, gpus: int, spec: GpuSpec, workload: Workload, hosts: int) -> float | None:
    tflops = training_tflops(spec, workload.precision)
    if tflops is None:
        return None
    efficiency = workload.assumptions.multi_host_efficiency if hosts > 1 else 1.0
    return flops / (gpus * tflops * 1e12 * workload.assumptions.mfu * efficiency) / 3600


def _effective_tflops(spec: GpuSpec, gpus: int, hosts: int, workload: Workload) -> float | None:
    tflops = training_tflops(spec, workload.precision)
    if tflops is None:
        return None
    efficiency = workload.assumptions.multi_host_efficiency if hosts > 1 else 1.0
    return gpus * tflops * workload.assumptions.mfu * efficiency


def spot_overhead(a) -> float:
    """Expected extra time per unit of work on spot with checkpoints."""
    return a.checkpoint_write_h / a.checkpoint_interval_h + \
        a.interruption_rate_per_h * (a.checkpoint_interval_h / 2 + a.restart_h)


def _serving_layout(memory: MemoryEstimate, spec: GpuSpec, workload: Workload, host_gpus: int):
    """(GPUs per replica, replicas, reasons): a power-of-two TP group that fits, replicas for the users."""
    a = workload.assumptions
    weights, kv_per_user = memory.parts["weights"], memory.parts["KV cache"] / workload.users
    usable = spec.memory_gib * GIB * a.usable_memory
    for replicas in range(1, workload.users + 1):
        users = math.ceil(workload.users / replicas)
        need = (weights + kv_per_user * users) * (1 + SERVING_OVERHEAD)
        tp = 1 << max(0, math.ceil(math.log2(max(1.0, need / usable))))
        if not spec.memory_bandwidth_gbs:
            return tp, replicas, ["decode speed unknown (no bandwidth in gpus.csv)"]
        step = (weights + kv_per_user * users) / (tp * spec.memory_bandwidth_gbs * 1e9 * a.bandwidth_efficiency)
        if 1 / step >= a.target_tokens_per_s or replicas == workload.users:
            reasons = [f"{tp} GPU(s) per replica × {replicas} replica(s), {users} users each: "
                       f"≈{1 / step:,.0f} tokens/s per user, ≈{users * replicas / step:,.0f} tokens/s in all"]
            if tp > host_gpus:
                reasons.append(f"a replica needs {tp} GPUs but a host has {host_gpus}: pipeline across hosts")
            return tp, replicas, reasons
    raise AssertionError("unreachable: the loop ends at replicas == users")


def recommend(workload: Workload, catalog: Catalog, *, today: dt.date, currency: str = "USD",
              top: int = 10) -> Recommendation:
    """Plans for `workload` over `catalog`; `today` dates staleness; nothing is read from the clock."""
    import numpy as np

    currency = workload.currency or currency
    check_selectors(workload.regions, catalog.offers.region.unique(), catalog.offers.country.unique())
    a = workload.assumptions
    memory = memory_needed(workload)
    flops = training_flops(workload, catalog.gpus) if workload.kind != "serve" else None
    reasoning, plans = [], []
    specs = [catalog.gpus.specs[name] for name in workload.gpus] if workload.gpus else list(catalog.gpus)
    for spec in specs:
        offers = select_offers(catalog, spec.name, providers=workload.providers, regions=workload.regions)
        if not len(offers):
            continue
        need = min_gpus(memory, spec, a.usable_memory)
        host_gpus = offers.gpu_count.to_numpy().astype(int)
        line = f"{spec.name} ({spec.memory_gib:g} GB): {memory.total_bytes / GB:,.0f} GB needs ≥ {need} " \
               f"GPU{'s' if need > 1 else ''}"
        biggest = int(host_gpus.max())
        if need > biggest:
            line += f"; one {biggest}×{spec.name} host holds {biggest * spec.memory_gib * a.usable_memory:,.0f} GB " \
                    f"usable < {memory.total_bytes / GB:,.0f} GB needed → {math.ceil(need / biggest)}+ hosts"
        if workload.kind == "serve":
            instances, durations, gpu_total, tp_by_host = [], [], [], {}
            for g in host_gpus:
                tp, replicas, notes = _serving_layout(memory, spec, workload, int(g))
                total_gpus = tp * replicas
                instances.append(math.ceil(total_gpus / g) if tp <= g else replicas * math.ceil(tp / g))
                gpu_total.append(total_gpus)
                durations.append(math.ceil(workload.serve_hours * 3600))
                tp_by_host[int(g)] = tp
            reasoning.append(line + "; " + notes[0])
            job_hours = [workload.serve_hours] * len(offers)
        else:
            tflops = training_tflops(spec, workload.precision)
            if tflops is None:
                reasoning.append(f"{spec.name}: no dense {workload.precision} TFLOPS known (gpus.csv): not planned "
                                 "for training")
                continue
            instances, durations, gpu_total, job_hours = [], [], [], []
            per_gpu = training_hours(flops, 1, spec, workload, 1) if flops else None
            # Size for the slowest strategy offered, so that spot with its checkpoint overhead meets it too.
            slowdown = 1 + spot_overhead(a) if workload.may_interrupt else 1
            for g in host_gpus:
                count = max(1, math.ceil(need / g))
                if per_gpu is not None and workload.deadline_s:
                    deadline_h = workload.deadline_s / 3600 / slowdown
                    single = math.ceil(per_gpu / (deadline_h * g))
                    count = max(count, single if single <= 1 else
                                math.ceil(per_gpu / (deadline_h * g * a.multi_host_efficiency)))
                count = min(count, a.max_instances)
                hours = training_hours(flops, count * int(g), spec, workload, count) if flops else None
                instances.append(count)
                gpu_total.append(count * int(g))
                job_hours.append(hours)
                durations.append(math.ceil((hours if hours else 1) * 3600))
            if per_gpu is not None:
                line += f"; {per_gpu:,.0f} GPU-hours at {tflops:g} TFLOPS × MFU {a.mfu:g}"
            if spec.dense_tflops(workload.precision) is None:
                line += f" (no {workload.precision} on {spec.name}: bf16/fp16 speed)"
            reasoning.append(line)
        offer_plans = _offer_plans(workload, catalog, offers, np.array(instances), np.array(durations), job_hours,
                                   gpu_total, currency, today)
        if workload.kind == "serve":
            offer_plans = [_split_replica_refused(p, tp_by_host) for p in offer_plans]
        else:
            offer_plans = [replace(p, effective_tflops=_effective_tflops(spec, p.gpu_count, p.instances, workload))
                           for p in offer_plans]
        plans += offer_plans
    plans += _own_plans(workload, catalog, memory, flops, currency)
    budget = _budget_in(workload, catalog, currency)
    judged = _mark_pareto([_judge(p, workload, budget) for p in plans])
    ranked = _ranked_providers(workload, judged)
    feasible = sorted((p for p in judged if p.feasible), key=lambda p: (not _trusted(p, ranked), p.rank_key))
    rejected = sorted((p for p in judged if not p.feasible), key=lambda p: p.rank_key)
    return Recommendation(workload=workload, memory=memory, plans=tuple(_with_fastest(feasible, top, ranked)),
                          rejected=tuple(_one_per_gpu(rejected)), reasoning=tuple(reasoning),
                          assumptions=tuple(describe_assumptions(workload, memory, flops)), currency=currency)


def _trusted(plan: Plan, ranked: set[str]) -> bool:
    return plan.verified or plan.provider in ranked


def _ranked_providers(workload: Workload, plans: list[Plan]) -> set[str]:
    """Providers whose unverified plans rank with verified ones: all when the search holds nothing verified
    (the user restricted it to such providers), else those named with `provider=`."""
    if not any(p.verified and p.provider != "own" for p in plans):
        return {p.provider for p in plans}
    return set(workload.providers)


def _with_fastest(feasible: list[Plan], top: int, ranked: set[str]) -> list[Plan]:
    """The `top` cheapest plans, and the fastest trusted plan too when it is not among them."""
    shown = feasible[:top]
    timed = [p for p in feasible if p.hours is not None and _trusted(p, ranked)]
    if timed:
        fastest = min(timed, key=lambda p: (p.hours, float(p.total)))
        if fastest not in shown:
            shown.append(replace(fastest, reasons=("the fastest plan", *fastest.reasons)))
    return shown


def _offer_plans(workload, catalog, offers, instances, durations, job_hours, gpu_total, currency, today) -> list[Plan]:
    import numpy as np
    import pandas as pd

    a = workload.assumptions
    hours_by_index = dict(zip(offers.index, job_hours))
    gpus_by_index = dict(zip(offers.index, gpu_total))
    frames = [price_table(offers, instances=instances, duration_s=durations, models=_NON_SPOT_MODELS, fx=catalog.fx,
                          currency=currency)[0]]
    if workload.may_interrupt:
        # Training on spot runs longer by the checkpoint overhead; serving on spot is priced for the same hours.
        slowdown = 1 + spot_overhead(a) if workload.kind != "serve" else 1
        frames.append(price_table(offers, instances=instances, duration_s=np.ceil(durations * slowdown).astype(int),
                                  models=("spot",), fx=catalog.fx, currency=currency)[0])
    table = cheapest_per_offer(pd.concat(frames, ignore_index=True), all_regions=False)
    plans = []
    for priced, offer in priced_offers(table, catalog):
        option = to_option(priced, offer, gpus_by_index[priced.offer], catalog, currency, today)
        base_hours = hours_by_index[priced.offer]
        plans.append(_plan_from_option(option, workload, base_hours, gpus_by_index[priced.offer]))
        if priced.pricing_model == "spot" and workload.kind != "serve" and option.instances >= 2 \
                and not math.isnan(offer.on_demand_hourly):
            plans.append(_mixed_plan(option, offer, workload, base_hours, gpus_by_index[priced.offer], catalog,
                                     currency))
    return plans


def _split_replica_refused(plan: Plan, tp_by_host: dict[int, int]) -> Plan:
    """Tensor parallelism across hosts is too slow to serve from: such a plan is shown as rejected."""
    tp = tp_by_host.get(plan.gpus_per_instance, 1)
    if tp <= plan.gpus_per_instance:
        return plan
    reason = f"a tensor-parallel group of {tp} GPUs would span hosts of {plan.gpus_per_instance}: choose a larger host"
    return replace(plan, meets_deadline=False, reasons=(reason, *plan.reasons))


def _plan_from_option(option: QuoteOption, workload: Workload, base_hours, gpu_total) -> Plan:
    hours = base_hours
    # What the reader must weigh first: an unverified or stale price leads the plan's notes.
    reasons = sorted(option.notes, key=lambda n: not n.startswith(("unverified", "stale", "price date")))
    strategy = option.pricing_model
    if option.pricing_model == "spot" and workload.kind != "serve" and base_hours is not None:
        overhead = spot_overhead(workload.assumptions)
        hours = base_hours * (1 + overhead)
        strategy = "spot + checkpoints"
        reasons = [r for r in reasons if not r.startswith("spot: may be interrupted")]
        reasons.insert(0, f"checkpoint every {workload.assumptions.checkpoint_interval_h * 60:g} min: "
                          f"+{overhead:.0%} expected time for writes and lost work")
    return Plan(gpu=option.gpu, gpu_count=gpu_total, instances=option.instances, provider=option.provider,
                region=option.region, zone=option.zone, instance_type=option.instance_type,
                pricing_model=option.pricing_model, strategy=strategy, hours=hours, total=option.total,
                currency=option.currency, meets_deadline=None, within_budget=None, verified=option.verified,
                gpus_per_instance=option.gpu_count, reasons=tuple(reasons))


def _mixed_plan(spot: QuoteOption, row, workload, base_hours, gpu_total, catalog, currency) -> Plan:
    """`spot_share` of the instances on spot, the rest on demand: interruptions slow only the spot part."""
    from .pricing import exact

    a = workload.assumptions
    on_demand_instances = max(1, round(spot.instances * (1 - a.spot_share)))
    spot_instances = spot.instances - on_demand_instances
    on_demand_hourly = catalog.fx.convert(exact(row.on_demand_hourly), row.currency, currency)
    hours = None if base_hours is None else base_hours * (1 + spot_overhead(a) * spot_instances / spot.instances)
    billed = spot.billed_hours
    total = (spot.hourly * spot_instances + on_demand_hourly * on_demand_instances) * billed
    reasons = (f"{spot_instances} spot + {on_demand_instances} on-demand instances: the on-demand part keeps "
               "the job alive through interruptions", *spot.notes)
    return Plan(gpu=spot.gpu, gpu_count=gpu_total, instances=spot.instances, provider=spot.provider,
                region=spot.region, zone=spot.zone, instance_type=spot.instance_type, pricing_model="spot+on-demand",
                strategy=f"{a.spot_share:.0%} spot + {1 - a.spot_share:.0%} on-demand", hours=hours, total=total,
                currency=currency, meets_deadline=None, within_budget=None, verified=spot.verified,
                gpus_per_instance=spot.gpu_count, reasons=reasons)


def _own_plans(workload, catalog, memory, flops, currency) -> list[Plan]:
    plans = []
    for name, count in workload.own:
        spec = catalog.gpus.specs[name]
        fits = count * spec.memory_gib * GIB * workload.assumptions.usable_memory >= memory.total_bytes
        hours = training_hours(flops, count, spec, workload, 1) if flops and workload.kind != "serve" else None
        reasons = ["own hardware: marginal cost 0 (power and operations not counted; see `tco`)",
                   "hybrid: develop here, burst to the cloud plans below for deadlines"]
        if not fits:
            reasons.insert(0, f"{count}×{name}: {count * spec.memory_gib:g} GB < {memory.total_bytes / GB:,.0f} GB "
                              "needed")
        plans.append(Plan(gpu=name, gpu_count=count, instances=1, provider="own", region="", zone="",
                          instance_type=f"{count}x{name}", pricing_model="own", strategy="own GPUs",
                          hours=hours if fits else None, total=Decimal(0), currency=currency,
                          meets_deadline=None if fits else False, within_budget=None, verified=True,
                          gpus_per_instance=count, reasons=tuple(reasons)))
    return plans


def _budget_in(workload, catalog, currency):
    if workload.budget is None:
        return None
    return catalog.fx.convert(workload.budget, workload.currency or currency, currency)


def _judge(plan: Plan, workload: Workload, budget) -> Plan:
    reasons = list(plan.reasons)
    meets = plan.meets_deadline
    if meets is None and workload.deadline_s and plan.hours is not None and workload.kind != "serve":
        deadline_h = workload.deadline_s / 3600
        meets = plan.hours <= deadline_h
        if not meets:
            reasons.insert(0, f"takes {plan.hours:,.0f} h > deadline {deadline_h:g} h")
    within = None
    priced_per_hour = plan.hours is None and workload.kind != "serve" and plan.provider != "own"
    if budget is not None and not priced_per_hour:
        within = plan.total <= budget
        if not within:
            reasons.insert(0, f"costs {plan.total:,.0f} {plan.currency} > budget {budget:,.0f} {plan.currency}")
    return replace(plan, meets_deadline=meets, within_budget=within, reasons=tuple(reasons))


def _mark_pareto(plans: list[Plan]) -> list[Plan]:
    """A plan is on the front when no other plan is both cheaper-or-equal and faster-or-equal (one strictly)."""
    timed = [p for p in plans if p.hours is not None and p.meets_deadline is not False and p.provider != "own"]
    front = set()
    for p in timed:
        dominated = any((q.total <= p.total and q.hours <= p.hours) and (q.total < p.total or q.hours < p.hours)
                        for q in timed)
        if not dominated:
            front.add(id(p))
    return [replace(p, pareto=True) if id(p) in front else p for p in plans]


def _one_per_gpu(rejected: list[Plan]) -> list[Plan]:
    seen, kept = set(), []
    for plan in rejected:
        if plan.gpu not in seen:
            seen.add(plan.gpu)
            kept.append(plan)
    return kept


def describe_assumptions(workload: Workload, memory: MemoryEstimate, flops: float | None) -> list[str]:
    a = workload.assumptions
    lines = [f"memory: {memory.describe()}"]
    if workload.kind != "serve":
        if workload.deadline_assumed:
            lines.append(f"deadline: {workload.deadline_s / 86400:g} days (none given; deadline=none lifts it)")
        elif workload.deadline_s is None:
            lines.append("deadline: none (the cheapest plans may take long)")
    if workload.kind == "serve":
        layers, d_model = transformer_shape(workload.params)
        lines.append(f"serving {workload.users} users × {a.context_tokens} tokens of context; model shape "
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
