"""What a request would do, worked out before anyone decides: which offer a launch buys (on AWS, or on another
cloud the policy's `allowed_providers` opts in to) and at what hourly ceiling, what an extension costs, and what
the policy refuses in either. Pure: the parsed command, the catalog, the policy, the moment and the new request's
id come in; a spec goes out (the lifecycle stores it).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal
from typing import Callable

from ..catalog import Catalog
from ..catalog.providers import display_name
from ..catalog.regions import GROUPS, location
from ..errors import ParseError, PolicyError
from ..facts import PricingModel, Stale
from ..pricing.query import Query
from ..pricing.quote import QuoteOption, quote
from ..team.budgets import BudgetStatus, over_budget_problem
from .policy import Policy, allow_provider
from .records import RequestRecord
from .specs import Candidate, ExtendSpec, LaunchIntent, LaunchSpec, OptionId

LAUNCH_EXAMPLE = "launch 8xA100 72h spot region=us-east-1"


def instance_shape(catalog: Catalog, instance_type: str, provider: str = "aws") -> tuple[str, int, int | None] | None:
    """(GPU, GPUs per instance, vCPUs or None) of a cloud's instance type, from the catalog's offers; None when the
    catalog has no such type. The one place approvals read the offers."""
    offers = catalog.offers_of_type(provider, instance_type)
    if not offers:
        return None
    vcpus = next((offer.vcpus for offer in offers if offer.vcpus is not None), None)
    return offers[0].gpu, int(offers[0].gpu_count), None if vcpus is None else int(vcpus)


def _request(command: LaunchIntent, catalog: Catalog) -> Query:
    """What to price: the command's own request, or the GPUs, region and pricing model of the option it names."""
    if isinstance(command.what, Query):
        return command.what
    option = command.what
    shape = instance_shape(catalog, option.instance_type, option.provider)
    if shape is None:
        raise ParseError(f"unknown {display_name(option.provider)} instance type '{option.instance_type}'",
                         example=LAUNCH_EXAMPLE)
    return Query(gpu=shape[0], count=shape[1], duration_s=command.duration_s, regions=(option.region,),
                   providers=(option.provider,), pricing_models=(option.pricing_model,))


def _known_project(project: str | None, policy: Policy) -> None:
    """When the policy's budgets name projects, a launch is charged to one of them (or to the default cost tag):
    a misspelt project would escape its budget."""
    known = policy.budgets.projects() if policy.budgets else []
    if project and known and project not in known and project != policy.default_project:
        raise ParseError(f"unknown project '{project}'", hint=f"projects with a budget: {', '.join(known)}",
                         example=f"launch 8xA100 72h project={known[0]}")


def plan_launch(command: LaunchIntent, catalog: Catalog, policy: Policy, *, request_id: str, requester: str,
                today: dt.date, fits: Callable[[QuoteOption], bool] | None = None) -> LaunchSpec:
    """The cheapest verified offer for the command on its cloud (AWS unless it names another) that the policy
    allows, with every region at that price or less as a fallback for capacity; ParseError or PolicyError saying
    why there is none. A cloud outside the policy's `allowed_providers` is refused before anything is priced; an
    offer of another cloud than AWS priced only by a stale list is refused unless the policy allows stale prices
    (and then says so). `fits`: which offers the launch can use at all (SkyPilot's task names an instance type, or
    the GPUs of each of its nodes)."""
    _known_project(command.project, policy)
    request = _request(command, catalog)
    provider = request.providers[0] if request.providers else "aws"
    if provider not in policy.allowed_providers:
        raise PolicyError(f"launches on {provider} are off: the policy allows {', '.join(policy.allowed_providers)}",
                          hint="an admin adds it: " + allow_provider(policy.source, provider),
                          example=LAUNCH_EXAMPLE)
    request, named = _country_wide(request, provider, catalog)
    result = quote(request, catalog, today=today, currency=policy.currency, all_regions=True, verified_only=True)
    chosen = command.what if isinstance(command.what, OptionId) else None
    specs = [_spec(option, command, request_id, requester, policy, _native_hourly(catalog, option), named)
             for option in result.options
             if (chosen is None or OptionId(option.instance_type, option.region, option.pricing_model,
                                            option.provider) == chosen)
             and (fits is None or fits(option))]
    specs.sort(key=lambda spec: spec.price_stale)  # a fresh price before a stale one, each cheapest first
    allowed = [spec for spec in specs if not policy.violations(spec)]
    if not allowed:
        reasons = "; ".join(policy.violations(specs[0])) if specs else f"no verified {provider} offer matches"
        raise PolicyError(f"nothing to launch for '{command.words()}': {reasons}", example=LAUNCH_EXAMPLE)
    best = allowed[0]
    shape = instance_shape(catalog, best.instance_type, provider)
    return dataclasses.replace(best, vcpus=shape[2] if shape else None, candidates=tuple(dict.fromkeys(
        Candidate(s.region, s.zone or None, s.hourly) for s in allowed
        if (s.instance_type, s.pricing_model) == (best.instance_type, best.pricing_model) and s.hourly <= best.hourly)))


