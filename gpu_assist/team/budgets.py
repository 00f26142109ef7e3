"""Monthly budgets per project tag, and where a request leaves one: pure arithmetic over spend records.

`[policy.budgets]` names a monthly amount per project tag value (`"*"` is the whole team), in one currency,
and what happens to a request that would go over: `escalate` (only `over_budget_approvers` may approve it)
or `refuse`. A budget's standing is month-to-date spend + committed spend of running launches to their TTL
+ this request's estimate, against the amount; crossings of 50/80/100 % of month-to-date are posted once.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ..errors import PolicyError
from ..lifecycle.identity import approver_entry
from ..lifecycle.records import RequestRecord
from .periods import month_start, next_month
from .spending import committed, cost_between, project_of

ALL = "*"
PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/+=@-]{0,63}$")  # a project tag value (what AWS tags hold, shorter)
THRESHOLDS = (50, 80, 100)
EXAMPLE = '[policy.budgets]\ncurrency = "USD"\nmonthly = { "*" = 20000, "llm-training" = 8000 }'
ON_OVER = ("escalate", "refuse")


@dataclass(frozen=True)
class Budgets:
    monthly: dict[str, Decimal]            # project tag value (or "*") → amount per calendar month (UTC)
    currency: str
    on_over: str = "escalate"
    over_budget_approvers: frozenset[str] = frozenset()

    def projects(self) -> list[str]:
        """The project tag values with a budget of their own (the team's "*" is not a project)."""
        return sorted(name for name in self.monthly if name != ALL)

    def covering(self, project: str) -> list[str]:
        """The budgets a launch charged to `project` counts against: its own, and the team's."""
        return [name for name in (project, ALL) if name in self.monthly]


@dataclass(frozen=True)
class BudgetStatus:
    name: str
    amount: Decimal
    currency: str
    month_to_date: Decimal
    committed: Decimal
    estimate: Decimal  # the request being decided, 0 outside a decision

    @property
    def remaining(self) -> Decimal:
        return self.amount - self.month_to_date - self.committed - self.estimate

    @property
    def over(self) -> bool:
        return self.remaining < 0

    @property
    def used_fraction(self) -> Decimal:
        return self.month_to_date / self.amount if self.amount else Decimal(0)


def parse_budgets(values: Mapping[str, Any], policy_currency: str, known_currencies: set[str]) -> Budgets | None:
    """The `[policy.budgets]` table; PolicyError naming the bad entry, with an example that works."""
    if not values:
        return None
    currency = str(values.get("currency", policy_currency)).upper()
    if currency not in known_currencies:
        raise PolicyError(f"budget currency '{currency}' is unknown (known: {', '.join(sorted(known_currencies))})",
                          example=EXAMPLE)
    if currency != policy_currency:
        raise PolicyError(f"budget currency {currency} differs from the policy currency {policy_currency}, in which "
                          "spend is recorded", example=EXAMPLE)
    monthly = {}
    for name, amount in dict(values.get("monthly", {})).items():
        try:
            value = Decimal(str(amount))
        except InvalidOperation:
            value = None
        if value is None or not value.is_finite() or value < 0:
            raise PolicyError(f"budget '{name}' must be a number of {currency} that is 0 or more, not '{amount}'",
                              example=EXAMPLE)
        monthly[str(name)] = value
    if not monthly:
        raise PolicyError("[policy.budgets] names no monthly budget", example=EXAMPLE)
    on_over = str(values.get("on_over_budget", "escalate"))
    if on_over not in ON_OVER:
        raise PolicyError(f"on_over_budget must be escalate or refuse, not '{on_over}'", example=EXAMPLE)
    approvers = values.get("over_budget_approvers", ())
    approvers = [a.strip() for a in approvers.split(",")] if isinstance(approvers, str) else list(approvers)
    return Budgets(monthly, currency, on_over, frozenset(approver_entry(a) for a in approvers if a))


def standing(budgets: Budgets, records: list[RequestRecord], now: dt.datetime, *, default_project: str = "",
             request: RequestRecord | None = None) -> list[BudgetStatus]:
    """Every budget (or, with `request`, those it counts against) as it stands this month, `request` included."""
    start, end = month_start(now), next_month(now)
    names = budgets.covering(project_of(request, default_project)) if request else list(budgets.monthly)
    rows = []
    for name in names:
        charged = [r for r in records if r.kind == "launch" and (name == ALL or project_of(r, default_project) == name)
                   and (request is None or r.id != request.id)]
        rows.append(BudgetStatus(
            name=name, amount=budgets.monthly[name], currency=budgets.currency,
            month_to_date=sum((cost_between(r, start, end, now) for r in charged), Decimal(0)),
            committed=sum((committed(r, now) for r in charged), Decimal(0)),
            estimate=(request.estimated_cost or Decimal(0)) if request else Decimal(0)))
    return rows


def crossings(status: BudgetStatus, now: dt.datetime) -> list[tuple[str, int]]:
    """(notice key, threshold) for each of 50/80/100 % that month-to-date spend has reached this month."""
    reached = [t for t in THRESHOLDS if status.amount and status.used_fraction * 100 >= t]
    return [(f"budget:{status.name}:{now:%Y-%m}:{t}", t) for t in reached]


def over_budget_problem(budgets: Budgets | None, rows: list[BudgetStatus], approver: str) -> str | None:
    """Why `approver` may not approve a request that goes over a budget; None when they may."""
    over = [row for row in rows if row.over]
    if budgets is None or not over:
        return None
    what = "; ".join(f"budget {row.name} would be over by {-row.remaining:,.2f} {row.currency}" for row in over)
    if budgets.on_over == "refuse":
        return f"{what}: the policy refuses over-budget requests"
    if approver not in budgets.over_budget_approvers:
        return f"{what}: only an over-budget approver may approve it"
    return None
