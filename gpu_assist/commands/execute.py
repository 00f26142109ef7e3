"""`run`: one function per command type (`functools.singledispatch`), each calling the core with the Context's
catalog, clock and clients. This module imports every verb's core; the CLI answers a quote through `quoting.py`
alone, and imports this one only for the other verbs."""

from __future__ import annotations

import datetime as dt
from functools import singledispatch
from typing import Any

from ..catalog.regions import default_region
from ..clouds.cost_explorer import actual_cost
from ..clouds.fleet import fleet_usage
from ..errors import ParseError
from ..plan.recommendation import recommend
from ..plan.tco import total_cost_of_ownership
from ..team.budgets import standing
from ..team.commitments import plan_commitments
from ..team.periods import month_start
from ..team.spending import SpendReport, spend_report
from .context import Context
from .objects import (
    Command,
    CommitCommand,
    ExtendCommand,
    HelpCommand,
    LaunchCommand,
    QuoteCommand,
    RecommendCommand,
    RequestDetail,
    RequestsCommand,
    Result,
    SpendCommand,
    StopCommand,
    TcoCommand,
    UtilCommand,
)
from .quoting import quote_view


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
def _requests(command: RequestsCommand, context: Context, actor: str | None) -> Result:
    store = context.approvals.store
    if command.request_id is None:
        return tuple(store.list(limit=20))
    record = store.get(command.request_id)
    if record is None:
        raise ParseError(f"no request {command.request_id}", example="requests")
    return RequestDetail(record, tuple(store.audit_trail(record.id)))


@_execute.register(SpendCommand)
def _spend(command: SpendCommand, context: Context, actor: str | None) -> Result:
    return spend_of(command, context)


@_execute.register(CommitCommand)
def _commit(command: CommitCommand, context: Context, actor: str | None) -> Result:
    """Commitments from the launches of the last `months` whole months, priced from the catalog's terms."""
    approvals, now = context.approvals, context.now()
    since = month_start(now)
    for _ in range(command.months):
        since = month_start(since - dt.timedelta(days=1))
    return plan_commitments(approvals.store.spend_rows(since), context.catalog.offers_of_type, now,
                            currency=approvals.policy.currency, months=command.months)


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


def spend_of(command: SpendCommand, context: Context) -> SpendReport:
    """The spend report a command asks for: the store's launches priced over the period, with this month's
    budgets and, for source=aws, Cost Explorer's actual cost by gpu-assist's request tag."""
    approvals, now = context.approvals, context.now()
    period = command.period.at(now)
    policy = approvals.policy
    records = approvals.store.spend_rows(min(period.start, month_start(now)))
    budgets = tuple(standing(policy.budgets, records, now, default_project=policy.default_project)) \
        if policy.budgets else ()
    actual: Any = None
    if command.source == "aws":
        actual = actual_cost(context.aws_client("ce", "us-east-1"), period)
    return spend_report(records, period, now, currency=policy.currency, default_project=policy.default_project,
                        budgets=budgets, actual=actual, by=command.by)
