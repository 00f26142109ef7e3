"""The command objects every face builds (from `/gpu` text, argparse values or widgets) and `run` executes.

The types of their fields and results are imported for type checking only: a command object must not load the
core of every other verb (a quote would import recommend, tco, the fleet, spend and the request store's records
to build a `QuoteCommand`). `tests/unit/test_cold_path.py` pins what a quote imports.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Callable, TypeAlias

from ..catalog.providers import PROVIDERS
from ..facts import PricingModel
from ..pricing.compare import SORTS
from ..pricing.job_data import JobData
from ..pricing.query import CURRENCIES, MAX_GPUS, PRICING_MODELS, Query, format_duration, is_duration_s
from ..team.periods import AskedPeriod

if TYPE_CHECKING:
    import datetime as dt

    from ..clouds.fleet import FleetReport
    from ..host.nvml import Snapshot
    from ..lifecycle.records import AuditEvent, RequestRecord
    from ..lifecycle.specs import OptionId
    from ..plan.recommendation import Recommendation
    from ..plan.tco import TcoInput, TcoResult
    from ..plan.workload import Workload
    from ..pricing.compare import Comparison
    from ..pricing.quote import Quote
    from ..sources.freshness import SourceRefresh
    from ..team.commitments import CommitmentAdvice
    from ..team.spending import SpendReport

# Within 100 columns, the meanings of a group aligned by display width (a Chinese character takes two).
HELP = """\
gpu-assist — GPU prices across clouds, for the whole job.

  quote 8xA100 72h                       8 A100s, 72 hours: providers side by side, cheapest first
  quote 8xA100 72h list                  every option (offer × pricing model) as a flat list
  quote 8xA100 72h sort=price max-price=30 min-gpu-memory=40 include-unverified top=20
  quote 4xA100-80GB 2d spot              spot only
  quote A100:8 3d region=us-east-1       one region (or a group: region=us, eu, asia, cn)
  quote 2×H100 1w provider=aws,gcp       some providers only
  quote 8卡A100 72小时 currency=CNY      Chinese works too; prices in CNY
  quote 8xA100 72h top=5                 the 5 cheapest (default, and top=all: every option)
  quote 8xH100 1mo pricing=reserved-1y,monthly top=5 all-regions include-flagged verified-only
  quote 8xH100 72h disk=4TB data-in=2TB from=aws:us-east-1 data-out=200GB explain
                                         the whole bill: disks and data transfer in each total
  quote 8xA100 72h checkpoints=140GB every 30m   checkpoints kept in object storage

  recommend train 7B tokens=20B deadline=72h budget=5000      cheapest plan that meets the deadline
  recommend finetune 70B lora                                 which GPUs fit, cheapest total first
  recommend serve 70B fp8 users=50                            serving for a month, tokens/s per user
  recommend train 175B bf16 deadline=2w region=cn             only Chinese regions
  recommend train 7B gpu_hours=576@A100 own=2xRTX3090 mfu=0.35 explain
  recommend train 7B tokens=1T sort=fastest top=3            the three fastest plans

  tco 1xA100 hardware=100k facility=20k power=15k ops=50k currency=CNY usage=200h/mo cloud=12

  util                                                   the GPUs on this machine (NVML)
  util fleet region=us-east-1 window=30m threshold=10    AWS instances it launched; idle ones named

  launch 8xA100 72h spot region=us-east-1            ask to launch the cheapest allowed AWS offer
  launch aws:p4d.24xlarge:us-east-1:on-demand 72h    a quote row, by its option id
  launch 8xA100 72h project=vision                   charged to a project's budget and tagged
  launch 8xV100 72h provider=tencent                 on Tencent Cloud (or aliyun) if allowed
  stop i-0123456789abcdef0                           ask to stop an instance gpu-assist launched
  extend r-0123456789ab 24h                          ask for more time for a running launch
  requests                                           recent requests
  requests r-0123456789ab                            one, with its audit trail

  spend                                  what launches cost this month, by requester, project, …
  spend 2026-11 by=project               a month (or 7d, mtd, yesterday), one grouping
  spend 7d source=aws                    beside Cost Explorer's actual cost by gpu-assist's tag
  commit                                 reserved terms to buy, from the last 3 months of launches
  commit months=6                        from 6 whole months
  catalog                                each price source's observed date and last refresh

  help                                   this text
