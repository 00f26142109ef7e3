"""What each kind of request asks for, as typed values: `LaunchSpec`, `StopSpec`, `ExtendSpec`, and `OptionId`
(a quote row as `launch` and the quote card's button name it).

Planning makes the specs; policy, provisioning and the renderers read them; the store keeps them in its JSON
column: `to_json()` writes the form requests have always been stored in (money as decimal strings), and
`spec_from_json` reads it back, so a row written before these types loads as it was.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar, Collection, Protocol

from ..catalog.providers import LAUNCH_PROVIDERS
from ..facts import Fact, PricingModel, StaleLaunchPrice
from ..pricing.compare import ComparisonRow
from ..pricing.query import Query, format_duration

_TIME = "%Y-%m-%dT%H:%M:%SZ"  # how a time is written in a spec, and in the gpu-assist:expires-at tag


def tag_time(moment: dt.datetime) -> str:
    return moment.strftime(_TIME)


@dataclass(frozen=True)
class OptionId:
    """`aws:p4d.24xlarge:us-east-1:spot`, `gcp:a3-highgpu-8g:us-central1:on-demand`: one quote row of a cloud
    gpu-assist launches on, as `launch` and the quote card's button take it."""

    instance_type: str
    region: str
    pricing_model: PricingModel
    provider: str = "aws"
    PATTERN: ClassVar[re.Pattern[str]] = re.compile(r"^([a-z0-9]+):([^:\s]+):([^:]+):(on-demand|spot)$", re.I)

    def __str__(self) -> str:
        return f"{self.provider}:{self.instance_type}:{self.region}:{self.pricing_model}"

    @classmethod
    def parse(cls, word: str) -> OptionId | None:
        """The option a word names, or None when it is not an option id of a cloud gpu-assist launches on. The
        provider and pricing model are read in any case, an AWS type and region too; other clouds' names as
        written (Azure's and Verda's types have capitals)."""
        match = cls.PATTERN.match(word.strip())
        provider = match[1].lower() if match else ""
        if match is None or provider not in LAUNCH_PROVIDERS:
            return None
        instance_type, region = (match[2].lower(), match[3].lower()) if provider == "aws" else (match[2], match[3])
        return cls(instance_type, region, PricingModel(match[4].lower()), provider)


def launch_option(row: ComparisonRow, launches: Collection[str]) -> OptionId | None:
    """What a comparison row's Request launch asks for, in every face that offers one, on a cloud the team
    launches on (`launches`: the policy's allowed providers): the price the row ranks by where it is an on-demand
    or spot one (spot only where the quote ranks by spot), else the row's cheapest verified on-demand or spot
    option."""
    options = [option for model, option in row.cells if model in ("on-demand", "spot") and option.verified]
    if row.provider not in launches or not options:
        return None
    option = row.best if row.best in options else min(options, key=lambda o: o.total)
    return OptionId(option.instance_type, option.region, option.pricing_model, row.provider)


class LaunchIntent(Protocol):
    """What to launch, as the approval path takes it (`Approvals.submit_launch`, `planning.plan_launch`): the
    faces' `commands.LaunchCommand` is one, checked by its shape, so the lifecycle imports no face. GPUs to price
    (`launch 8xA100 72h spot region=us-east-1`) or one quote row by its option id, a time to live, a project."""

    @property
    def what(self) -> Query | OptionId: ...

    @property
    def duration_s(self) -> int: ...

    @property
    def project(self) -> str | None: ...

    def words(self) -> str: ...


@dataclass(frozen=True)
class Candidate:
    """A region (and zone) where the approved instance type may launch at or under the approved ceiling."""

    region: str
    zone: str | None
    hourly: Decimal


@dataclass(frozen=True)
class Checks:
    dry_run: str
    quota: str


