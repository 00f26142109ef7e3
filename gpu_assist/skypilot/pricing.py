"""Pricing a SkyPilot task from the catalog: the ways its resources let SkyPilot run it (cloud, region or zone,
instance type or GPUs per node, spot or not, nodes), each priced for the time to live, and the cheapest one the
team's policy allows. Where the task leaves a choice open (no cloud, no region, several accelerators, `any_of`),
every matching offer of the clouds the policy allows is priced and the cheapest wins, as SkyPilot's own optimizer
would pick the cheapest; the request's words say so.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

from ..catalog import Catalog
from ..catalog.providers import BY_NAME
from ..errors import GpuAssistError, PolicyError
from ..facts import PricingModel
from ..lifecycle.policy import Policy
from ..lifecycle.preview import instance_shape, plan_launch
from ..lifecycle.specs import LaunchSpec
from ..pricing.query import Query
from ..pricing.quote import QuoteOption
from .contract import ContractError

_CHOICE_KEYS = ("infra", "cloud", "region", "zone", "instance_type", "accelerators", "use_spot")
# What a launch's own mutation adds: left out of its fingerprint, so the approved task asks for the same launch.
_OURS = ("autostop", "labels")


@dataclass(frozen=True)
class Choice:
    """One way a task lets SkyPilot run it; None where it leaves that open."""

    provider: str | None
    region: str | None
    zone: str | None
    instance_type: str | None
    accelerator: str | None
    per_node: int | None
    spot: bool


@dataclass(frozen=True)
class TaskShape:
    """What a task asks for, as gpu-assist prices it: its choices, its nodes, and the labels it carries."""

    choices: tuple[Choice, ...]
    nodes: int
    labels: dict[str, str]
    fingerprint: str  # the same for the same resources and nodes, whatever the order SkyPilot writes them in

    @property
    def wants_gpus(self) -> bool:
        return any(choice.accelerator or choice.instance_type for choice in self.choices)


@dataclass(frozen=True)
class TaskLaunch:
    """A SkyPilot task as the approval path takes a launch (`lifecycle.specs.LaunchIntent`)."""

    what: Query
    duration_s: int
    project: str | None
    text: str

    def words(self) -> str:
        return self.text


def resource_options(task: dict[str, Any]) -> list[dict[str, Any]]:
    """The task's resources, one mapping per option (`any_of` and `ordered` merged over the shared keys)."""
    resources = task.get("resources") or {}
    if not isinstance(resources, dict):
        raise ContractError("the task's resources are not a mapping")
    listed = resources.get("any_of") or resources.get("ordered")
    base = {k: v for k, v in resources.items() if k not in ("any_of", "ordered")}
    if listed is None:
        return [base]
    if not isinstance(listed, list) or not all(isinstance(item, dict) for item in listed):
        raise ContractError("the task's any_of or ordered resources are not a list of mappings")
    return [{**base, **item} for item in listed]


def task_shape(task: dict[str, Any]) -> TaskShape:
    """The choices a task leaves SkyPilot, read once; ContractError for resources SkyPilot would not take."""
    options = resource_options(task)
    nodes = task.get("num_nodes") or 1
    if type(nodes) is not int or nodes < 1:
        raise ContractError("the task's num_nodes is not a whole number of at least 1")
    choices = tuple(choice for option in options for choice in _choices(option))
    labels = {str(k): str(v) for option in options for k, v in dict(option.get("labels") or {}).items()}
    kept = [{k: v for k, v in sorted(option.items()) if k not in _OURS} for option in options]
    digest = hashlib.sha256(json.dumps([kept, nodes], sort_keys=True, default=str).encode()).hexdigest()
    return TaskShape(choices, nodes, labels, digest[:6])


def _choices(option: dict[str, Any]) -> list[Choice]:
    provider, region, zone = _where(option)
    accelerators = option.get("accelerators")
    named = _accelerators(accelerators) if accelerators is not None else [(None, None)]
    instance_type, spot = option.get("instance_type"), option.get("use_spot", False)
    if not isinstance(instance_type, (str, type(None))) or not isinstance(spot, bool):
        raise ContractError("the task's instance_type or use_spot has the wrong type")
    return [Choice(provider, region, zone, instance_type, name, count, spot) for name, count in named]


