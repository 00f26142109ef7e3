"""One command grammar for every face: `quote 8xA100 72h spot top=5`, `help`.

The Slack text after `/gpu`, the CLI's arguments and the Jupyter widgets' inputs all become
the command objects below and run through `run()`, so every face gives the same numbers.
Command options are words too: `top=5`, `all-regions`, `include-flagged`, `include-unverified`, `verified-only`,
`list` (the flat per-option list instead of the comparison), `sort=total|price|per-gpu|provider`,
`max-price=30` (per job-hour, in the quote's currency), `min-gpu-memory=80` (GiB per GPU).
"""

from __future__ import annotations

import collections
import datetime as dt
import os
import threading
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from .aws import INSTANCE_ID, default_region
from .budgets import PROJECT
from .catalog import Catalog, load_catalog
from .compare import SORTS, Comparison, compare, refine
from .errors import ParseError
from .fleet import FleetReport
from .pricing import Quote, quote
from .recommend import Recommendation, recommend
from .records import REQUEST_ID, AuditEvent, RequestRecord
from .request import Request, format_duration, normalise, parse_request
from .specs import OptionId
from .tco import TcoInput, TcoResult, parse_tco, total_cost_of_ownership
from .utilization import Snapshot
from .workload import Workload, parse_workload

HELP = """\
gpu-assist — GPU prices across clouds, for the whole job.

  quote 8xA100 72h                       8 A100s for 72 hours: providers side by side, cheapest first
  quote 8xA100 72h list                  every option (offer × pricing model) as a flat list
  quote 8xA100 72h sort=price max-price=30 min-gpu-memory=40 include-unverified top=20
  quote 4xA100-80GB 2d spot              spot only
  quote A100:8 3d region=us-east-1       one region (or a group: region=us, eu, asia, cn)
  quote 2×H100 1w provider=aws,gcp       some providers only
  quote 8卡A100 72小时 currency=CNY         Chinese works too; prices in CNY
  quote 8xA100 72h top=5                 the 5 cheapest (default, and top=all: every option)
  quote 8xH100 1mo pricing=reserved-1y,monthly top=5 all-regions include-flagged verified-only

  recommend train 7B tokens=20B deadline=72h budget=$5000     cheapest plan that meets the deadline
  recommend finetune 70B lora                                 which GPUs fit, priced per hour
  recommend serve 70B fp8 users=50                            serving for a month, tokens/s per user
  recommend train 175B bf16 deadline=2w region=cn             only Chinese regions
  recommend train 7B gpu_hours=576@A100 own=2xRTX3090 mfu=0.35 explain

  tco 1xA100 hardware=100k facility=20k power=15k ops=50k currency=CNY usage=200h/mo cloud=12

  util                                   the GPUs on this machine (NVML)
  util fleet region=us-east-1 window=30m threshold=10     gpu-assist's cloud instances; idle ones called out

  launch 8xA100 72h spot region=us-east-1    ask to launch the cheapest allowed AWS offer; an approver decides
  launch aws:p4d.24xlarge:us-east-1:on-demand 72h    a quote row, by its option id
  launch 8xA100 72h project=vision       charged to a project's budget, tagged on the instances
  stop i-0123456789abcdef0               ask to stop an instance gpu-assist launched
  extend r-0123456789ab 24h              ask to move a running launch's time to live; an approver decides
  requests                               recent requests; `requests r-…` shows one with its audit trail

  spend                                  what gpu-assist's launches cost this month, by requester, project, …
  spend 2026-11 by=project               a month (or 7d, mtd, yesterday), one grouping
  spend 7d source=aws                    beside Cost Explorer's actual cost by gpu-assist's tag

  help                                   this text
"""

_FLAG_OPTIONS = ("all-regions", "include-flagged", "include-unverified", "verified-only", "explain", "list")
_VALUE_OPTIONS = ("top", "sort", "max-price", "min-gpu-memory")
ANSWERS_KEPT = 256


@dataclass(frozen=True)
class QuoteCommand:
    request: Request
    top: int | None = None
    all_regions: bool = False
    include_flagged: bool = False
    verified_only: bool = False
    include_unverified: bool = False
    view: str = "compare"  # or "list": the flat per-option list
    sort: str = "total"
    max_price: Decimal | None = None
    min_gpu_memory_gib: float | None = None