@dataclass(frozen=True)
class LaunchSpec:
    kind: ClassVar[str] = "launch"
    request_id: str
    requester: str
    text: str                 # what was asked, in the grammar's words (for people; never parsed again)
    gpu: str
    gpus: int                 # all instances together
    instance_type: str
    instances: int
    vcpus: int | None         # per instance, for the quota check
    region: str
    zone: str
    pricing_model: PricingModel
    duration_s: int           # the time to live, from when it runs
    hourly: Decimal           # per instance
    ceiling_hourly: Decimal   # per instance: never launched above it (spot: MaxPrice)
    estimated_total: Decimal
    currency: str
    candidates: tuple[Candidate, ...]
    price_source: str
    project: str | None = None
    checks: Checks | None = None
    launched_region: str | None = None
    launched_zone: str | None = None
    provider: str = "aws"     # the cloud it launches on (`provision.Clouds` picks its provisioner by it)
    account: str | None = None  # the policy's alias of the account it launches in, for the approval card
    price_stale: bool = False   # priced only by a list older than the staleness limit (the policy allowed it)
    native_currency: str | None = None        # the cloud's own currency when it is not `currency` (CNY)
    native_ceiling_hourly: Decimal | None = None  # the ceiling in it, as the cloud's API takes it (spot MaxPrice)
    cluster: str | None = None  # asked through SkyPilot's gate: the cluster name its approval admits,
    fingerprint: str | None = None  # and the fingerprint of the task's resources, which finds it again

    @property
    def price_notes(self) -> tuple[Fact, ...]:
        """What an approver must know about the price: that it is stale, from which list and date."""
        source, _, as_of = self.price_source.partition(" ")
        return (StaleLaunchPrice(self.provider, source, as_of),) if self.price_stale else ()

    @property
    def ttl_s(self) -> int:
        return self.duration_s

    @property
    def where(self) -> str:
        """The region its instances are in (a capacity fallback may have moved them from the planned one)."""
        return self.launched_region or self.region

    def describe(self, currency: str) -> str:
        return (f"{self.instances}x{self.instance_type} ({self.gpus}x{self.gpu}) {self.pricing_model} in "
                f"{self.region} for {format_duration(self.duration_s)}, est. {self.estimated_total:,.2f} {currency}")


@dataclass(frozen=True)
class StopSpec:
    kind: ClassVar[str] = "stop"
    request_id: str
    instance_ids: tuple[str, ...]
    region: str
    launch_requests: tuple[str, ...]  # the launches whose instances these are
    provider: str = "aws"

    def describe(self, currency: str) -> str:
        return f"stop {', '.join(self.instance_ids)}"


@dataclass(frozen=True)
class ExtendSpec:
    """Moving a running launch's end `extra_s` later, priced at its approved hourly price."""

    kind: ClassVar[str] = "extend"
    request_id: str
    launch_request: str
    extra_s: int
    launch_ends_at: dt.datetime  # its end when this was asked
    ttl_s: int                   # the launch's whole time to live with this extension
    hourly: Decimal              # all its instances together
    estimated_total: Decimal
    gpu: str
    gpus: int
    instance_type: str
    instances: int
    pricing_model: PricingModel
    region: str                  # where its instances are
    project: str | None = None
    provider: str = "aws"        # its launch's cloud: the policy's allowed_providers apply to extensions too

    def describe(self, currency: str) -> str:
        return (f"extend {self.launch_request} by {format_duration(self.extra_s)}, est. {self.estimated_total:,.2f} "
                f"{currency}")


Spec = LaunchSpec | StopSpec | ExtendSpec
_KINDS: dict[str, type[LaunchSpec] | type[StopSpec] | type[ExtendSpec]] = {
    spec.kind: spec for spec in (LaunchSpec, StopSpec, ExtendSpec)}
_LATE = ("project", "checks", "launched_region", "launched_zone", "account", "native_currency",
         "native_ceiling_hourly", "cluster", "fingerprint")  # written only once known
_DEFAULTS = {"provider": "aws", "price_stale": False}  # left out when so: AWS rows are stored as they always were


def to_json(spec: Spec) -> dict[str, Any]:
    """The spec as its JSON column holds it."""
    data: dict[str, Any] = {}
    for item in dataclasses.fields(spec):
        value = getattr(spec, item.name)
        if (value is None and item.name in _LATE) or _DEFAULTS.get(item.name, ()) == value:
            continue
        data[item.name] = _plain(value)
    return data


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return tag_time(value)
    if isinstance(value, (Candidate, Checks)):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, PricingModel):
        return value.value
    return value


def spec_from_json(kind: str, data: dict[str, Any]) -> Spec:
    """A stored spec, in any form gpu-assist has written (later fields absent from older rows)."""
    cls = _KINDS[kind]
    values: dict[str, Any] = {}
    for item in dataclasses.fields(cls):
        if item.name not in data:
            continue  # a field added since this row was written: its default
        value, typed = data[item.name], str(item.type)
        if item.name == "candidates":
            value = tuple(Candidate(c["region"], c.get("zone"), Decimal(str(c["hourly"]))) for c in value)
        elif item.name == "checks":
            value = Checks(**value)
        elif typed in ("Decimal", "Decimal | None"):
            value = Decimal(str(value))
        elif typed == "dt.datetime":
            value = dt.datetime.strptime(value, _TIME).replace(tzinfo=dt.timezone.utc)
        elif typed.startswith("tuple"):
            value = tuple(value)
        elif typed == "PricingModel":
            value = PricingModel(value)
        values[item.name] = value
    return cls(**values)