def _where(option: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(cloud, region, zone) from `infra: aws/us-east-1/us-east-1a` or the older `cloud`, `region`, `zone`."""
    infra = option.get("infra")
    if isinstance(infra, str):
        parts = [None if part in ("", "*") else part for part in infra.split("/", 2)] + [None, None]
        cloud, region, zone = parts[0], parts[1], parts[2]
    else:
        cloud, region, zone = option.get("cloud"), option.get("region"), option.get("zone")
    if not all(isinstance(value, (str, type(None))) for value in (cloud, region, zone)):
        raise ContractError("the task's infra, cloud, region or zone is not text")
    return (cloud.lower() if cloud else None), region, zone


def _accelerators(value: object) -> list[tuple[str | None, int | None]]:
    """`A100:8`, `{A100: 8}`, or a list of either (a choice among them), as (name, count) pairs."""
    if isinstance(value, str):
        name, _, count = value.partition(":")
        return [(name.strip(), _count(count or "1"))]
    if isinstance(value, dict):
        return [(str(name), _count(count if count is not None else 1)) for name, count in value.items()]
    if isinstance(value, list):
        return [pair for item in value for pair in _accelerators(item)]
    raise ContractError("the task's accelerators are not NAME:COUNT")


def _count(value: object) -> int:
    try:
        count = int(str(value))
    except ValueError:
        raise ContractError("an accelerator count is not a whole number") from None
    if count < 1:
        raise ContractError("an accelerator count is below 1")
    return count


def price_task(shape: TaskShape, ttl_s: int, catalog: Catalog, policy: Policy, *, request_id: str, requester: str,
               today: dt.date, project: str | None, text: str) -> LaunchSpec:
    """The cheapest launch the task allows that the policy allows too, priced for `ttl_s`; PolicyError with the
    reasons of the cheapest refused one (or why none matches)."""
    priced: list[LaunchSpec] = []
    refusals: list[GpuAssistError] = []
    open_choice = len(shape.choices) > 1 or any(c.provider is None or c.region is None for c in shape.choices)
    words = text + (" (choice left open: the cheapest matching offer)" if open_choice else "")
    for choice in shape.choices:
        for provider in ([choice.provider] if choice.provider else _launch_clouds(policy)):
            try:
                priced.append(_price(choice, provider, shape.nodes, ttl_s, catalog, policy, request_id=request_id,
                                     requester=requester, today=today, project=project, text=words))
            except GpuAssistError as error:
                refusals.append(error)
    if priced:
        best = min(priced, key=lambda spec: spec.estimated_total)
        return replace(best, text=words)
    if refusals:
        first = refusals[0]
        raise PolicyError(first.message, hint=first.hint)
    raise PolicyError("none of the clouds the policy allows is one SkyPilot launches on",
                      hint="allowed_providers in the policy names the clouds")


def _launch_clouds(policy: Policy) -> list[str]:
    """The clouds a task that names none may use: those the policy allows that SkyPilot launches on."""
    return [name for name in policy.allowed_providers if name in BY_NAME and BY_NAME[name].skypilot]


def _price(choice: Choice, provider: str, nodes: int, ttl_s: int, catalog: Catalog, policy: Policy, *,
           request_id: str, requester: str, today: dt.date, project: str | None, text: str) -> LaunchSpec:
    if provider not in BY_NAME:
        raise PolicyError(f"gpu-assist has no prices for {provider}: it cannot admit a launch there")
    gpu, per_node = _gpus(choice, provider, catalog)
    model = PricingModel.SPOT if choice.spot else PricingModel.ON_DEMAND
    query = Query(gpu=gpu, count=per_node * nodes, duration_s=ttl_s, pricing_models=(model,),
                  regions=(choice.region,) if choice.region else (), providers=(provider,))

    def fits(option: QuoteOption) -> bool:
        return option.gpu_count == per_node and option.instances == nodes and \
            choice.instance_type in (None, option.instance_type) and choice.zone in (None, option.zone)

    return plan_launch(TaskLaunch(query, ttl_s, project, text), catalog, policy, request_id=request_id,
                       requester=requester, today=today, fits=fits)


def _gpus(choice: Choice, provider: str, catalog: Catalog) -> tuple[str, int]:
    """(GPU, GPUs per node) the choice names, or its instance type holds."""
    if choice.accelerator and choice.per_node:
        return catalog.gpus.resolve(choice.accelerator).name, choice.per_node
    shape = instance_shape(catalog, choice.instance_type or "", provider)
    if shape is None:
        raise PolicyError(f"the catalog has no {provider} instance type {choice.instance_type}")
    return shape[0], shape[1]


def describe_task(shape: TaskShape, cluster: str) -> str:
    """What was asked, in words for the approver: the cluster, the nodes and what each node has."""
    asked = sorted({choice.instance_type or f"{choice.accelerator}:{choice.per_node}" for choice in shape.choices})
    return f"sky launch -c {cluster}: {shape.nodes} node(s) of {' or '.join(asked)}"
