"""What `recommend … explain` adds under the plans: every plan's notes in full, the plans not chosen and the
GPU types not planned, each GPU's reasoning, the assumptions, each plan's billing, its scaling and interruptions
worked through, and the formulas (the recommendation module's docstring, refolded)."""

from __future__ import annotations

from decimal import Decimal

from .. import facts
from ..plan import recommendation as recommendation_module
from ..plan.plans import Plan
from ..plan.recommendation import Recommendation
from .comparison import wrap
from .money import format_money
from .notes import words
from .tables import table


def explained(result: Recommendation) -> list[str]:
    """Everything the short answer leaves to `explain`."""
    lines: list[str] = []
    if result.plans:
        lines.append("each plan's notes:")
        for rank, plan in enumerate(result.plans, 1):
            lines += [folded for n, reason in enumerate(plan.reasons)
                      for folded in wrap(f"  {str(rank) if n == 0 else '':<3} {words(reason)}", "      ")]
    if result.rejected or result.not_planned:
        lines.append("not chosen:")
        lines += [folded for plan in result.rejected for folded in wrap(rejected_line(plan), "    ")]
        lines += [folded for fact in result.not_planned for folded in wrap(f"  {words(fact)}", "    ")]
    lines.append("reasoning:")
    lines += [folded for sized in result.reasoning for folded in wrap(f"  {words(sized)}", "    ")]
    lines.append("assumptions (override with name=value):")
    lines += [folded for basis in result.assumptions for folded in wrap(f"  {words(basis)}", "    ")]
    lines += _billing(result)
    lines += _arithmetic(result)
    lines.append("")
    lines += _reflowed(recommendation_module.__doc__ or "")
    return lines


def rejected_line(plan: Plan) -> str:
    """A plan not chosen and the first reason why."""
    return f"  {plan.gpu_count:,}×{plan.gpu} ({plan.provider} {plan.instance_type}, {plan.strategy}): " \
           f"{words(plan.reasons[0]) if plan.reasons else 'infeasible'}"


def _billing(result: Recommendation) -> list[str]:
    """Each timed plan's total as hourly × billed hours."""
    lines: list[str] = []
    billed = [(rank, plan) for rank, plan in enumerate(result.plans, 1) if plan.billed_hours is not None]
    if billed:
        lines.append("billing (total = hourly × billed hours: the plan's hours rounded up to its billing unit):")
        lines += [f"  {rank:<3} {plan.hours:,.2f} h → {plan.billed_hours:,.2f} h billed × "
                  f"{format_money(plan.hourly, plan.currency, places=4)}/h = "
                  f"{format_money(plan.total or Decimal(0), plan.currency)}" for rank, plan in billed]
    return lines


def _arithmetic(result: Recommendation) -> list[str]:
    """Each plan's scaling over hosts and its spot interruptions, worked through with the sources of their
    numbers (`sizing.scaling`, `sizing.spot_overhead`, `sizing.finish_chance`)."""
    a = result.workload.assumptions
    lines: list[str] = []
    for rank, plan in enumerate(result.plans, 1):
        for reason in plan.reasons:
            if isinstance(reason, facts.Fabric) and reason.scaling is not None:
                s = reason.scaling
                source = f"{reason.source}, SOURCES-plans.txt" if reason.source else "no source states this network"
                if s.basis == "network":
                    said = f"compute {s.compute_s:,.2f} s per {a.global_batch_tokens:,.0f}-token step; ring " \
                           f"all-reduce 2 × ({s.hosts:,} − 1)/{s.hosts:,} × 16-bit gradients ÷ ({s.gbps:,.4g} Gbps " \
                           f"/ 8 × {a.link_efficiency:g}) = {s.comm_s:,.2f} s, {s.overlap:.0%} hidden → " \
                           f"{s.compute_s:,.2f} / ({s.compute_s:,.2f} + {1 - s.overlap:g} × {s.comm_s:,.2f}) = " \
                           f"{s.efficiency:.1%} ({source}; link efficiency: D2)"
                else:
                    said = f"{s.efficiency:.0%} over {s.hosts:,} hosts: " + \
                        ("your multi_host_efficiency=" if s.basis == "override" else
                         f"multi_host_efficiency assumed, bandwidth unknown ({source})")
                lines += wrap(f"  {rank:<3} scaling: {said}", "        ")
            elif isinstance(reason, facts.FleetSpotRisk):
                job = reason.instances * reason.rate_per_h
                source = "default interruption_rate" if reason.band is None else \
                    f"AWS Spot Advisor {reason.region} band {reason.band}, {reason.as_of} (S-SPOTADV-2025)"
                chance = "" if reason.chance is None else \
                    f"; P(interruptions ≤ what the slack before the deadline absorbs) = {reason.chance:.1%}"
                lines += wrap(f"  {rank:<3} spot: {reason.instances:,} × {reason.rate_per_h:.6g}/h ({source}) = "
                              f"{job:.4g} interruptions/h of the job; {a.checkpoint_write_h * 60:g} min writes / "
                              f"{reason.interval_min:g} min + {job:.4g} × ({reason.interval_min / 2:g} min lost + "
                              f"{a.restart_h * 60:g} min restart) = +{reason.overhead:.1%}{chance}", "        ")
    if lines:
        lines.insert(0, "scaling and interruptions (each plan's arithmetic; sources in catalogs/sources/"
                        "SOURCES-plans.txt):")
    if result.calibration:
        lines.append("the scaling model against published figures (SOURCES-plans.txt part D; efficiency ratios):")
        lines.append(table(["published point", "source", "published", "model"],
                           [[name, source, f"{published:.2f}", f"{model:.2f}"]
                            for name, source, published, model, _ in result.calibration], right={2, 3}))
        lines += [folded for name, _, _, _, note in result.calibration for folded in wrap(f"  {name}: {note}", "    ")]
    return lines


def _reflowed(document: str) -> list[str]:
    """A docstring's paragraphs and "- " items refolded to the width (source lines may be 120 wide)."""
    paragraphs: list[str] = []
    for line in document.strip().splitlines():
        stripped = line.strip()
        if not stripped or line.startswith("- ") or not paragraphs or not paragraphs[-1]:
            paragraphs.append(stripped)
        else:
            paragraphs[-1] += " " + stripped
    return [folded for paragraph in paragraphs
            for folded in wrap(paragraph, "  " if paragraph.startswith("- ") else "")]
