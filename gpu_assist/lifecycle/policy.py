"""The team's rules for spending money: who approves, what may be asked for, and how provisioning is set up.

Read from a TOML file (`GPU_ASSIST_CONFIG`, table `[policy]`) and environment variables, the environment
winning. Every check returns the reasons a request breaks the rules; approvals re-check at approve time,
so a request submitted before a rule tightened cannot slip through. Approvers carry their realm
(`slack:U012ABC`, `jupyter:alice`; a bare entry is a Slack user id): see `gpu_assist.lifecycle.identity`.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Mapping

import tomllib

from ..catalog import default_catalog_dir
from ..catalog.fx import load_fx
from ..catalog.providers import DEFAULT_LAUNCH_REGIONS, GPU_INSTANCE_TYPES, LAUNCH_PROVIDERS
from ..catalog.regions import DEFAULT_REGION, default_region
from ..errors import GpuAssistError, PolicyError
from ..pricing.query import format_duration
from ..pricing.query_parser import parse_duration
from ..team.budgets import Budgets, parse_budgets
from . import states
from .identity import AUTO_APPROVE, BREAK_GLASS, approver_entry, authenticated, realm_of, same_person
from .specs import ExtendSpec, LaunchSpec

# The default allow-list of instance types is every launch cloud's GPU families, as the provider registry declares
# them (`Provider.gpu_types`); the allowed providers decide which clouds launch at all.
CLOUD_SETTINGS = ("account", "region", "image_id", "vpc_id", "subnet_id", "vswitch_id", "security_group_id")
MAX_EXTENSION_S = 30 * 24 * 3600  # without a max_ttl in the policy: the longest one extension may add
CONFIG_VARIABLE = "GPU_ASSIST_CONFIG"  # names the TOML file whose [policy] table is read
# The variable that sets each setting, winning over the file. break_glass is read from the TOML file only: turning
# an override on is a deliberate change to the file.
VARIABLES = {
    "approvers": "GPU_ASSIST_APPROVERS", "max_gpus": "GPU_ASSIST_MAX_GPUS", "max_cost": "GPU_ASSIST_MAX_COST",
    "currency": "GPU_ASSIST_CURRENCY", "allowed_instance_types": "GPU_ASSIST_ALLOWED_INSTANCE_TYPES",
    "allowed_regions": "GPU_ASSIST_ALLOWED_REGIONS", "allowed_pricing_models": "GPU_ASSIST_ALLOWED_PRICING",
    "auto_approve_below": "GPU_ASSIST_AUTO_APPROVE_BELOW", "expiry_s": "GPU_ASSIST_REQUEST_EXPIRY_S",
    "ami_id": "GPU_ASSIST_AMI_ID", "ami_ssm_parameter": "GPU_ASSIST_AMI_SSM_PARAMETER",
    "security_group_ids": "GPU_ASSIST_SECURITY_GROUP_IDS", "key_name": "GPU_ASSIST_KEY_NAME",
    "stop_action": "GPU_ASSIST_STOP_ACTION", "max_ttl": "GPU_ASSIST_MAX_TTL",
    "allowed_providers": "GPU_ASSIST_ALLOWED_PROVIDERS",
}


@dataclass(frozen=True)
class PolicySource:
    """Where a policy was read from, so that an error can name the place to change it: the file
    GPU_ASSIST_CONFIG named, and the settings a variable set instead."""

    config: str | None = None
    variables: frozenset[str] = frozenset()

    def __str__(self) -> str:
        """`/etc/gpu-assist.toml (GPU_ASSIST_CONFIG) and GPU_ASSIST_MAX_GPUS`, or `the defaults`."""
        places = ([f"{self.config} ({CONFIG_VARIABLE})"] if self.config else []) + \
            sorted(VARIABLES[key] for key in self.variables)
        return " and ".join(places) or "the defaults (no GPU_ASSIST_CONFIG file, no GPU_ASSIST_* policy variable)"

    def to_set(self, key: str, toml: str, variable: str | None = None, *, table: str = "policy") -> str:
        """How an admin changes `key`: `GPU_ASSIST_ALLOWED_PROVIDERS=aws,tencent` where a variable set it (it wins),
        else `allowed_providers = ["aws", "tencent"] in [policy] of /etc/gpu-assist.toml`."""
        if key in self.variables and variable is not None:
            return f"{VARIABLES[key]}={variable}"
        where = f"{self.config}" if self.config else f"the TOML file {CONFIG_VARIABLE} names"
        return f"{key} = {toml} in [{table}] of {where}"


@dataclass(frozen=True)
class Policy:
    approvers: frozenset[str] = frozenset()
    max_gpus: int = 64
    max_cost: Decimal = Decimal(50_000)         # per request, in `currency`
    currency: str = "USD"
    allowed_instance_types: tuple[str, ...] = GPU_INSTANCE_TYPES  # shell patterns
    allowed_regions: tuple[str, ...] = ()       # empty: any
    allowed_pricing_models: tuple[str, ...] = ("on-demand", "spot")
    allowed_providers: tuple[str, ...] = ("aws",)  # the clouds launches may use; a team opts in to another
    allow_stale_prices: bool = False            # a launch priced only by a stale list may be asked for (and is said)
    auto_approve_below: Decimal | None = None   # estimated cost under which no human is needed (still audited)
    expiry_s: int = 24 * 3600
    max_ttl_s: int | None = None                # a launch's whole time to live, extensions included; None: no cap
    # provisioning
    default_region: str = DEFAULT_REGION
    ami_id: str | None = None
    ami_ssm_parameter: str | None = None
    subnet_ids: dict[str, str] = field(default_factory=dict)   # zone name → subnet id
    security_group_ids: tuple[str, ...] = ()
    key_name: str | None = None
    stop_action: str = "terminate"              # terminate | stop
    cost_tags: dict[str, str] = field(default_factory=dict)
    clouds: dict[str, dict[str, str]] = field(default_factory=dict)  # [policy.clouds.<cloud>]: CLOUD_SETTINGS
    break_glass: bool = False                   # `gpu-assist approve --break-glass` from a shell, audited as override
    # spend
    budgets: Budgets | None = None              # [policy.budgets]: monthly per project tag, see gpu_assist.team.budgets
    auto_approve_own_stop: bool = False         # a requester's stop of their own idle instance needs no second person
    idle_window_s: int = 3600                   # GPU use below idle_threshold_pct this long: one alert
    idle_threshold_pct: float = 10.0
    digest_hour: int | None = None              # UTC hour of the daily digest; None: no digest
    digest_channel: str | None = None           # default: the approval channel
    source: PolicySource = PolicySource()       # where it was read from: errors name the place to change it

    @property
    def default_project(self) -> str:
        """The project tag every launch carries unless its spec names one: the `project` cost tag."""
        return self.cost_tags.get("project", "")

    def cloud(self, provider: str, setting: str) -> str | None:
        """One of a cloud's settings (`[policy.clouds.tencent] image_id = …`); a launch region has a default."""
        value = self.clouds.get(provider, {}).get(setting)
        return value or (DEFAULT_LAUNCH_REGIONS.get(provider) if setting == "region" else None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "approvers", frozenset(approver_entry(a) for a in self.approvers))

    def is_approver(self, actor: str) -> bool:
        """Only an actor a front end authenticated (`slack:…`, `jupyter:…`) named in the policy."""
        return authenticated(actor) and actor in self.approvers

    def decider_kind(self, actor: str, *, requester: str, request_kind: str, reason: str = "") -> tuple[str, str]:
        """The kind of actor (`gpu_assist.lifecycle.states`) `actor` is when deciding `requester`'s request, and, unless
        they decide as an approver, an override or the policy itself, why they may not."""
        if same_person(actor, requester):
            return states.REQUESTER, "requesters cannot approve or reject their own request"
        if realm_of(actor) == BREAK_GLASS:
            if not self.break_glass:
                return states.OUTSIDER, ("break-glass overrides are off in the policy ("
                                         f"{self.source.to_set('break_glass', 'true')} turns them on)")
            if not reason.strip():
                return states.OUTSIDER, "a break-glass override needs a reason"
            return states.BREAK_GLASS, ""
        if actor == AUTO_APPROVE and (self.auto_approve_below is not None or (
                request_kind == "stop" and self.auto_approve_own_stop)):  # a requester's own idle instance
            return states.AUTO_APPROVAL, ""
        if self.is_approver(actor):
            return states.APPROVER, ""
        why = "" if authenticated(actor) else \
            " (only an identity Slack or the Jupyter server authenticated can approve or reject)"
        return states.OUTSIDER, f"{actor} is not an approver{why}"

    def violations(self, spec: LaunchSpec | ExtendSpec) -> list[str]:
        """Every rule a launch, or an extension of one, breaks: its GPUs, type, region and pricing model, its
        estimated cost and the whole time to live it makes (a launch's, or its launch's with it)."""
        problems = []
        provider = spec.provider
        if provider not in self.allowed_providers:
            problems.append(f"launches on {provider} are off: the policy allows {', '.join(self.allowed_providers)} "
                            f"(allowed_providers)")
        if getattr(spec, "price_stale", False) and not self.allow_stale_prices:
            problems.append("its only price is a stale list's: refresh the catalog first, or set "
                            "allow_stale_prices = true in the policy")
        if spec.gpus > self.max_gpus:
            problems.append(f"{spec.gpus} GPUs ({spec.instances}× {spec.instance_type}) is over the limit of "
                            f"{self.max_gpus} per request")
        if spec.estimated_total > self.max_cost:
            problems.append(f"estimated {spec.estimated_total:,.2f} {self.currency} is over the limit of "
                            f"{self.max_cost:,.2f} {self.currency} per request")
        if not any(fnmatch.fnmatchcase(spec.instance_type, p) for p in self.allowed_instance_types):
            problems.append(f"instance type {spec.instance_type} is not allowed "
                            f"({', '.join(self.allowed_instance_types)})")
        if self.allowed_regions and spec.region not in self.allowed_regions:
            problems.append(f"region {spec.region} is not allowed ({', '.join(self.allowed_regions)})")
        if spec.pricing_model not in self.allowed_pricing_models:
            problems.append(f"{spec.pricing_model} is not allowed ({', '.join(self.allowed_pricing_models)})")
        if self.max_ttl_s is not None and spec.ttl_s > self.max_ttl_s:
            problems.append(f"a time to live of {format_duration(spec.ttl_s)} is over the limit of "
                            f"{format_duration(self.max_ttl_s)} (max_ttl)")
        if isinstance(spec, ExtendSpec) and self.max_ttl_s is None and spec.extra_s > MAX_EXTENSION_S:
            # Without a max_ttl, one extension adds at most 30 days: longer is a new launch, priced as one.
            problems.append(f"an extension adds at most {format_duration(MAX_EXTENSION_S)} when the policy sets "
                            "no max_ttl; for longer, ask for a new launch")
        return problems


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.replace(";", ",").split(",") if part.strip())


