"""What the gate writes into every launch it lets through, so the approved limits hold on SkyPilot's side: the
approved resources only (the cloud, region, instance type and spot or not that were priced and approved, in place
of every choice the task left open), autodown at the time to live, and the labels that let spend and idle alerts
find the cluster.

`autostop: {idle_minutes: …, down: true, wait_for: none}`: SkyPilot counts *idle* minutes unless `wait_for` is
`none`, so without it a busy cluster would never stop; with it the cluster goes down that many minutes after the
launch, busy or not.
"""

from __future__ import annotations

import math
from typing import Any

from ..lifecycle.specs import LaunchSpec
from ..facts import PricingModel
from .pricing import resource_options

REQUEST_LABEL = "gpu-assist-request-id"
PROJECT_LABEL = "gpu-assist-project"
NO_PROJECT = "none"  # a label's value where the launch is charged to no project
# Keys of a task's resources that choose or size the machine: replaced by the approved ones.
_CHOOSING = ("infra", "cloud", "region", "zone", "instance_type", "accelerators", "use_spot", "cpus", "memory",
             "any_of", "ordered", "autostop", "labels")


def enforced(task: dict[str, Any], spec: LaunchSpec, *, ttl_s: int, zone: str | None) -> dict[str, Any]:
    """The task as SkyPilot may launch it: `spec`'s resources (in `zone` where the task named one), autodown
    `ttl_s` after launch, and gpu-assist's labels beside the task's own."""
    first = resource_options(task)[0]
    kept = {key: value for key, value in first.items() if key not in _CHOOSING}
    labels = {str(k): str(v) for k, v in dict(first.get("labels") or {}).items()}
    labels.update({REQUEST_LABEL: spec.request_id, PROJECT_LABEL: spec.project or NO_PROJECT})
    resources = {
        "infra": "/".join(part for part in (spec.provider, spec.where, zone) if part),
        "instance_type": spec.instance_type,
        "use_spot": spec.pricing_model == PricingModel.SPOT,
        **kept,
        "autostop": {"idle_minutes": max(1, math.ceil(ttl_s / 60)), "down": True, "wait_for": "none"},
        "labels": labels,
    }
    return {**task, "resources": resources}


def labelled(task: dict[str, Any], spec: LaunchSpec, *, ttl_s: int) -> dict[str, Any]:
    """A launch the engine made (its resources pinned already), with autodown at what is left of its time to
    live and gpu-assist's labels."""
    options = resource_options(task)
    resources = dict(task.get("resources") or {})
    labels = {str(k): str(v) for k, v in dict(options[0].get("labels") or {}).items()}
    labels.update({REQUEST_LABEL: spec.request_id, PROJECT_LABEL: spec.project or NO_PROJECT})
    resources.update(autostop={"idle_minutes": max(1, math.ceil(ttl_s / 60)), "down": True, "wait_for": "none"},
                     labels=labels)
    return {**task, "resources": resources}
