"""Sharing advice in words (`gpu_assist.team.sharing`): one line a person reads beside a lightly used GPU."""

from __future__ import annotations

from typing import Any

from ..team.sharing import SharingAdvice
from .money import format_money


def sharing_line(advice: SharingAdvice, currency: str) -> str:
    """`8×A100 at 15% use, 8.0 GiB at most: MIG 3× 2g.20gb per GPU · MPS up to 5 such processes per GPU ·
    g5.48xlarge (8×A10G) $16.29/h saves $4,148.22/month`."""
    use = advice.use
    ways = []
    if advice.mig:
        ways.append(f"MIG {advice.mig.copies}× {advice.mig.profile.name} per GPU")
    if advice.mps_processes:
        ways.append(f"MPS up to {advice.mps_processes} such processes per GPU")
    if advice.smaller:
        offer = advice.smaller.offer
        ways.append(f"{offer.instance_type} ({offer.gpu_count:g}×{offer.gpu}) "
                    f"{format_money(advice.smaller.hourly, currency)}/h saves "
                    f"{format_money(advice.smaller.saving_per_month, currency)}/month")
    return (f"{use.gpus}×{use.gpu.name} at {use.utilization_pct:.0f}% use, {use.memory_used_gib:.1f} GiB at most: "
            + " · ".join(ways))


def sharing_payload(advice: SharingAdvice) -> dict[str, Any]:
    """The advice's figures for JSON: the profile, the process count, the instance and its saving."""
    smaller = advice.smaller
    return {
        "gpu": advice.use.gpu.name, "gpus": advice.use.gpus, "utilization_pct": advice.use.utilization_pct,
        "memory_used_gib": advice.use.memory_used_gib,
        "mig": {"profile": advice.mig.profile.name, "per_gpu": advice.mig.copies} if advice.mig else None,
        "mps_processes": advice.mps_processes,
        "smaller_instance": {"instance_type": smaller.offer.instance_type, "gpu": smaller.offer.gpu,
                             "gpu_count": smaller.offer.gpu_count, "hourly": float(smaller.hourly),
                             "saving_per_month": float(smaller.saving_per_month),
                             "source": smaller.offer.source, "as_of": smaller.offer.as_of} if smaller else None,
    }
