"""`run`: one function per command type (`functools.singledispatch`), each calling the core with the Context's
catalog, clock and clients. This module imports every verb's core; the CLI answers a quote through `quoting.py`
alone, and imports this one only for the other verbs."""

from __future__ import annotations

import datetime as dt
from functools import singledispatch

from ..catalog import default_catalog_dir
from ..catalog.regions import default_region
from ..clouds.fleet import fleet_usage
from ..errors import ParseError
from ..plan.recommendation import recommend
from ..plan.tco import total_cost_of_ownership
from ..sources.freshness import SourceRefresh, load_schedule, read_ledger
from .context import Context
from .objects import (
    CatalogCommand,
    CatalogFreshness,
    Command,
    CommitCommand,
    ExtendCommand,
    HelpCommand,
    LaunchCommand,
    QuoteCommand,
    RecommendCommand,
    RequestsCommand,
    Result,
    SpendCommand,
    StopCommand,
    TcoCommand,
    UtilCommand,
)
from .quoting import quote_view
from . import team_verbs


def run(command: Command, context: Context, *, actor: str | None = None) -> Result:
    """Execute a parsed command against the context; results are rendered by `render/`.

    `actor` is who asks, as `realm:name` (`gpu_assist.lifecycle.identity`). Requests record it; approvals check it.
    """
    return _execute(command, context, actor)


@singledispatch
def _execute(command: object, context: Context, actor: str | None) -> Result:
    raise TypeError(f"no verb runs {type(command).__name__}")


def _asker(actor: str | None) -> str:
    if not actor:
        raise ParseError("who is asking? (the CLI takes --as USER or GPU_ASSIST_USER)")
    return actor


@_execute.register(LaunchCommand)
def _launch(command: LaunchCommand, context: Context, actor: str | None) -> Result:
    return context.approvals.submit_launch(_asker(actor), command)


@_execute.register(StopCommand)
def _stop(command: StopCommand, context: Context, actor: str | None) -> Result:
    return context.approvals.submit_stop(_asker(actor), list(command.instance_ids), command.region)


@_execute.register(ExtendCommand)
def _extend(command: ExtendCommand, context: Context, actor: str | None) -> Result:
    return context.approvals.submit_extend(_asker(actor), command.request_id, command.extra_s)


@_execute.register(RequestsCommand)
@_execute.register(SpendCommand)
@_execute.register(CommitCommand)
def _team(command: RequestsCommand | SpendCommand | CommitCommand, context: Context, actor: str | None) -> Result:
    return team_verbs.answer(command, context)


@_execute.register(CatalogCommand)
def _catalog(command: CatalogCommand, context: Context, actor: str | None) -> Result:
    """The sources the team's config names, and any the leader refreshed before, from the shared directory."""
    ledger = read_ledger(default_catalog_dir())
    named = {name: SourceRefresh(name) for name in load_schedule().sources}
    return CatalogFreshness(tuple(sorted({**named, **ledger}.values(), key=lambda s: s.source)), context.now())


@_execute.register(QuoteCommand)
@_execute.register(RecommendCommand)
@_execute.register(TcoCommand)
def _remembered(command: QuoteCommand | RecommendCommand | TcoCommand, context: Context, actor: str | None) -> Result:
    """Quotes, plans and TCO depend only on the command, the date, the currency and the catalog: kept by those."""
    today = context.today()
    answer: Result = context.remember((command, today, context.currency, id(context.catalog)),
                                      lambda: _answer(command, context, today))
    return answer


@_execute.register(UtilCommand)
def _util(command: UtilCommand, context: Context, actor: str | None) -> Result:
    if not command.fleet:
        snapshot: Result = context.sampler.sample()
        return snapshot
    region = command.region or default_region()
    return fleet_usage(context.aws_client("ec2", region), context.aws_client("cloudwatch", region),
                       context.catalog, region=region, now=context.now(), window_s=command.window_s,
                       threshold_pct=command.threshold_pct, instance_ids=list(command.instance_ids) or None,
                       currency=context.currency)


@_execute.register(HelpCommand)
def _help(command: HelpCommand, context: Context, actor: str | None) -> Result:
    return command


@singledispatch
def _answer(command: object, context: Context, today: dt.date) -> Result:
    raise TypeError(f"no answer for {type(command).__name__}")


@_answer.register(QuoteCommand)
def _quote(command: QuoteCommand, context: Context, today: dt.date) -> Result:
    return quote_view(command, context.catalog, today=today, currency=context.currency)


@_answer.register(RecommendCommand)
def _recommend(command: RecommendCommand, context: Context, today: dt.date) -> Result:
    return recommend(command.workload, context.catalog, today=today, currency=context.currency, top=command.top,
                     sort=command.sort, include_flagged=command.include_flagged)


@_answer.register(TcoCommand)
def _tco(command: TcoCommand, context: Context, today: dt.date) -> Result:
    return total_cost_of_ownership(command.inputs, context.catalog)
