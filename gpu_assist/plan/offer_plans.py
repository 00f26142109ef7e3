"""The plans a cloud's offers make: each offer's cheapest region per way of buying it (on demand, spot with
checkpoints, a mixed spot + on-demand fleet, reserved terms, monthly subscriptions), through the same price table
and the same filters as a quote, and AWS Capacity Blocks. Pure; the formulas are `recommendation`'s docstring."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any, NamedTuple

from .. import facts
from ..catalog.fabric import BLOCK_MAX_INSTANCES, Link, PlanData, SpotBand, block_days
from ..catalog.fx import FxRates
from ..catalog.gpus import GpuSpec
from ..catalog.offers import MARKETPLACES, Offer
from ..facts import Fact, PricingModel
from ..pricing.price_table import billed_units, cheapest_per_offer, price_table
from ..pricing.query import HOUR_S
from ..pricing.quote import QuoteOption, edge_spot, to_option
from .plans import CAPACITY_BLOCK, Plan
from .sizing import (
    HostFacts,
    OfferSizes,
    block_size,
    effective_tflops,
    finish_chance,
    spot_overhead,
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


def host_facts(offer: Offer, workload: Workload, data: PlanData) -> HostFacts:
    """An offer's network, its per-instance spot rate (the Spot Advisor's band where it gives one, unless the user
    set `interruption_rate=`) and the hosts a marketplace listing has."""
    rate = None
    if workload.may_interrupt and workload.kind != "serve" and offer.spot_hourly is not None:
        band = data.band(offer.provider, offer.region, offer.instance_type)
        rate = band.rate_per_h if band and "interruption_rate_per_h" not in workload.overridden else \
            workload.assumptions.interruption_rate_per_h
    return HostFacts(data.link(offer.provider, offer.instance_type), rate,
                     1 if offer.provider in MARKETPLACES else None)


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


def memory_gib(offer: Offer, spec: GpuSpec) -> float:
    """Memory per GPU as the offer lists it (a cloud may list less than the datasheet), else the datasheet's."""
    return offer.gpu_memory_gib or spec.memory_gib


def offer_plans(workload: Workload, spec: GpuSpec, offers: Sequence[Offer], sizes: OfferSizes,
                hosts: Sequence[HostFacts], fx: FxRates, currency: str, today: dt.date,
                data: PlanData, *, include_flagged: bool = False) -> list[Plan]:
    """Each offer's cheapest region per pricing model as a plan: through the same price table and filters as a
    quote, so a price the catalogs flag (a zone's spot outlier, a resale below its source's own price) plans only
    with `include_flagged`, and a Local Zone's spot price only where the search names the zone."""
    table = price_table(offers, instances=sizes.instances, duration_s=sizes.duration_s, models=_NON_SPOT_MODELS,
                        fx=fx, currency=currency, include_flagged=include_flagged)[0]
    a = workload.assumptions
    if workload.may_interrupt:
        # Training on spot runs longer by its fleet's expected overhead; serving on spot is priced for the same hours.
        slowdown = [1 + spot_overhead(a, n, host.spot_rate) if workload.kind != "serve" and host.spot_rate is not None
                    else 1 for n, host in zip(sizes.instances, hosts)]
        longer = [math.ceil(seconds * slow) for seconds, slow in zip(sizes.duration_s, slowdown)]
        spot = price_table(offers, instances=sizes.instances, models=(PricingModel.SPOT,), fx=fx, currency=currency,
                           duration_s=longer, include_flagged=include_flagged)[0]
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
        sized = _Sized(gpus, memory_gib(priced.offer, spec), None if workload.kind == "serve" else
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


def block_plans(workload: Workload, spec: GpuSpec, offers: Sequence[Offer], data: PlanData, flops: float,
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
        sized = block_size(workload, spec, g, memory_gib(offer, spec), flops, link, 4 * BLOCK_MAX_INSTANCES)
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
                          gpu_memory_gib=memory_gib(offer, spec),
                          effective_tflops=effective_tflops(spec, instances * g, scaled.efficiency, workload),
                          reasons=tuple(reasons)))
    return plans
