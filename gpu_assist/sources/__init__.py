"""Converters from other catalogs' formats, and from providers' APIs, into gpu-assist's offer schema.

Shared here: what every importer must decide the same way (interconnect by instance family, the spot
defect flag, how counts are written)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from ..facts import Flag

# Families whose multi-GPU sizes link their GPUs with NVLink/NVSwitch; PCIe-only families.
_NVLINK = re.compile(r"^(p3\.(8|16)xlarge|p3dn|p4d|p4de|p5|p5e|p5en|p6-|a2-|a3-|a4-|Standard_ND|"
                     r"gpu_\d+x_\w*sxm|gpu_8x_a100$)")
_PCIE = re.compile(r"^(g4dn|g4ad|g5|g5g|g6|g6e|g6f|gr6|gr6f|g7e|g2-|Standard_NV|Standard_NC\d+ads_A100|"
                   r"gpu_1x_h100_pcie|"
                   r"gpu_\d+x_a6000|gpu_1x_a10$|gpu_1x_rtx6000)")

# One object of a cloud's JSON answer or price list file, as `json` (or the cloud's SDK) reads it.
JsonObject = dict[str, Any]


def interconnect(instance_type: str) -> str:
    if _NVLINK.match(instance_type):
        return "nvlink"
    if _PCIE.match(instance_type):
        return "pcie"
    return "unknown"


def number_text(value: str) -> str:
    """A count as written without a trailing '.0' (8.0 → 8, 0.125 stays)."""
    number = Decimal(value)
    return format(number.normalize(), "f") if number != number.to_integral() else str(int(number))


# A spot price within 0.1 % of on-demand is the cap AWS applies (p4d apne1-az1: 30.0978 vs 30.09784), not a
# discount; it is as useless for a quote as a spot price above on-demand.
NEAR_CAP = Decimal("0.999")


def spot_flags(on_demand: str, spot: str) -> list[str]:
    """`spot:not-below-on-demand` when a spot price is not a discount (a known defect of scraped data);
    `spot:at-on-demand-cap` when it is within 0.1 % of on-demand."""
    if not (on_demand and spot):
        return []
    if Decimal(spot) >= Decimal(on_demand):
        return [f"spot:{Flag.NOT_BELOW_ON_DEMAND}"]
    if Decimal(spot) >= Decimal(on_demand) * NEAR_CAP:
        return [f"spot:{Flag.AT_ON_DEMAND_CAP}"]
    return []
