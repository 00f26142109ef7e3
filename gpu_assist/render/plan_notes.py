"""The words of a plan's reasons (its spot strategy, network, capacity, quota, what it misses, why an offer cannot
run the job) and of a commitment's. Registered on `note_words.words` when imported (`render/notes.py` imports every
such module)."""

from __future__ import annotations

import math

from .. import facts as f
from ..plural import plural
from .note_words import words

# The Spot Advisor's interruption bands as its page words them (a band is a number in `facts.FleetSpotRisk`).
_BAND_WORDS = {0: "<5 %", 1: "5-10 %", 2: "10-15 %", 3: "15-20 %", 4: ">20 %"}


# --- a plan's reasons --------------------------------------------------------------------------------------------

@words.register(f.Checkpointing)
def _checkpointing(fact: f.Checkpointing) -> str:
    return f"checkpoint every {fact.interval_min:g} min: +{fact.overhead:.0%} expected time for writes and lost work"


@words.register(f.MixedFleet)
def _mixed_fleet(fact: f.MixedFleet) -> str:
    return f"{fact.spot:,} spot + {fact.on_demand:,} on-demand instances: the on-demand part keeps the job alive " \
        "through interruptions"


# Interconnect, fleet-scale spot risk, capacity and quota: what a plan can run on, and get.
def _gbps(gbps: float | None) -> str:
    return "bandwidth not stated" if gbps is None else f"{gbps:,.4g} Gbps"


@words.register(f.Fabric)
def _fabric(fact: f.Fabric) -> str:
    network = f"{fact.fabric}, {_gbps(fact.gbps)}" if fact.fabric else "a network no source states"
    if fact.hosts <= 1:
        return f"one {fact.instance_type} host; network to others: {network}"
    if fact.scaling is None:  # serving replicas, each inside its host
        return f"{network} between {fact.hosts:,} {fact.instance_type} hosts, each serving on its own"
    scaled = fact.scaling
    basis = {"network": "from the network", "override": "yours", "assumed": "assumed: bandwidth unknown"}.get(
        scaled.basis, scaled.basis)
    return f"{network} between {fact.hosts:,} {fact.instance_type} hosts: scaling {scaled.efficiency:.0%} ({basis})"


@words.register(f.Scaling)
def _scaling(fact: f.Scaling) -> str:
    return f"scaling {fact.efficiency:.0%} over {plural(fact.hosts, 'host')} ({fact.basis})"


@words.register(f.NoFabric)
def _no_fabric(fact: f.NoFabric) -> str:
    network = f"{fact.fabric}, {_gbps(fact.gbps)}" if fact.fabric else "a network no source states"
    return f"needs {fact.hosts:,} hosts linked by {network}: sharded training over more than 2 hosts needs EFA, " \
        "InfiniBand, RoCE or GPUDirect at ≥ 100 Gbps"


def _rate_source(fact: f.FleetSpotRisk) -> str:
    if fact.band is None:
        return "default rate, no Spot Advisor band"
    return f"Spot Advisor {fact.region} {_BAND_WORDS[fact.band]}/month, {fact.as_of}"


@words.register(f.FleetSpotRisk)
def _fleet_spot_risk(fact: f.FleetSpotRisk) -> str:
    chance = "" if fact.chance is None else \
        f"; {'over 99%' if fact.chance > 0.99 else format(fact.chance, '.0%')} chance to finish by the deadline"
    rate = f"{fact.rate_per_h:.2g}" if fact.rate_per_h >= 0.01 else f"{fact.rate_per_h:.6f}".rstrip("0")
    return f"spot, {fact.instances:,} instance{'s' if fact.instances != 1 else ''} × {rate} " \
        f"interruptions/h ({_rate_source(fact)}), checkpoint every {fact.interval_min:g} min: " \
        f"+{fact.overhead:.0%} expected time{chance}"


@words.register(f.SpotOverheadHigh)
def _spot_overhead_high(fact: f.SpotOverheadHigh) -> str:
    return f"spot overhead +{fact.overhead:.0%} > {fact.limit:.0%}: ranked behind plans that are not interrupted " \
        "as often"


@words.register(f.MarketplaceHosts)
def _marketplace_hosts(fact: f.MarketplaceHosts) -> str:
    return f"needs {fact.instances:,} hosts but the marketplace listing is {plural(fact.listed, 'machine')}"


