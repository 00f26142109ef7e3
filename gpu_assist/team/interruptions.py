"""Spot instances EC2 took back, seen from the fleet: which of gpu-assist's running spot launches lost an
instance, from the read-only `DescribeInstances` answer. Pure: records and instance descriptions in, facts out.

EC2 names the cause in an instance's `StateReason.Code`: `Server.SpotInstanceTermination` (terminated) and
`Server.SpotInstanceShutdown` (stopped or hibernated) are spot interruptions (EC2 API Reference, StateReason); a
person's stop or terminate is `Client.UserInitiatedShutdown` and is not one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..facts import PricingModel
from ..lifecycle.records import RequestRecord
from ..lifecycle.specs import LaunchSpec
from .spending import cost_between, hours_between

SPOT_REASONS = frozenset({"Server.SpotInstanceTermination", "Server.SpotInstanceShutdown"})
GONE = frozenset({"shutting-down", "terminated", "stopping", "stopped"})


@dataclass(frozen=True)
class Interruption:
    key: str               # the notice that says it once: interrupted:<instance id>
    request_id: str
    requester: str
    instance_id: str
    instance_type: str
    zone: str
    reason: str            # EC2's StateReason code
    ran_hours: Decimal     # from launch until it was seen gone
    cost_so_far: Decimal
    currency: str
    all_gone: bool         # every instance of the launch is interrupted: the launch has stopped


def interrupted(records: list[RequestRecord], instances: list[dict[str, Any]], now: dt.datetime) -> list[Interruption]:
    """The spot interruptions among `instances` (DescribeInstances' Instances) of the running spot launches in
    `records`."""
    by_instance = {i: r for r in records if r.state == "running" and isinstance(r.spec, LaunchSpec)
                   and r.spec.pricing_model == PricingModel.SPOT for i in r.instance_ids}
    gone = [(by_instance[i["InstanceId"]], i) for i in instances
            if i.get("InstanceId") in by_instance and i.get("State", {}).get("Name") in GONE
            and i.get("StateReason", {}).get("Code") in SPOT_REASONS]
    lost: dict[str, set[str]] = {}
    for record, instance in gone:
        lost.setdefault(record.id, set()).add(instance["InstanceId"])
    return [Interruption(
        key=f"interrupted:{instance['InstanceId']}", request_id=record.id, requester=record.requester,
        instance_id=instance["InstanceId"], instance_type=instance.get("InstanceType", ""),
        zone=instance.get("Placement", {}).get("AvailabilityZone", ""), reason=instance["StateReason"]["Code"],
        ran_hours=hours_between(record.launched_at or now, now),
        cost_so_far=cost_between(record, record.launched_at or now, now, now), currency=record.currency,
        all_gone=lost[record.id] >= set(record.instance_ids)) for record, instance in gone]
