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
(30 days when none is given; `deadline=none` lifts it) and the budget. A fine-tune given no `tokens=` is one
epoch of `DEFAULT_DATASET` (said once in the answer), so its plans have times and totals too.

Ranked (`ranking`): among the plans that meet the deadline, the lowest expected total first; a spot plan's total
carries its interruption overhead and checkpoints, and only jobs that checkpoint (train, finetune) are planned on
spot unless `spot` is asked: a serving plan never is. Verified prices come before unverified ones unless the
search holds nothing verified or names those providers (`provider=`); without a job length, fewest GPUs first,
then the cheapest hour. `sort=fastest` and `sort=fewest-gpus` order by time or by GPUs instead. A provider's
other host sizes of one GPU, bought the same way, fold into the first; exactly `top` plans are shown, the
fastest and the cheapest Capacity Block named beside them when not among them; the Pareto front of cost vs
time is marked.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from ..catalog import Catalog, default_catalog_dir
from ..catalog.fabric import PlanData, plan_data_for
from ..catalog.regions import check_selectors
from ..facts import Fact
from ..pricing.price_table import select_offers
from .checkpoint_storage import with_checkpoint_storage
from .offer_plans import block_plans, host_facts, memory_gib, offer_plans
from .own_gpus import own_plans
from .plans import DatasetAssumed, NoRate, Plan
from .ranking import judge, left_out, mark_pareto, one_per_gpu, ordered, ranked_providers, shown_and_beside
from .sizing import (
    CALIBRATION,
    GpuSizing,
    MemoryEstimate,
    MissingRate,
    NotPlanned,
    calibrated,
    memory_needed,
    size_offers,
    sizing_basis,
    training_flops,
)
from .workload import Workload

__all__ = ["DEFAULT_DATASET", "Plan", "Recommendation", "recommend"]

# What a fine-tune without `tokens=` is planned for: one epoch of a general instruction-tuning mix, Intel's
# neural-chat-dataset v1.1 ("about 1.1M samples and 326M tokens", the card on huggingface.co, commit ac1d75d,
# observed 2026-12-06; SOURCES-plans.txt S-FT-DATASET). A mid-sized open mix: Alpaca's 52K examples are far less,
# a pretraining-scale continued run far more; `tokens=` says what yours is.
DEFAULT_DATASET = DatasetAssumed(
    tokens=326e6, samples=1.1e6, dataset="Intel neural-chat-dataset v1.1",
    source="huggingface.co/datasets/Intel/neural-chat-dataset-v1-1")


@dataclass(frozen=True)
class Recommendation:
    workload: Workload
    memory: MemoryEstimate
    plans: tuple[Plan, ...]           # the feasible plans shown, `top` of them, in the order `sort` asks
    rejected: tuple[Plan, ...]        # infeasible, each with its reasons, the closest per GPU
    reasoning: tuple[GpuSizing, ...]  # per GPU type: fits? how many? how fast?
    assumptions: tuple[Fact, ...]     # what the answer rests on (`sizing_basis`)
    currency: str
    not_planned: tuple[NotPlanned, ...] = ()  # GPU types of the search no plan was made for, and why
    # The scaling model against published figures: (what, source, published, model, note), for `--explain`.
    calibration: tuple[tuple[str, str, float, float, str], ...] = ()
    feasible: int = 0                  # feasible plans in all, after folding: what `top=all` shows
    beside: tuple[Plan, ...] = ()      # not among `plans` but worth naming: the fastest, the cheapest Capacity Block
    # Each GPU type of the search without a feasible plan, and the first reason why (`NoRate`, or its closest
    # plan's refusal), for the one line that counts them.
    left_out: tuple[tuple[str, Fact], ...] = ()
    sort: str = "cost"                 # `PLAN_SORTS`
    dataset: DatasetAssumed | None = None  # the job length assumed for a fine-tune given no `tokens=`

    def __repr__(self) -> str:
        return f"Recommendation({self.workload.describe()}: {len(self.plans)} of {self.feasible} feasible plans)"