@words.register(f.QuotaNeeded)
def _quota_needed(fact: f.QuotaNeeded) -> str:
    known = "quota unknown (no AWS credentials checked)" if fact.granted is None else \
        f"the account has {fact.granted:,}"
    return f"needs {fact.vcpus:,} vCPUs of quota {fact.code} ({fact.name}); {known}"


@words.register(f.CapacityBlock)
def _capacity_block(fact: f.CapacityBlock) -> str:
    blocks = math.ceil(fact.instances / fact.per_block)
    split = "one block" if blocks == 1 else f"{blocks} blocks of ≤ {fact.per_block}"
    return f"AWS Capacity Block: {plural(fact.instances, 'instance')} reserved for {plural(fact.days, 'day')} " \
        f"({split}, each in one zone), " \
        f"price as published {fact.as_of} ({fact.source}); AWS reprices blocks by supply and demand"


@words.register(f.Folded)
def _folded(fact: f.Folded) -> str:
    return "also as " + ", ".join(fact.splits) + " (same GPUs, price and time)"


@words.register(f.OwnTooSmall)
def _own_too_small(fact: f.OwnTooSmall) -> str:
    return f"{fact.count}×{fact.gpu} hold {fact.usable_gb:,.0f} GB usable < {fact.needed_gb:,.0f} GB needed"


@words.register(f.OverDeadline)
def _over_deadline(fact: f.OverDeadline) -> str:
    return f"takes {fact.hours:,.0f} h > deadline {fact.deadline_h:g} h"


@words.register(f.OverBudget)
def _over_budget(fact: f.OverBudget) -> str:
    return f"costs {fact.total:,.0f} {fact.currency} > budget {fact.budget:,.0f} {fact.currency}"


def _instance_cap(instances: int, max_instances: int) -> str:
    """The cap an offer needing `instances` instances is refused under, and the word that lifts it."""
    return f"max_instances is {max_instances:,} (max_instances={instances} lifts it)"


@words.register(f.TooManyToHold)
def _too_many_to_hold(fact: f.TooManyToHold) -> str:
    return f"needs {fact.instances:,} instances of {fact.host_gpus}×{fact.gpu} ({fact.gpus:,} GPUs) to hold " \
        f"{fact.needed_gb:,.0f} GB; {_instance_cap(fact.instances, fact.max_instances)}"


@words.register(f.TooManyToServe)
def _too_many_to_serve(fact: f.TooManyToServe) -> str:
    return f"needs {fact.instances:,} instances of {fact.host_gpus}×{fact.gpu} ({fact.gpus:,} GPUs) to serve " \
        f"{fact.users:,} users; {_instance_cap(fact.instances, fact.max_instances)}"


@words.register(f.GroupSpansHosts)
def _group_spans_hosts(fact: f.GroupSpansHosts) -> str:
    return f"a tensor-parallel group of {fact.tp:,} GPUs would span hosts of {fact.host_gpus}: choose a larger host"


@words.register(f.Refused)
def _refused(fact: f.Refused) -> str:
    return fact.text


# --- commitments ---------------------------------------------------------------------------------------------------

@words.register(f.CommitUnsteady)
def _commit_unsteady(fact: f.CommitUnsteady) -> str:
    return (f"use is not steady enough: the lowest month ran {fact.lowest_hours:,.0f} instance-hours, and one "
            f"{fact.model} instance needs {fact.needed_hours:,.0f} a month to break even")


@words.register(f.CommitHistoryShort)
def _commit_history_short(fact: f.CommitHistoryShort) -> str:
    if fact.wanted >= 12:
        return f"a 3-year term is recommended only after {fact.wanted} months of history; {fact.months} recorded"
    return f"only {plural(fact.months, 'whole month')} of recorded launches, of the {fact.wanted} asked for"


@words.register(f.CommitNoPrice)
def _commit_no_price(fact: f.CommitNoPrice) -> str:
    return f"no verified {fact.model} price in the catalog"


@words.register(f.CommitNoHistory)
def _commit_no_history(fact: f.CommitNoHistory) -> str:
    return f"no launches recorded in the last {plural(fact.months, 'whole month')}: nothing to plan from"