"""
MAX_TOP = 10_000


@dataclass(frozen=True)
class QuoteCommand:
    request: Query
    top: int | None = None
    all_regions: bool = False
    include_flagged: bool = False
    verified_only: bool = False
    include_unverified: bool = False
    view: str = "compare"  # or "list": the flat per-option list
    sort: str = "total"
    max_price: Decimal | None = None
    max_price_currency: str | None = None  # as written (`max-price=¥200`); None: the quote's
    min_gpu_memory_gib: float | None = None
    job_data: JobData | None = None  # disk=, data-in=, data-out=, checkpoints=, from= (the whole bill)
    explain: bool = False  # each part's arithmetic under the table

    def to_fields(self) -> dict[str, Any]:
        """The command as plain JSON values, the request's fields inlined and defaults left out: what a Slack
        button carries to ask the same question again (`from_fields` reads it back)."""
        values, defaults = _flat(self), _flat(QuoteCommand(Query(gpu=self.request.gpu)))
        fields_ = {name: list(value) if isinstance(value, tuple) else str(value) if isinstance(value, Decimal)
                   else value for name, value in values.items()
                   if name != "job_data" and (name == "gpu" or value != defaults[name])}
        if self.job_data is not None:
            fields_["job_data"] = self.job_data.to_fields()
        return fields_

    @classmethod
    def from_fields(cls, values: object) -> QuoteCommand:
        """The command `to_fields` gave; ValueError for anything it would not have written."""
        if not isinstance(values, dict) or not set(values) <= _FIELD_CHECKS.keys() or "gpu" not in values:
            raise ValueError("not the fields of a quote command")
        for name, value in values.items():
            if not _FIELD_CHECKS[name](value):
                raise ValueError(f"bad {name}")
        read: dict[str, Any] = {name: tuple(value) if isinstance(value, list) else value
                                for name, value in values.items()}
        if "max_price" in read:
            read["max_price"] = Decimal(read["max_price"])
        if "pricing_models" in read:
            read["pricing_models"] = tuple(map(PricingModel, read["pricing_models"]))
        if "job_data" in read:
            read["job_data"] = JobData.from_fields(read["job_data"])
        request_names = {f.name for f in fields(Query)}
        request = Query(**{k: v for k, v in read.items() if k in request_names})
        return replace(cls(request), **{k: v for k, v in read.items() if k not in request_names})


def _flat(command: QuoteCommand) -> dict[str, Any]:
    """The request's fields and the command's own, in one mapping."""
    return {**{f.name: getattr(command.request, f.name) for f in fields(Query)},
            **{f.name: getattr(command, f.name) for f in fields(QuoteCommand) if f.name != "request"}}


def _whole(low: int, high: int) -> Callable[[object], bool]:
    return lambda value: type(value) is int and low <= value <= high


def _names(known: tuple[str, ...]) -> Callable[[object], bool]:
    return lambda value: isinstance(value, list) and all(isinstance(v, str) and v in known for v in value)


def _positive_decimal(value: object) -> bool:
    try:
        return isinstance(value, str) and Decimal(value).is_finite() and Decimal(value) > 0
    except InvalidOperation:
        return False


_FIELD_CHECKS: dict[str, Callable[[object], bool]] = {
    "gpu": lambda value: isinstance(value, str) and 0 < len(value) <= 64,
    "count": _whole(1, MAX_GPUS),
    "duration_s": is_duration_s,
    "pricing_models": _names(PRICING_MODELS),
    "regions": lambda value: isinstance(value, list) and all(isinstance(v, str) and len(v) <= 64 for v in value),
    "providers": _names(PROVIDERS),
    "currency": lambda value: value is None or value in CURRENCIES,
    "assumptions": lambda value: isinstance(value, list) and all(isinstance(v, str) for v in value),
    "duration_given": lambda value: isinstance(value, bool),
    "variants": lambda value: isinstance(value, list) and all(isinstance(v, str) and 0 < len(v) <= 64 for v in value),
    "top": lambda value: value is None or _whole(1, MAX_TOP)(value),
    **{flag: lambda value: isinstance(value, bool)
       for flag in ("all_regions", "include_flagged", "verified_only", "include_unverified")},
    "view": lambda value: value in ("compare", "list"),
    "sort": lambda value: value in SORTS,
    "max_price": _positive_decimal,
    "max_price_currency": lambda value: value is None or value in CURRENCIES,
    "min_gpu_memory_gib": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)
    and 0 < value < float("inf"),
    "job_data": lambda value: isinstance(value, dict),  # checked field by field by `JobData.from_fields`
    "explain": lambda value: isinstance(value, bool),
}


@dataclass(frozen=True)
class RecommendCommand:
    workload: Workload
    top: int | None = 10
    explain: bool = False
    sort: str = "cost"  # `plan.plans.PLAN_SORTS`
    include_flagged: bool = False  # plan on prices the catalogs flag, as a quote shows them on request


@dataclass(frozen=True)
class TcoCommand:
    inputs: TcoInput


@dataclass(frozen=True)
class UtilCommand:
    fleet: bool = False
    region: str | None = None
    window_s: int = 1800
    threshold_pct: float = 10.0
    instance_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaunchCommand:
    """What to launch, parsed at the edge: GPUs to price (`launch 8xA100 72h spot region=us-east-1`), or one quote
    row by its option id (`launch aws:p4d.24xlarge:us-east-1:spot 72h`, a quote card's button). The approval path
    takes it as a `specs.LaunchIntent`."""

    what: Query | OptionId
    duration_s: int             # its time to live, from when it runs
    project: str | None = None  # charged to that project's budget, tagged on the instances

    def words(self) -> str:
        """The command in the grammar's words, for the record (never parsed again)."""
        if isinstance(self.what, Query):
            request = self.what
            clouds = [f"provider={p}" for p in request.providers if p != "aws"]  # AWS's launches read as always
            asked = " ".join([f"{request.count}x{request.gpu}", format_duration(self.duration_s),
                              *request.pricing_models, *(f"region={r}" for r in request.regions), *clouds])
        else:
            asked = f"{self.what} {format_duration(self.duration_s)}"
        return f"launch {asked}" + (f" project={self.project}" if self.project else "")



@dataclass(frozen=True)
class StopCommand:
    instance_ids: tuple[str, ...]
    region: str | None = None


@dataclass(frozen=True)
class ExtendCommand:
    """`extend r-… 24h`: move a running launch's time to live `extra_s` later, once an approver agrees."""

    request_id: str
    extra_s: int


@dataclass(frozen=True)
class RequestsCommand:
    request_id: str | None = None


@dataclass(frozen=True)
class RequestDetail:
    """One request with its audit trail, as `requests r-…` shows it."""

    record: RequestRecord
    trail: tuple[AuditEvent, ...]


@dataclass(frozen=True)
class SpendCommand:
    period: AskedPeriod = AskedPeriod()  # this month to date
    by: str | None = None         # one of spend.GROUPS; None: all of them
    source: str = "records"       # or "aws": Cost Explorer beside the records


@dataclass(frozen=True)
class CommitCommand:
    months: int = 3               # whole months of recorded launches to plan from


@dataclass(frozen=True)
class CatalogCommand:
    """`catalog`: the price sources a team's server refreshes, each with its observation date and last refresh."""


@dataclass(frozen=True)
class CatalogFreshness:
    """Each price source the team's config names or the jobs leader has refreshed, as it stands at `at`."""

    sources: tuple[SourceRefresh, ...]
    at: dt.datetime


@dataclass(frozen=True)
class HelpCommand:
    text: str = HELP


Command = QuoteCommand | RecommendCommand | TcoCommand | UtilCommand | LaunchCommand | StopCommand | \
    ExtendCommand | RequestsCommand | SpendCommand | CommitCommand | CatalogCommand | HelpCommand
# A string, so that naming the results imports none of their modules (mypy reads it as the union).
Result: TypeAlias = "Quote | Comparison | Recommendation | TcoResult | Snapshot | FleetReport | HelpCommand | " \
    "RequestDetail | RequestRecord | tuple[RequestRecord, ...] | SpendReport | CommitmentAdvice | CatalogFreshness"