def allow_provider(source: PolicySource, provider: str) -> str:
    """How an admin lets launches use `provider` too, where the policy they have was read from."""
    return source.to_set("allowed_providers", f'["aws", "{provider}"]', f"aws,{provider}")


def load_policy(environ: Mapping[str, str] | None = None) -> Policy:
    """Policy from `GPU_ASSIST_CONFIG` (TOML) and `GPU_ASSIST_*` variables; bad values raise PolicyError, naming
    the file and the variables it was read from."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    path = environ.get(CONFIG_VARIABLE)
    if path:
        try:
            values.update(tomllib.loads(Path(path).read_text(encoding="utf-8")).get("policy", {}))
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise PolicyError(f"cannot read the config file {path} ({CONFIG_VARIABLE}): {error}") from None
    from_variables = frozenset(key for key, variable in VARIABLES.items() if environ.get(variable))
    values.update({key: environ[VARIABLES[key]] for key in from_variables})
    source = PolicySource(config=path or None, variables=from_variables)
    try:
        return _policy(values, environ, source)
    except PolicyError as error:
        raise PolicyError(f"{error.message} (policy from {source})", hint=error.hint, example=error.example) from None


def _policy(values: Mapping[str, Any], environ: Mapping[str, str], source: PolicySource) -> Policy:
    try:
        policy = Policy(
            approvers=frozenset(_list(values.get("approvers", ()))),
            max_gpus=int(values.get("max_gpus", 64)),
            max_cost=Decimal(str(values.get("max_cost", 50_000))),
            currency=str(values.get("currency", "USD")).upper(),
            allowed_instance_types=_list(values.get("allowed_instance_types", GPU_INSTANCE_TYPES)),
            allowed_regions=_list(values.get("allowed_regions", ())),
            allowed_pricing_models=_list(values.get("allowed_pricing_models", ("on-demand", "spot"))),
            **_launch_clouds(values),
            auto_approve_below=Decimal(str(values["auto_approve_below"])) if values.get("auto_approve_below")
            else None,
            expiry_s=int(values.get("expiry_s", 24 * 3600)),
            max_ttl_s=_duration(values.get("max_ttl")),
            default_region=str(values.get("default_region") or default_region(environ)),
            ami_id=values.get("ami_id"), ami_ssm_parameter=values.get("ami_ssm_parameter"),
            subnet_ids=dict(values.get("subnet_ids", {})),
            security_group_ids=_list(values.get("security_group_ids", ())),
            key_name=values.get("key_name"), stop_action=str(values.get("stop_action", "terminate")),
            cost_tags={str(k): str(v) for k, v in dict(values.get("cost_tags", {})).items()},
            break_glass=_flag(values.get("break_glass", False)),
            budgets=parse_budgets(dict(values.get("budgets", {})), str(values.get("currency", "USD")).upper(),
                                  _known_currencies()),
            auto_approve_own_stop=_flag(values.get("auto_approve_own_stop", False)),
            idle_window_s=int(values.get("idle_window_s", 3600)),
            idle_threshold_pct=float(values.get("idle_threshold_pct", 10.0)),
            digest_hour=int(values["digest_hour"]) if values.get("digest_hour") not in (None, "") else None,
            digest_channel=values.get("digest_channel") or None,
            source=source,
        )
    except (ValueError, ArithmeticError) as error:
        raise PolicyError(f"bad policy setting: {error}") from None
    if policy.digest_hour is not None and not 0 <= policy.digest_hour <= 23:
        raise PolicyError(f"digest_hour must be an hour from 0 to 23 (UTC), not {policy.digest_hour}",
                          example="digest_hour = 9")
    if policy.stop_action not in ("terminate", "stop"):
        raise PolicyError(f"stop_action must be terminate or stop, not '{policy.stop_action}'")
    return policy


def _launch_clouds(values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of launching on other clouds than AWS: allowed_providers, allow_stale_prices, [policy.clouds]."""
    return {"allowed_providers": _providers(values.get("allowed_providers", ("aws",))),
            "allow_stale_prices": _flag(values.get("allow_stale_prices", False)),
            "clouds": _clouds(values.get("clouds", {}))}