def recommend(workload: Workload, catalog: Catalog, *, today: dt.date, currency: str = "USD",
              top: int | None = 10, plan_data: PlanData | None = None, sort: str = "cost",
              include_flagged: bool = False) -> Recommendation:
    """Plans for `workload` over `catalog` (`top` of them; None: every one, as `top=all` asks) in the order `sort`
    asks (`PLAN_SORTS`); `today` dates staleness; nothing is read from the clock. `plan_data`: fabrics, spot bands
    and Capacity Blocks (default: the catalog's `sources/`, else the bundled ones). `include_flagged` plans on
    prices the catalogs flag, as `quote … include-flagged` shows them."""
    currency = workload.currency or currency
    data = plan_data if plan_data is not None else plan_data_for(catalog.directory, default_catalog_dir())
    if workload.regions:
        check_selectors(workload.regions, catalog.region_providers, catalog.countries,
                        example="recommend train 7B region=eu")
    dataset = None
    if workload.kind == "finetune" and workload.tokens is None and workload.reference_gpu_hours is None:
        dataset = DEFAULT_DATASET
        workload = replace(workload, tokens=dataset.tokens)
    memory = memory_needed(workload)
    flops = training_flops(workload, catalog.gpus) if workload.kind != "serve" else None
    reasoning: list[GpuSizing] = []
    plans: list[Plan] = []
    unplanned: dict[str, NoRate] = {}
    not_planned: dict[MissingRate, list[str]] = {}  # why → the GPUs of the search left out for it
    specs = [catalog.gpus.specs[name] for name in workload.gpus] if workload.gpus else list(catalog.gpus)
    searched: list[str] = []
    for spec in specs:
        offers = select_offers(catalog, spec.name, providers=workload.providers, regions=workload.regions)
        if not offers:
            continue
        searched.append(spec.name)
        hosts = [host_facts(o, workload, data) for o in offers]
        sized, sizes = size_offers(workload, spec, [int(o.gpu_count) for o in offers],
                                   [memory_gib(o, spec) for o in offers], memory, flops, hosts)
        reasoning.append(sized)
        if sizes is not None:
            plans += offer_plans(workload, spec, offers, sizes, hosts, catalog.fx, currency, today, data,
                                 include_flagged=include_flagged)
            if flops and workload.kind != "serve":
                plans += block_plans(workload, spec, offers, data, flops, catalog.fx, currency)
        elif sized.missing is not None:
            not_planned.setdefault(sized.missing, []).append(spec.name)
            unplanned[spec.name] = NoRate(sized.missing.precision, sized.missing.others)
    plans += own_plans(workload, catalog.gpus, memory, flops, currency)
    plans = [with_checkpoint_storage(plan, workload, memory, catalog, currency) for plan in plans]
    budget = None if workload.budget is None else catalog.fx.convert(workload.budget, workload.currency or currency,
                                                                      currency)
    judged = [judge(p, workload, budget) for p in plans]
    ranked = ranked_providers(workload, judged)
    feasible = [p for p in judged if p.feasible]
    rows = mark_pareto(ordered(feasible, sort, ranked))  # the front of the rows a reader can see
    shown, beside = shown_and_beside(rows, feasible, top, sort, ranked)
    # The closest per GPU: a plan that could run the job (late, over budget) before one refused outright.
    rejected = one_per_gpu(sorted((p for p in judged if not p.feasible), key=lambda p: (not p.fits, p.rank_key)))
    return Recommendation(workload=workload, memory=memory, plans=tuple(shown), rejected=tuple(rejected),
                          reasoning=tuple(reasoning),
                          assumptions=sizing_basis(workload, memory, flops), currency=currency,
                          not_planned=tuple(NotPlanned(tuple(names), why) for why, names in not_planned.items()),
                          calibration=tuple((p.name, p.source, p.published, calibrated(p, catalog.gpus), p.note)
                                            for p in CALIBRATION) if workload.kind != "serve" else (),
                          feasible=len(rows), beside=tuple(beside),
                          left_out=left_out(searched, unplanned, feasible, rejected), sort=sort, dataset=dataset)