@dataclass(frozen=True)
class RecommendCommand:
    workload: Workload
    top: int | None = 10
    explain: bool = False


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
    row by its option id (`launch aws:p4d.24xlarge:us-east-1:spot 72h`, a quote card's button)."""

    what: Request | OptionId
    duration_s: int             # its time to live, from when it runs
    project: str | None = None  # charged to that project's budget, tagged on the instances

    def words(self) -> str:
        """The command in the grammar's words, for the record (never parsed again)."""
        if isinstance(self.what, OptionId):
            asked = f"{self.what} {format_duration(self.duration_s)}"
        else:
            request = self.what
            asked = " ".join([f"{request.count}x{request.gpu}", format_duration(self.duration_s),
                              *request.pricing_models, *(f"region={r}" for r in request.regions)])
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
    period: str = "mtd"
    by: str | None = None         # one of spend.GROUPS; None: all of them
    source: str = "records"       # or "aws": Cost Explorer beside the records


@dataclass(frozen=True)
class HelpCommand:
    text: str = HELP


Command = QuoteCommand | RecommendCommand | TcoCommand | UtilCommand | LaunchCommand | StopCommand | \
    ExtendCommand | RequestsCommand | SpendCommand | HelpCommand
Result = Quote | Comparison | Recommendation | TcoResult | Snapshot | FleetReport | HelpCommand | RequestDetail | \
    RequestRecord | tuple[RequestRecord, ...]


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _nvml_sampler():
    from .utilization import NvmlSampler

    return NvmlSampler()


def _aws_client(service: str, region: str | None):
    from .aws import client

    return client(service, region)


def _default_approvals(context: "Context"):
    from .approvals import Approvals
    from .policy import load_policy
    from .provision.aws import AwsProvisioner
    from .store import Store

    policy = load_policy()
    return Approvals(Store(), policy, AwsProvisioner(policy), context.catalog)


@dataclass
class Context:
    """What commands need from outside: the catalog, clocks, NVML and AWS, the request lifecycle, defaults.

    Faces build one per process (or per test) and pass it to `run`; the core never reaches for these itself.
    The shared objects are built once, under one lock (a server's first requests and its jobs thread may ask
    at the same instant); servers call `prepare()` before serving so the first request finds them ready.
    """

    catalog_loader: Callable[[], Catalog] = load_catalog
    today: Callable[[], dt.date] = dt.date.today
    now: Callable[[], dt.datetime] = _utc_now
    sampler_factory: Callable[[], object] = _nvml_sampler
    aws_client: Callable[[str, str | None], object] = _aws_client
    approvals_factory: Callable[["Context"], object] | None = None
    currency: str = field(default_factory=lambda: os.environ.get("GPU_ASSIST_CURRENCY", "USD").upper())
    _catalog: Catalog | None = None
    _sampler: object | None = None
    _approvals: object | None = None
    _answers: "collections.OrderedDict" = field(default_factory=lambda: collections.OrderedDict())
    _answers_lock: threading.Lock = field(default_factory=threading.Lock)
    _build_lock: threading.RLock = field(default_factory=threading.RLock)  # re-entrant: approvals needs the catalog

    def remember(self, key, compute: Callable[[], object]):
        """Quotes, plans and TCO are pure functions of (command, catalog, date, currency): the last 256 answers
        are kept, so a team asking the same question again gets it without recomputing."""
        with self._answers_lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key]
        value = compute()
        with self._answers_lock:
            self._answers[key] = value
            while len(self._answers) > ANSWERS_KEPT:
                self._answers.popitem(last=False)
        return value

    def prepare(self) -> "Context":
        """Build the catalog and the request lifecycle now, upgrading the store's schema: what a server does
        once before it serves (a bad policy or an unreachable database fails here, not on a user's click)."""
        self.catalog  # noqa: B018 - built for its side effect
        self.approvals  # noqa: B018
        return self

    def _built(self, name: str, build: Callable[[], object]):
        value = getattr(self, name)
        if value is None:
            with self._build_lock:
                value = getattr(self, name)
                if value is None:
                    value = build()
                    setattr(self, name, value)
        return value

    @property
    def approvals(self):
        """The request lifecycle over the configured store (schema upgraded), policy and AWS."""
        return self._built("_approvals", lambda: (self.approvals_factory or _default_approvals)(self))

    @property
    def sampler(self):
        return self._built("_sampler", self.sampler_factory)

    @property
    def catalog(self) -> Catalog:
        return self._built("_catalog", self.catalog_loader)


