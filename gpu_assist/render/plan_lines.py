"""The short lines of a recommendation as text: one line of reasons under each plan, the ranking rule in one
sentence, the GPU types left out counted on one line, and what every plan shares said once. `--explain`, JSON and
the notebook keep every fact in full (`notes.words`); these are for reading the plans at a glance."""

from __future__ import annotations

from collections import Counter
from functools import singledispatch

from .. import facts as f
from ..catalog.regions import PLACEHOLDER_REGIONS
from ..facts import Fact
from ..plan.plans import PLAN_SORTS, NoRate, OtherPackings, Plan
from ..plan.recommendation import Recommendation
from ..plural import plural
from .money import format_hours
from .notes import words
from .plan_choice_notes import cost

# Said once under the plans (`shared`), or only in full (`explain`, JSON): not on a plan's line.
_SHARED = (f.QuotaNeeded, f.PartCost, f.PartsUnknown, f.SpotInterruption, f.Hybrid, f.PricedFrom, f.Converted,
           f.BilledLonger, f.DateUnknown)


@singledispatch
def short(fact: Fact) -> str | None:
    """A fact in the few words of a plan's line; None: said once under the plans, or not worth the line."""
    return None if isinstance(fact, _SHARED) else words(fact)


@short.register(f.FleetSpotRisk)
def _fleet_spot_risk(fact: f.FleetSpotRisk) -> str:
    # The chance to finish in time only where it is in doubt: over 99 % it is the rule, and `explain` says it.
    chance = "" if fact.chance is None or fact.chance > 0.99 else f", {fact.chance:.0%} chance to finish in time"
    rate = "" if fact.band is not None else " (default rate)"
    return f"spot +{fact.overhead:.0%} time{rate}{chance}"


@short.register(f.SpotOverheadHigh)
def _spot_overhead_high(fact: f.SpotOverheadHigh) -> str:
    return f"spot overhead +{fact.overhead:.0%} over the {fact.limit:.0%} limit: ranked behind"


@short.register(f.Fabric)
def _fabric(fact: f.Fabric) -> str | None:
    if fact.hosts <= 1:
        return None
    network = f"{fact.fabric.split(' (')[0]} {fact.gbps:,.0f} Gbps" if fact.fabric and fact.gbps else \
        fact.fabric or "an unstated network"
    scaling = "" if fact.scaling is None else f", {fact.scaling.efficiency:.0%} scaling"
    return f"{fact.hosts:,} hosts on {network}{scaling}"


@short.register(f.MixedFleet)
def _mixed_fleet(fact: f.MixedFleet) -> str:
    return f"{fact.spot:,} spot + {fact.on_demand:,} on-demand instances"


@short.register(f.CapacityBlock)
def _capacity_block(fact: f.CapacityBlock) -> str:
    return f"AWS Capacity Block of {fact.days} days at the price published {fact.as_of}"


@short.register(OtherPackings)
def _packings(fact: OtherPackings) -> str:
    shown = [f"{instances:,}× {instance_type} {cost(hourly, total, currency)}"
             for instances, instance_type, _, hourly, total, currency in fact.packings[:2]]
    more = len(fact.packings) - len(shown)
    return "also as " + ", ".join(shown) + (f" and {plural(more, 'other size')}" if more else "")


@short.register(f.Unverified)
def _unverified(fact: f.Unverified) -> str:
    return "unverified price"


@short.register(f.Stale)
def _stale(fact: f.Stale) -> str:
    return f"stale price ({fact.days:,} days old)"


@short.register(f.OwnHardware)
def _own(fact: f.OwnHardware) -> str:
    return "your own GPUs: marginal cost 0 (see tco)"


def reasons_line(plan: Plan) -> str:
    """A plan's reasons in a few words each, the weightiest first."""
    said = [text for text in map(short, plan.reasons) if text]
    return "; ".join(dict.fromkeys(said))


def ranking_rule(result: Recommendation) -> str:
    """The order the plans are in, as one sentence."""
    workload = result.workload
    timed = any(plan.hours is not None for plan in (*result.plans, *result.beside))
    others = " or ".join(f"sort={name}" for name in PLAN_SORTS if name != result.sort) + " reorders them"
    if result.sort == "fastest":
        return f"Ranked: by expected time, the shortest first (spot plans include their interruptions); {others}."
    if result.sort == "fewest-gpus":
        return f"Ranked: by GPU count, the fewest first, then the lowest expected total; {others}."
    if not timed:
        return "Ranked: fewest GPUs first, then the cheapest hour: the job has no length (tokens=… gives each plan a " \
               f"time and a total and ranks them by it); {others}."
    if workload.kind == "serve":
        spot = "spot plans too, as `spot` asked: a replica may be taken back at any time" \
            if workload.may_interrupt else "a serving plan never runs on spot unless `spot` is asked"
        return f"Ranked: by the lowest total for {format_hours(workload.serve_hours)} of serving; {spot}; {others}."
    spot = "spot plans carry their interruption overhead and checkpoints (interruptible=no leaves spot out)" \
        if workload.may_interrupt else "no spot, as interruptible=no asks"
    deadline = f"among plans that meet the {workload.deadline_s / 86400:g}-day deadline, " if workload.deadline_s \
        else ""
    return f"Ranked: {deadline}the lowest expected total first; {spot}; {others}."


