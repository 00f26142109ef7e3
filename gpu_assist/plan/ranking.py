"""Which plans a recommendation shows, and in what order. Pure.

The rule: among the plans that meet the deadline (and the budget), the lowest expected total first, verified
prices before the rest. A spot plan's total already carries its expected interruptions and the storage of its
checkpoints; spot is planned for jobs that checkpoint (train, finetune) unless `interruptible=no`, and for
serving only when `spot` is asked. `sort=fastest` and `sort=fewest-gpus` order by time or by GPUs instead. Plans
of one GPU and provider bought the same way in other host sizes fold into the first of them; exactly `top` plans
are shown, and the fastest plan and the cheapest Capacity Block, when not among them, are named beside them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any

from .. import facts
from ..facts import Fact
from .plans import CAPACITY_BLOCK, NoRate, OtherPackings, Plan
from .workload import Workload

Key = tuple[Any, ...]


def judge(plan: Plan, workload: Workload, budget: Decimal | None) -> Plan:
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


def mark_pareto(plans: list[Plan]) -> list[Plan]:
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


def ranked_providers(workload: Workload, plans: list[Plan]) -> set[str]:
    """Providers whose unverified plans rank with verified ones: all when the search holds nothing verified
    (the user restricted it to such providers), else those named with `provider=`."""
    if not any(p.verified and p.provider != "own" for p in plans):
        return {p.provider for p in plans}
    return set(workload.providers)


def _risky(plan: Plan) -> bool:
    """A spot plan whose expected overhead is over the limit: behind every plan that is not."""
    return any(isinstance(r, facts.SpotOverheadHigh) for r in plan.reasons)


def _order(sort: str, ranked: set[str]) -> Callable[[Plan], Key]:
    """The sort key of `sort` (`PLAN_SORTS`): trusted prices first in every order."""
    def trusted(plan: Plan) -> bool:
        return plan.verified or plan.provider in ranked

    if sort == "fastest":
        return lambda p: (not trusted(p), math.inf if p.hours is None else p.hours, p.rank_key)
    if sort == "fewest-gpus":
        return lambda p: (not trusted(p), p.gpu_count, p.rank_key)
    return lambda p: (not trusted(p), _risky(p), p.rank_key)


def ordered(feasible: list[Plan], sort: str, ranked: set[str]) -> list[Plan]:
    """The feasible plans in the order `sort` asks, host splits at one price folded, then other host sizes of
    one provider's GPU folded into the first of them."""
    return _packings_folded(_splits_folded(sorted(feasible, key=_order(sort, ranked))))


def _splits_folded(plans: list[Plan]) -> list[Plan]:
    """Plans that differ only in how the same GPUs split into hosts, at the same price and time, as one line: the
    first as ranked, naming the others."""
    kept: dict[Key, Plan] = {}
    splits: dict[Key, list[str]] = {}
    for plan in plans:
        key = (plan.gpu, plan.gpu_count, plan.provider, plan.region, plan.zone, plan.pricing_model, plan.total,
               plan.hours, plan.hourly)
        if key not in kept:
            kept[key] = plan
        elif kept[key].instance_type != plan.instance_type:
            splits.setdefault(key, []).append(f"{plan.instances:,}× {plan.instance_type}")
    return [replace(p, reasons=(*p.reasons, facts.Folded(tuple(splits[k])))) if k in splits else p
            for k, p in kept.items()]


def _packings_folded(plans: list[Plan]) -> list[Plan]:
    """One row per GPU count, provider and way of buying: a provider's other host sizes of the same GPUs (more
    vCPUs or memory, another GPU count per host, another of its regions) differ only in packing, and are named
    under the first as ranked."""
    kept: dict[Key, Plan] = {}
    others: dict[Key, list[Plan]] = {}
    for plan in plans:
        key = (plan.gpu, plan.gpu_count, plan.provider, plan.pricing_model, plan.verified)
        if key in kept:
            others.setdefault(key, []).append(plan)
        else:
            kept[key] = plan
    return [replace(p, reasons=(*p.reasons, OtherPackings(tuple(
        (o.instances, o.instance_type, o.zone or o.region, o.hourly, o.total, o.currency) for o in others[k]))))
        if k in others else p for k, p in kept.items()]


def shown_and_beside(plans: list[Plan], everything: list[Plan], top: int | None, sort: str,
                     ranked: set[str]) -> tuple[list[Plan], list[Plan]]:
    """The first `top` of `plans` (all with None), and beside them the plans a reader should know of that are
    not among them: the fastest trusted plan (unless the order is already by time), marked `Fastest`, and the
    cheapest Capacity Block (a strategy of its own, its price dated). `everything` is every feasible plan before
    folding, so that a faster host size folded under a cheaper one is still found."""
    shown = plans[:top]
    beside: list[Plan] = []
    timed = [p for p in everything if p.hours is not None and (p.verified or p.provider in ranked)]
    if timed and sort != "fastest":
        fastest = min(timed, key=lambda p: (p.hours, float(p.total or 0)))
        if not any(_same(fastest, p) for p in shown):
            beside.append(replace(fastest, reasons=(facts.Fastest(), *fastest.reasons)))
    block = next((p for p in plans if p.pricing_model == CAPACITY_BLOCK), None)
    if block is not None and block not in shown and not any(_same(block, p) for p in beside):
        beside.append(block)
    return shown, beside


def _same(plan: Plan, other: Plan) -> bool:
    return (plan.provider, plan.instance_type, plan.region, plan.zone, plan.pricing_model) == \
        (other.provider, other.instance_type, other.region, other.zone, other.pricing_model)


def one_per_gpu(rejected: list[Plan]) -> list[Plan]:
    seen: set[str] = set()
    kept = []
    for plan in rejected:
        if plan.gpu not in seen:
            seen.add(plan.gpu)
            kept.append(plan)
    return kept


def left_out(gpus: Sequence[str], unplanned: dict[str, NoRate], feasible: list[Plan],
             rejected: list[Plan]) -> tuple[tuple[str, Fact], ...]:
    """Each GPU type of the search (in `gpus`' order) without a feasible plan, and why: the rate it lacks, or
    the first reason of its closest plan (`rejected`, closest first)."""
    planned = {p.gpu for p in feasible}
    closest = {p.gpu: p.reasons[0] for p in reversed(rejected) if p.reasons}
    why: list[tuple[str, Fact]] = []
    for gpu in gpus:
        if gpu in planned:
            continue
        reason = unplanned.get(gpu) or closest.get(gpu)
        if reason is not None:
            why.append((gpu, reason))
    return tuple(why)
