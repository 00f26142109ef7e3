"""The verbs that read the team's store: `requests`, `spend` and `commit`. Apart from `execute.py` (which runs them
with every other verb), so that the CLI answers them without loading the other verbs' cores; with `team_grammar.py`
and the context's store and policy, a store verb loads no lifecycle, no cloud and, but for `commit`, no catalog."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..clouds.cost_explorer import actual_cost
from ..errors import ParseError
from ..team.budgets import standing
from ..team.commitments import CommitmentAdvice, plan_commitments
from ..team.periods import month_start
from ..team.spending import SpendReport, spend_report
from .context import Context
from .objects import CommitCommand, RequestDetail, RequestsCommand, Result, SpendCommand


StoreCommand = RequestsCommand | SpendCommand | CommitCommand


def answer(command: StoreCommand, context: Context) -> Result:
    if isinstance(command, RequestsCommand):
        return requests_of(command, context)
    if isinstance(command, SpendCommand):
        return spend_of(command, context)
    return commit_of(command, context)


def requests_of(command: RequestsCommand, context: Context) -> Result:
    """The 20 newest requests, or one with its audit trail."""
    store = context.store
    if command.request_id is None:
        return tuple(store.list(limit=20))
    record = store.get(command.request_id)
    if record is None:
        raise ParseError(f"no request {command.request_id}", example="requests")
    return RequestDetail(record, tuple(store.audit_trail(record.id)))


def commit_of(command: CommitCommand, context: Context) -> CommitmentAdvice:
    """Commitments from the launches of the last `months` whole months, priced from the catalog's terms."""
    now = context.now()
    since = month_start(now)
    for _ in range(command.months):
        since = month_start(since - dt.timedelta(days=1))
    return plan_commitments(context.store.spend_rows(since), context.catalog.offers_of_type, now,
                            currency=context.policy.currency, months=command.months)


def spend_of(command: SpendCommand, context: Context) -> SpendReport:
    """The spend report a command asks for: the store's launches priced over the period, with this month's
    budgets and, for source=aws, Cost Explorer's actual cost by gpu-assist's request tag."""
    now, policy = context.now(), context.policy
    period = command.period.at(now)
    records = context.store.spend_rows(min(period.start, month_start(now)))
    budgets = tuple(standing(policy.budgets, records, now, default_project=policy.default_project)) \
        if policy.budgets else ()
    actual: Any = None
    if command.source == "aws":
        actual = actual_cost(context.aws_client("ce", "us-east-1"), period)
    return spend_report(records, period, now, currency=policy.currency, default_project=policy.default_project,
                        budgets=budgets, actual=actual, by=command.by)