# A left-out GPU type's reason in a few words, by the reason's type.
_LEFT_OUT = {f.MarketplaceHosts: "a marketplace listing is one machine", f.NoFabric: "no stated network to span hosts",
             f.TooManyToHold: "too small", f.TooManyToServe: "too many instances to serve",
             f.GroupSpansHosts: "hosts too small for a serving group", f.OverDeadline: "too slow for the deadline",
             f.OverBudget: "over budget"}


def _left_out_why(fact: Fact) -> str:
    if isinstance(fact, NoRate):
        return f"{'/'.join(fact.others)} only" if fact.others else f"no {fact.precision} rate known"
    return _LEFT_OUT.get(type(fact), "other reasons")


def left_out_line(result: Recommendation) -> str | None:
    """The GPU types of the search without a feasible plan, counted by why, on one line."""
    if not result.left_out:
        return None
    counts = Counter(_left_out_why(why) for _, why in result.left_out)
    reasons = ", ".join(f"{why} for {count}" for why, count in counts.most_common())
    return f"{plural(len(result.left_out), 'GPU type')} not planned: {reasons} — `explain` lists them"


def shared(result: Recommendation) -> list[str]:
    """What the shown plans share, said once: the quotas AWS plans need, the checkpoints' storage, and how many
    plans' prices are undated."""
    reasons = [r for plan in result.plans for r in plan.reasons]
    lines = []
    codes = sorted({r.code for r in reasons if isinstance(r, f.QuotaNeeded) and r.granted is None})
    if codes:
        lines.append(f"AWS plans need vCPU quota ({', '.join(codes)}), not checked without credentials")
    unpriced = any(isinstance(r, f.PartsUnknown) for r in reasons)
    if unpriced or any(isinstance(r, f.PartCost) for r in reasons):
        lines.append("spot totals include checkpoint storage" +
                     (" where a source prices it (`explain` says where none does)" if unpriced else ""))
    undated = sum(any(isinstance(r, f.DateUnknown) for r in plan.reasons) for plan in result.plans)
    if undated:
        lines.append(f"{plural(undated, 'plan')}' price dates unknown (their sources give none; `explain` says when "
                     "each was imported)")
    if any(isinstance(r, f.Hybrid) for r in reasons):
        lines.append("with your own GPUs: develop on them, burst to the cloud's plans for deadlines")
    return ["; ".join(lines)] if lines else []


def beside_line(plan: Plan) -> str:
    """A plan named beside the shown ones: why it is named, then what it is."""
    what = "the fastest" if any(isinstance(r, f.Fastest) for r in plan.reasons) else \
        "a Capacity Block" if any(isinstance(r, f.CapacityBlock) for r in plan.reasons) else "also"
    zone = f" ({zone_id(plan)})" if zone_id(plan) else ""
    return f"{what}: {plan.gpu_count:,}×{plan.gpu}, {plan.provider} {where(plan)}{zone} {instance(plan)} " \
           f"{plan.pricing_model}, {format_hours(plan.hours)}, {cost(plan.hourly, plan.total, plan.currency)}"


def instance(plan: Plan) -> str:
    """What a plan buys: its instance type, and how many of it."""
    return plan.instance_type if plan.instances == 1 else f"{plan.instances:,}× {plan.instance_type}"


def where(plan: Plan) -> str:
    """Where a plan runs, as a buyer can use it: the region (an AWS zone ID, `use1-az6`, is said beside it,
    never alone in its place: `zone_id`), a placeholder region a dash, as the plan's reasons say why."""
    if plan.region in PLACEHOLDER_REGIONS:
        return "-"
    if plan.zone and plan.provider == "aws":
        return plan.region
    return plan.zone or plan.region


def zone_id(plan: Plan) -> str:
    """The AWS zone a plan's spot price is for, by its ID (the same zone in every account); else nothing."""
    return plan.zone if plan.zone and plan.provider == "aws" and plan.zone != plan.region else ""
