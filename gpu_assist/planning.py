"""What a request would do, worked out before anyone decides: which AWS offer a launch buys and at what hourly
ceiling, what an extension costs and whether the policy allows either. Pure: the catalog, the policy, the
moment and the new request's id come in; the spec goes out (the lifecycle stores it, AWS checks it).
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

from .budgets import BudgetStatus, over_budget_problem
from .catalog import Catalog
from .errors import ParseError, PolicyError
from .policy import Policy
from .pricing import QuoteOption, quote
from .records import RequestRecord
from .request import parse_request

LAUNCH_EXAMPLE = "launch 8xA100 72h spot region=us-east-1"
EXTEND_EXAMPLE = "extend r-0123456789ab 24h"
_OPTION_ID = re.compile(r"^aws:([a-z0-9.\-]+):([a-z0-9\-]+):(on-demand|spot)$")
_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/+=@-]{0,63}$")  # what an AWS tag value may hold, shortened


def option_id(option: QuoteOption) -> str:
    """A quote row as `launch` takes it: aws:p4d.24xlarge:us-east-1:spot."""
    return f"{option.provider}:{option.instance_type}:{option.region}:{option.pricing_model}"


def instance_shape(catalog: Catalog, instance_type: str) -> tuple[str, int, int | None] | None:
    """(GPU, GPUs per instance, vCPUs or None) of an AWS instance type, from the catalog's offers; None when the
    catalog has no such type. The one place approvals read the offers table."""
    offers = catalog.offers
    rows = offers[(offers.provider == "aws") & (offers.instance_type == instance_type)]
    if not len(rows):
        return None
    vcpus = rows.vcpus.dropna()
    return str(rows.gpu.iloc[0]), int(rows.gpu_count.iloc[0]), int(vcpus.iloc[0]) if len(vcpus) else None


def project(word: str | None, policy: Policy) -> str | None:
    """`project=vision`: recorded on the launch, charged to that budget, tagged on its instances. When the
    policy's budgets name projects, it must be one of them (or the policy's default cost tag)."""
    if word is None:
        return None
    if not _PROJECT.match(word):
        raise ParseError(f"project '{word}' must be letters, digits and _.:/+=@- (at most 64)",
                         example="launch 8xA100 72h project=vision")
    known = policy.budgets.projects() if policy.budgets else []
    if known and word not in known and word != policy.default_project:
        raise ParseError(f"unknown project '{word}'", hint=f"projects with a budget: {', '.join(known)}",
                         example=f"launch 8xA100 72h project={known[0]}")
    return word


def plan_launch(text: str, catalog: Catalog, policy: Policy, *, request_id: str, requester: str,
                today: dt.date) -> dict[str, Any]:
    """The cheapest verified AWS offer for `text` that the policy allows, with every region at that price or
    less as a fallback for capacity; ParseError or PolicyError saying why there is none."""
    words = text.split()
    if words and words[0].lower() == "launch":
        words = words[1:]
    charged = project(next((w.split("=", 1)[1] for w in words if w.lower().startswith("project=")), None), policy)
    words = [w for w in words if not w.lower().startswith("project=")]
    chosen_id = next((w.lower() for w in words if _OPTION_ID.match(w.lower())), None)
    if chosen_id:
        _, instance_type, region, model = chosen_id.split(":")
        rest = [w for w in words if w.lower() != chosen_id]
        shape = instance_shape(catalog, instance_type)
        if shape is None:
            raise ParseError(f"unknown AWS instance type '{instance_type}'", example=LAUNCH_EXAMPLE)
        duration = next((w for w in rest if re.match(r"^\d", w)), None)
        if duration is None:
            raise ParseError("say for how long", example=f"launch {chosen_id} 72h")
        request = parse_request(f"{shape[1]}x{shape[0]} {duration} {model} region={region} aws", catalog.gpus)
    else:
        request = parse_request(" ".join(words) + " aws", catalog.gpus)
        if not request.pricing_models:
            request = parse_request(" ".join(words) + " aws on-demand", catalog.gpus)
        if not set(request.pricing_models) <= {"on-demand", "spot"}:
            raise ParseError("launch buys on-demand or spot", example=LAUNCH_EXAMPLE)
        if request.assumptions:  # the only assumption a request makes is a missing duration
            raise ParseError("say for how long: the duration is the instance's time to live", example=LAUNCH_EXAMPLE)
    result = quote(request, catalog, today=today, currency=policy.currency, all_regions=True, verified_only=True)

    def violations(option: QuoteOption) -> list[str]:
        return policy.launch_violations(
            gpus=option.instances * option.gpu_count, estimated_cost=option.total, instance_type=option.instance_type,
            region=option.region, pricing_model=option.pricing_model, ttl_s=request.duration_s)

    candidates = [o for o in result.options if not chosen_id or option_id(o) == chosen_id]
    allowed = [o for o in candidates if not violations(o)]
    if not allowed:
        reasons = "; ".join(violations(candidates[0])) if candidates else "no AWS offer matches"
        raise PolicyError(f"nothing to launch for '{text}': {reasons}", example=LAUNCH_EXAMPLE)
    best = allowed[0]
    same = [o for o in allowed if o.instance_type == best.instance_type and o.pricing_model == best.pricing_model
            and o.hourly <= best.hourly]
    shape = instance_shape(catalog, best.instance_type)
    return {
        "request_id": request_id, "requester": requester, "text": text, "gpu": best.gpu,
        "gpus": best.instances * best.gpu_count, "instance_type": best.instance_type, "instances": best.instances,
        "vcpus": shape[2] if shape else None, "region": best.region, "zone": best.zone,
        "pricing_model": best.pricing_model, "duration_s": request.duration_s,
        "hourly": str(best.hourly), "ceiling_hourly": str(best.hourly), "estimated_total": str(best.total),
        "currency": best.currency,
        "candidates": [{"region": o.region, "zone": o.zone or None, "hourly": str(o.hourly)} for o in same],
        "price_source": f"{best.source} {best.as_of}", **({"project": charged} if charged else {}),
    }


def plan_extension(launch: RequestRecord | None, launch_id: str, extra_s: int, policy: Policy, *, request_id: str,
                   waiting: list[str]) -> tuple[dict[str, Any], Decimal]:
    """(spec, estimated cost) of moving a running launch's time to live `extra_s` later, at its approved hourly
    price; ParseError or PolicyError saying why not. `waiting`: extensions of it not yet carried out."""
    if launch is None or launch.kind != "launch":
        raise ParseError(f"no launch request {launch_id}", example=EXTEND_EXAMPLE)
    if launch.state != "running" or launch.ends_at is None:
        raise PolicyError(f"{launch_id} is {launch.state}, not running: only a running launch's time to live can move")
    if waiting:
        raise PolicyError(f"{launch_id} already has an extension waiting: {waiting[0]}")
    spec = launch.spec
    ttl_s = int((launch.ends_at - (launch.launched_at or launch.ends_at)).total_seconds()) + extra_s
    extension = {"request_id": request_id, "launch_request": launch.id, "extra_s": extra_s,
                 "launch_ends_at": launch.ends_at.strftime("%Y-%m-%dT%H:%M:%SZ"), "ttl_s": ttl_s,
                 "hourly": str(launch.hourly_price), "instance_type": spec["instance_type"],
                 "instances": spec["instances"], "gpus": spec["gpus"], "gpu": spec["gpu"],
                 "pricing_model": spec["pricing_model"], "region": spec.get("launched_region", spec["region"]),
                 **({"project": spec["project"]} if spec.get("project") else {})}
    estimate = (launch.hourly_price or Decimal(0)) * extra_s / 3600
    problems = violations(extension, estimate, policy)
    if problems:
        raise PolicyError("policy refuses this extension: " + "; ".join(problems),
                          hint="ask for less, or ask an admin to change the policy")
    return extension, estimate


def violations(spec: dict[str, Any], estimate: Decimal, policy: Policy) -> list[str]:
    """What the policy refuses in a launch's or an extension's spec at `estimate`: checked at submit, and again
    at approval, so a request made before a rule tightened cannot slip through."""
    if "extra_s" not in spec:
        return policy.launch_violations(gpus=spec["gpus"], estimated_cost=estimate, instance_type=spec["instance_type"],
                                        region=spec["region"], pricing_model=spec["pricing_model"],
                                        ttl_s=spec["duration_s"])
    too_long = policy.extension_problem(spec["extra_s"])
    return policy.launch_violations(gpus=spec["gpus"], estimated_cost=estimate, instance_type=spec["instance_type"],
                                    region=spec["region"], pricing_model=spec["pricing_model"],
                                    ttl_s=spec["ttl_s"]) + ([too_long] if too_long else [])


def approval_problem(record: RequestRecord, policy: Policy, budgets: list[BudgetStatus], approver: str) -> str | None:
    """Why `approver` may not approve `record` now: a rule it breaks today (a rule may have tightened since it was
    asked), or a budget it would overrun that they may not approve; None when nothing stands in the way."""
    problems = [] if record.kind == "stop" else violations(record.spec, record.estimated_cost or Decimal(0), policy)
    if problems:
        return "policy refuses it now: " + "; ".join(problems)
    return over_budget_problem(policy.budgets, budgets, approver)