def _providers(value: str | Iterable[object]) -> tuple[str, ...]:
    """`allowed_providers = ["aws", "tencent"]`: clouds gpu-assist launches on, by the grammar's provider names."""
    providers = tuple(p.lower() for p in _list(value))
    unknown = [p for p in providers if p not in LAUNCH_PROVIDERS]
    if unknown or not providers:
        raise PolicyError(f"allowed_providers: gpu-assist launches on {', '.join(LAUNCH_PROVIDERS)}, not "
                          f"'{', '.join(unknown) or 'nothing'}'", example='allowed_providers = ["aws", "tencent"]')
    return providers


def _clouds(value: object) -> dict[str, dict[str, str]]:
    """[policy.clouds.<cloud>] tables: each cloud's account alias, launch region, image and network (no secrets:
    credentials come from each SDK's own chain)."""
    if not isinstance(value, dict):
        raise PolicyError("[policy.clouds] must be tables, one per cloud",
                          example='[policy.clouds.tencent]\naccount = "acme-gz"')
    clouds: dict[str, dict[str, str]] = {}
    for provider, settings in value.items():
        unknown = [k for k in dict(settings) if k not in CLOUD_SETTINGS] if isinstance(settings, dict) else ["?"]
        if provider not in LAUNCH_PROVIDERS or unknown:
            raise PolicyError(f"[policy.clouds.{provider}]: clouds are {', '.join(LAUNCH_PROVIDERS)}; settings "
                              f"are {', '.join(CLOUD_SETTINGS)}", example='[policy.clouds.tencent]\naccount = "acme"')
        clouds[provider] = {str(k): str(v) for k, v in settings.items()}
    return clouds


def _known_currencies() -> set[str]:
    """The currencies the catalog has exchange rates for: a budget in any other could never be compared."""
    return set(load_fx(default_catalog_dir() / "fx.csv").per_usd)


def _duration(value: object) -> int | None:
    """`max_ttl = "14d"`, in the grammar's durations (1 minute to 5 years); absent: None."""
    if value in (None, ""):
        return None
    try:
        return parse_duration(str(value), example='max_ttl = "14d"')
    except GpuAssistError as error:
        raise PolicyError(f"bad policy setting max_ttl: {error.message}", hint=error.hint,
                          example='max_ttl = "14d"') from None


def _flag(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("1", "true", "yes", "on"):
        return True
    if str(value).lower() in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("a switch (break_glass, auto_approve_own_stop, allow_stale_prices) must be true or false, "
                     f"not '{value}'")


def _list(value: str | Iterable[object]) -> tuple[str, ...]:
    """A TOML list, or a comma-separated environment variable."""
    return _split(value) if isinstance(value, str) else tuple(str(v) for v in value)
