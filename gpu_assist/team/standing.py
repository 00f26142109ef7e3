"""Where the team stands right now: what runs, what it costs by the hour, this month's spend and what the running
launches are committed to until their TTLs, each budget, pending requests and idle instances.

One pure function of the store's records and `now`, so the Prometheus exposition (`gpu_assist.metrics`) and the
approval card (which shows the team's month beside every decision, budgets or not) say the same figures.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass
from decimal import Decimal

from ..lifecycle.records import RequestRecord
from ..lifecycle.specs import LaunchSpec
from .budgets import Budgets, BudgetStatus, standing
from .periods import Period, month_start
from .spending import spend_report


@dataclass(frozen=True)
class RunningLaunch:
    request_id: str
    project: str
    region: str
    instance_type: str
    pricing_model: str
    instances: int
    hourly: Decimal  # all its instances, in the standing's currency


@dataclass(frozen=True)
class TeamStanding:
    currency: str
    running: tuple[RunningLaunch, ...]
    month_to_date: dict[str, Decimal]  # project → spend since the 1st (UTC)
    committed: dict[str, Decimal]      # project → what running launches will still cost until their TTLs
    budgets: tuple[BudgetStatus, ...]  # empty without budgets in the policy
    pending: dict[str, int]            # request kind → requests waiting for a decision
    idle_instances: int                # gpu-assist's running instances with an idle alert standing
    left_out: int                      # launches recorded without a price, or in another currency

    @property
    def hourly(self) -> Decimal:
        return sum((launch.hourly for launch in self.running), Decimal(0))

    @property
    def total_month_to_date(self) -> Decimal:
        return sum(self.month_to_date.values(), Decimal(0))

    @property
    def total_committed(self) -> Decimal:
        return sum(self.committed.values(), Decimal(0))


def team_standing(records: list[RequestRecord], pending: list[RequestRecord], now: dt.datetime, *, currency: str,
                  default_project: str = "", budgets: Budgets | None = None,
                  idle_instances: int = 0) -> TeamStanding:
    """`records`: launches that ran this month (`Store.spend_rows(month_start(now))`); `pending`: requests waiting."""
    month = Period(month_start(now), now, f"{now:%Y-%m} to date")
    report = spend_report(records, month, now, currency=currency, default_project=default_project)
    by_id = {record.id: record for record in records}
    running: list[RunningLaunch] = []
    spent: dict[str, Decimal] = defaultdict(Decimal)
    committed: dict[str, Decimal] = defaultdict(Decimal)
    for launch in report.launches:
        spent[launch.project] += launch.cost
        committed[launch.project] += launch.committed
        spec = by_id[launch.request_id].spec
        if launch.state in ("running", "admitted") and isinstance(spec, LaunchSpec):
            running.append(RunningLaunch(
                request_id=launch.request_id, project=launch.project, region=spec.launched_region or spec.region,
                instance_type=spec.instance_type, pricing_model=spec.pricing_model, instances=spec.instances,
                hourly=launch.hourly))
    return TeamStanding(
        currency=currency, running=tuple(running), month_to_date=dict(spent), committed=dict(committed),
        budgets=tuple(standing(budgets, records, now, default_project=default_project)) if budgets else (),
        pending=dict(Counter(record.kind for record in pending)), idle_instances=idle_instances,
        left_out=len(report.notes))
