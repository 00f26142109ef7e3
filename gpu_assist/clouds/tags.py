"""What gpu-assist writes on every instance it launches, on every cloud: gpu-assist acts only on instances carrying
`REQUEST_TAG`."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from ..errors import ProvisionError

if TYPE_CHECKING:
    from ..lifecycle.policy import Policy
    from ..lifecycle.specs import LaunchSpec

REQUEST_TAG, REQUESTER_TAG, EXPIRES_TAG = "gpu-assist:request-id", "gpu-assist:requester", "gpu-assist:expires-at"


def launch_tags(spec: LaunchSpec, policy: Policy, ends_at: str) -> dict[str, str]:
    """The request, its requester, its end, and the cost tags (the launch's project over the policy's)."""
    return {REQUEST_TAG: spec.request_id, REQUESTER_TAG: spec.requester, EXPIRES_TAG: ends_at,
            **policy.cost_tags, **({"project": spec.project} if spec.project else {})}


def cny_ceiling(spec: LaunchSpec) -> Decimal:
    """The approved hourly ceiling in CNY, as the Chinese clouds' spot bids take it: ProvisionError when the spec has
    none (a spot price in another currency must never be sent as yuan)."""
    if spec.native_currency == "CNY" and spec.native_ceiling_hourly is not None:
        return spec.native_ceiling_hourly
    if spec.currency == "CNY":
        return spec.ceiling_hourly
    raise ProvisionError(f"no CNY ceiling for the spot launch {spec.request_id}", hint="ask for it again")