def _take_options(words: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Split command options (`top=5`, `--top 5`, `all-regions`, `sort=price`) from the request's own words."""
    rest: list[str] = []
    options: dict[str, Any] = {}
    remaining = iter(words)
    for word in remaining:
        lowered = word.lower()
        key = lowered[2:] if lowered.startswith("--") else lowered
        name, has_value, value = key.partition("=")
        if key in _FLAG_OPTIONS:
            options[key] = True
        elif name in _VALUE_OPTIONS and has_value:
            options[name] = value
        elif key in _VALUE_OPTIONS and lowered.startswith("--"):
            options[key] = next(remaining, "")
        else:
            rest.append(word)
    if "top" in options:
        options["top"] = _parse_top(options["top"])
    if "sort" in options and options["sort"] not in SORTS:
        raise ParseError(f"unknown sort '{options['sort'][:40]}'", hint="sort by " + ", ".join(SORTS),
                         example="quote 8xA100 72h sort=price")
    if "max-price" in options:
        options["max-price"] = _positive(options["max-price"].lstrip("$¥"), "max-price", Decimal,
                                         "quote 8xA100 72h max-price=30")
    if "min-gpu-memory" in options:
        text = options["min-gpu-memory"].removesuffix("gib").removesuffix("gb")
        options["min-gpu-memory"] = float(_positive(text, "min-gpu-memory", Decimal,
                                                    "quote 8xA100 72h min-gpu-memory=80"))
    return rest, options


def _positive(text: str, name: str, kind, example: str):
    try:
        value = kind(text)
    except (InvalidOperation, ValueError):
        value = None
    if value is None or not value.is_finite() or value <= 0:
        raise ParseError(f"{name} must be a positive number, got '{text[:40]}'", example=example)
    return value


def _parse_top(value: str) -> int | None:
    """`top=5` keeps the 5 cheapest, `top=all` every one (None); 0 would show nothing and is refused."""
    if value.lower() == "all":
        return None
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= 10_000:
        raise ParseError(f"top must be a number from 1 to 10000, or all; got '{value[:40]}'",
                         example="quote 8xA100 72h top=5")
    return int(value)


def parse_command(text: str, gpus) -> Command:
    """Text → command object; ParseError for anything else."""
    words = normalise(text).split() if isinstance(text, str) else []
    if not words or words[0].lower() in ("help", "-h", "--help", "?"):
        return HelpCommand()
    verb, rest = words[0].lower(), words[1:]
    if verb == "quote":
        rest, options = _take_options(rest)
        return QuoteCommand(
            request=parse_request(" ".join(rest), gpus),
            top=options.get("top"),
            all_regions=options.get("all-regions", False),
            include_flagged=options.get("include-flagged", False),
            verified_only=options.get("verified-only", False),
            include_unverified=options.get("include-unverified", False),
            view="list" if options.get("list") else "compare",
            sort=options.get("sort", "total"),
            max_price=options.get("max-price"),
            min_gpu_memory_gib=options.get("min-gpu-memory"),
        )
    if verb == "recommend":
        rest, options = _take_options(rest)
        return RecommendCommand(workload=parse_workload(" ".join(rest), gpus), top=options.get("top", 10),
                                explain=options.get("explain", False))
    if verb == "tco":
        return TcoCommand(parse_tco(" ".join(rest), gpus))
    if verb == "util":
        return _parse_util(rest)
    if verb == "launch":
        return _parse_launch(rest, gpus)
    if verb == "stop":
        ids = tuple(w.lower() for w in rest if not w.lower().startswith("region="))
        region = next((w.split("=", 1)[1] for w in rest if w.lower().startswith("region=")), None)
        bad = [i for i in ids if not INSTANCE_ID.match(i)]
        if not ids or bad:
            raise ParseError(f"'{bad[0]}' is not an instance id" if bad else "name the instances to stop",
                             example="stop i-0123456789abcdef0")
        return StopCommand(ids, region)
    if verb == "extend":
        return _parse_extend(rest)
    if verb == "requests":
        if len(rest) > 1 or (rest and not REQUEST_ID.match(rest[0].lower())):
            raise ParseError("requests takes nothing or one request id", example="requests r-0123456789ab")
        return RequestsCommand(rest[0].lower() if rest else None)
    if verb == "spend":
        return parse_spend(rest)
    raise ParseError(f"unknown command '{verb}'", hint="commands: quote, recommend, tco, spend, help",
                     example="quote 8xA100 72h")


def _parse_launch(words: list[str], gpus) -> LaunchCommand:
    """`launch 8xA100 72h spot region=… project=…` (on-demand unless spot is said; the duration is the time to
    live, so it must be said), or `launch aws:p4d.24xlarge:us-east-1:spot 72h`."""
    from .request import parse_duration

    example = "launch 8xA100 72h spot region=us-east-1"
    projects = [w.split("=", 1)[1] for w in words if w.lower().startswith("project=")]
    rest = [w for w in words if not w.lower().startswith("project=")]
    if not rest:
        raise ParseError("say what to launch", example=example)
    if len(projects) > 1 or (projects and not PROJECT.match(projects[0])):
        raise ParseError(f"project '{projects[-1]}' must be one word of letters, digits and _.:/+=@- (at most 64)",
                         example="launch 8xA100 72h project=vision")
    project = projects[0] if projects else None
    option = OptionId.parse(rest[0])
    if option is not None:
        if len(rest) != 2:
            raise ParseError("say for how long, and nothing else", example=f"launch {option} 72h")
        return LaunchCommand(option, parse_duration(rest[1], example=f"launch {option} 72h"), project)
    request = parse_request(" ".join(rest), gpus)
    if set(request.providers) - {"aws"}:
        raise ParseError("gpu-assist launches on AWS only", example=example)
    if not set(request.pricing_models) <= {"on-demand", "spot"}:
        raise ParseError("launch buys on-demand or spot", example=example)
    if not request.duration_given:
        raise ParseError("say for how long: the duration is the instance's time to live", example=example)
    request = replace(request, providers=("aws",), pricing_models=request.pricing_models or ("on-demand",))
    return LaunchCommand(request, request.duration_s, project)


def _parse_extend(words: list[str]) -> ExtendCommand:
    """`extend r-… 24h`: which launch request, and how much longer (a duration of the grammar)."""
    from .request import parse_duration

    example = "extend r-0123456789ab 24h"
    ids = [w.lower() for w in words if w.lower().startswith("r-")]
    others = [w for w in words if not w.lower().startswith("r-")]
    if len(ids) != 1 or len(others) != 1:
        raise ParseError("say which launch request and how much longer", example=example)
    if not REQUEST_ID.match(ids[0]):
        raise ParseError(f"'{ids[0]}' is not a request id", hint="request ids look like r-0123456789ab",
                         example=example)
    if others[0].startswith("-"):
        raise ParseError(f"'{others[0]}': an extension is positive", example=example)
    return ExtendCommand(ids[0], parse_duration(others[0], example=example))


def parse_spend(words: list[str]) -> SpendCommand:
    """`spend [period] [by=group] [source=aws]`; the period is checked here, against a fixed date, for its form."""
    from .spending import GROUPS, PERIOD_EXAMPLE, parse_period

    values: dict = {}
    for word in words:
        key, has_value, value = word.lower().partition("=")
        if key == "by" and value in GROUPS:
            values["by"] = value
        elif key == "by":
            raise ParseError(f"cannot group spend by '{value[:40]}'", hint="by=" + ", by=".join(GROUPS),
                             example="spend mtd by=project")
        elif key == "source" and value in ("aws", "records"):
            values["source"] = value
        elif key == "source":
            raise ParseError(f"unknown spend source '{value[:40]}'", hint="source=records (default) or source=aws",
                             example="spend 7d source=aws")
        elif not has_value and "period" not in values:
            parse_period(key, dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
            values["period"] = key
        else:
            raise ParseError(f"didn't understand '{word[:40]}'", hint="spend [period] [by=group] [source=aws]",
                             example=PERIOD_EXAMPLE)
    return SpendCommand(**values)


def _parse_util(words: list[str]) -> UtilCommand:
    from .request import parse_duration

    values: dict = {}
    ids = []
    for word in words:
        lowered = word.lower()
        key, _, value = lowered.partition("=")
        if lowered in ("fleet", "--fleet", "cloud", "aws"):
            values["fleet"] = True
        elif lowered.startswith("i-"):
            values["fleet"] = True
            ids.append(lowered)
        elif key == "region" and value:
            values.update(fleet=True, region=value)
        elif key == "window" and value:
            values["window_s"] = parse_duration(value, example="util fleet window=30m")
        elif key == "threshold" and value:
            try:
                values["threshold_pct"] = float(value.rstrip("%"))
            except ValueError:
                raise ParseError(f"threshold must be a percentage, not '{value}'",
                                 example="util fleet threshold=10") from None
            if not 0 < values["threshold_pct"] <= 100:
                raise ParseError("threshold must be between 0 and 100", example="util fleet threshold=10")
        else:
            raise ParseError(f"didn't understand '{word}'", hint="util [fleet] [region=…] [window=30m] "
                             "[threshold=10] [i-…]", example="util fleet region=us-east-1")
    return UtilCommand(instance_ids=tuple(ids), **values)


def _compute(command, context: Context, today: dt.date):
    if isinstance(command, QuoteCommand):
        return quote_view(command, context.catalog, today=today, currency=context.currency)
    if isinstance(command, RecommendCommand):
        return recommend(command.workload, context.catalog, today=today, currency=context.currency, top=command.top)
    return total_cost_of_ownership(command.inputs, context.catalog)


def spend_of(command: SpendCommand, context: Context):
    """The spend report a command asks for: the store's launches priced over the period, with this month's
    budgets and, for source=aws, Cost Explorer's actual cost by gpu-assist's request tag."""
    from .budgets import standing
    from .spending import month_start, parse_period, spend_report

    approvals, now = context.approvals, context.now()
    period = parse_period(command.period, now)
    policy = approvals.policy
    records = approvals.store.spend_rows(min(period.start, month_start(now)))
    budgets = standing(policy.budgets, records, now, default_project=policy.default_project) \
        if policy.budgets else ()
    actual = None
    if command.source == "aws":
        from .cost_explorer import actual_cost

        actual = actual_cost(context.aws_client("ce", "us-east-1"), period)
    return spend_report(records, period, now, currency=policy.currency, default_project=policy.default_project,
                        budgets=budgets, actual=actual, by=command.by)


def quote_view(command: QuoteCommand, catalog: Catalog, *, today: dt.date, currency: str) -> Quote | Comparison:
    """The quote a command asks for: every option priced, filtered and sorted (`refine`), then either the
    comparison (`top` rows) or the flat list (`top` options)."""
    priced = quote(command.request, catalog, today=today, currency=currency, all_regions=command.all_regions,
                   include_flagged=command.include_flagged, verified_only=command.verified_only)
    refined = refine(priced, sort=command.sort, max_price=command.max_price,
                     min_gpu_memory_gib=command.min_gpu_memory_gib, include_unverified=command.include_unverified)
    if command.view == "list":
        return replace(refined, options=refined.options[:command.top]) if command.top else refined
    return compare(refined, top=command.top, sort=command.sort, include_unverified=command.include_unverified)


def run(command: Command, context: Context, *, actor: str | None = None) -> Result:
    """Execute a parsed command against the context; results are rendered by `render/`.

    `actor` is who asks, as `realm:name` (`gpu_assist.identity`). Requests record it; approvals check it.
    """
    if isinstance(command, (LaunchCommand, StopCommand, ExtendCommand)) and not actor:
        raise ParseError("who is asking? (the CLI takes --as USER or GPU_ASSIST_USER)")
    if isinstance(command, LaunchCommand):
        return context.approvals.submit_launch(actor, command)
    if isinstance(command, StopCommand):
        return context.approvals.submit_stop(actor, list(command.instance_ids), command.region)
    if isinstance(command, ExtendCommand):
        return context.approvals.submit_extend(actor, command.request_id, command.extra_s)
    if isinstance(command, RequestsCommand):
        store = context.approvals.store
        if command.request_id is None:
            return tuple(store.list(limit=20))
        record = store.get(command.request_id)
        if record is None:
            raise ParseError(f"no request {command.request_id}", example="requests")
        return RequestDetail(record, tuple(store.audit_trail(record.id)))
    if isinstance(command, SpendCommand):
        return spend_of(command, context)
    if isinstance(command, (QuoteCommand, RecommendCommand, TcoCommand)):
        today = context.today()
        return context.remember((command, today, context.currency, id(context.catalog)),
                                lambda: _compute(command, context, today))
    if isinstance(command, UtilCommand):
        if not command.fleet:
            return context.sampler.sample()
        from .fleet import fleet_usage

        region = command.region or default_region()
        return fleet_usage(context.aws_client("ec2", region), context.aws_client("cloudwatch", region),
                           context.catalog, region=region, now=context.now(), window_s=command.window_s,
                           threshold_pct=command.threshold_pct, instance_ids=list(command.instance_ids) or None,
                           currency=context.currency)
    return command