def _country_wide(request: Query, provider: str, catalog: Catalog) -> tuple[Query, str | None]:
    """A launch on a Chinese cloud in a mainland region its catalog has no row for (`region=ap-guangzhou` before
    `catalog refresh tencent`): priced by the country-wide list (region `cn`), launched in the region named.
    Otherwise the request as asked, and None."""
    if provider == "aws" or len(request.regions) != 1:
        return request, None
    region = request.regions[0]
    known = {offer.region for offer in catalog.offers_of(request.gpu) if offer.provider == provider}
    if region in known or region in GROUPS or region == "cn" or location(provider, region)[0] != "CN":
        return request, None
    return dataclasses.replace(request, regions=("cn",)), region


def _native_hourly(catalog: Catalog, option: QuoteOption) -> Decimal | None:
    """The option's hourly price in the cloud's own currency, from its catalog row, when that is not the quote's (a
    CNY list for a USD team): what the cloud's API takes as a spot MaxPrice. None otherwise."""
    if option.price_currency == option.currency:
        return None
    for offer in catalog.offers_of_type(option.provider, option.instance_type):
        price = offer.spot_hourly if option.pricing_model == PricingModel.SPOT else offer.on_demand_hourly
        if (offer.region, offer.zone, offer.verified) == (option.region, option.zone, True) and price is not None:
            return price
    return None


def _spec(option: QuoteOption, command: LaunchIntent, request_id: str, requester: str, policy: Policy,
          native_hourly: Decimal | None, named: str | None = None) -> LaunchSpec:
    """The launch an option buys. A country-wide list price (region `cn`) launches in the region the command
    named, else the cloud's configured one ([policy.clouds.<cloud>] region, else its default)."""
    provider = option.provider
    region = option.region
    if provider != "aws" and region == "cn":
        region = named or policy.cloud(provider, "region") or region
    return LaunchSpec(
        request_id=request_id, requester=requester, text=command.words(), gpu=option.gpu,
        gpus=option.instances * option.gpu_count, instance_type=option.instance_type, instances=option.instances,
        vcpus=None, region=region, zone=option.zone, pricing_model=option.pricing_model,
        duration_s=command.duration_s, hourly=option.hourly, ceiling_hourly=option.hourly, estimated_total=option.total,
        currency=option.currency, candidates=(), price_source=f"{option.source} {option.as_of or 'date unknown'}",
        project=command.project, provider=provider, account=policy.cloud(provider, "account"),
        # A stale list price is refused only off AWS: EC2 bills its own current rate (spot never above the approved
        # ceiling) and the card dates the price, while a Chinese cloud's old list may be years from what it charges.
        price_stale=provider != "aws" and any(isinstance(note, Stale) for note in option.notes),
        native_currency=option.price_currency if native_hourly is not None else None,
        native_ceiling_hourly=native_hourly)


def plan_extension(launch: RequestRecord | None, launch_id: str, extra_s: int, policy: Policy, *, request_id: str,
                   waiting: list[str]) -> ExtendSpec:
    """Moving a running launch's time to live `extra_s` later, at its approved hourly price; ParseError or
    PolicyError saying why not. `waiting`: extensions of it not yet carried out."""
    if launch is None or not isinstance(launch.spec, LaunchSpec):
        raise ParseError(f"no launch request {launch_id}", hint="`requests` lists the recent ones with their ids",
                         example="requests")
    if launch.state != "running" or launch.ends_at is None:
        raise PolicyError(f"{launch_id} is {launch.state}, not running: only a running launch's time to live can move")
    if waiting:
        raise PolicyError(f"{launch_id} already has an extension waiting: {waiting[0]}")
    spec, hourly = launch.spec, launch.hourly_price or Decimal(0)
    extension = ExtendSpec(
        request_id=request_id, launch_request=launch.id, extra_s=extra_s, launch_ends_at=launch.ends_at,
        ttl_s=int((launch.ends_at - (launch.launched_at or launch.ends_at)).total_seconds()) + extra_s,
        hourly=hourly, estimated_total=hourly * extra_s / 3600, gpu=spec.gpu, gpus=spec.gpus,
        instance_type=spec.instance_type, instances=spec.instances, pricing_model=spec.pricing_model,
        region=spec.where, project=spec.project, provider=spec.provider)
    problems = policy.violations(extension)
    if problems:
        raise PolicyError("policy refuses this extension: " + "; ".join(problems),
                          hint="ask for less, or ask an admin to change the policy")
    return extension


def approval_problem(record: RequestRecord, policy: Policy, budgets: list[BudgetStatus], approver: str) -> str | None:
    """Why `approver` may not approve `record` now: a rule it breaks today (a rule may have tightened since it was
    asked), or a budget it would overrun that they may not approve; None when nothing stands in the way."""
    problems = policy.violations(record.spec) if isinstance(record.spec, (LaunchSpec, ExtendSpec)) else []
    if problems:
        return "policy refuses it now: " + "; ".join(problems)
    return over_budget_problem(policy.budgets, budgets, approver)
