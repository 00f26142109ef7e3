"""What gpu-assist's launches have cost: approved hourly price × hours run, per period and group.

Pure: it takes request records (each launch carries its approved `hourly_price`, `launched_at` and
`stopped_at`) and a `now`, and returns figures; the store, Cost Explorer and the faces are at the edges.
A running launch costs up to `now` so far, and is projected to its time to live (`ends_at`); what it will
still cost from `now` to its TTL is its committed spend, which budgets count as already spoken for.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..lifecycle.records import RequestRecord
from ..lifecycle.specs import ExtendSpec, LaunchSpec
from .periods import Period

GROUPS = ("requester", "project", "instance-type", "pricing")
HOUR = Decimal(3600)


def hours_between(start: dt.datetime, end: dt.datetime) -> Decimal:
    return max(Decimal(0), Decimal(str((end - start).total_seconds())) / HOUR)


# The states of a launch whose machines may be up: `admitted` is a SkyPilot cluster the gate let through (it runs
# once its launch was let through, `launched_at` set, until SkyPilot's autodown at its time to live).
LIVE = ("running", "stopping", "admitted")


def run_end(record: RequestRecord, now: dt.datetime) -> dt.datetime | None:
    """Until when a launch has been running: its stop, else `now` while it runs; None if it never ran."""
    if record.launched_at is None:
        return None
    if record.stopped_at is not None:
        return record.stopped_at
    return now if record.state in LIVE else record.launched_at


def cost_between(record: RequestRecord, start: dt.datetime, end: dt.datetime, now: dt.datetime) -> Decimal:
    """What the launch cost while it ran inside [start, end)."""
    stop, started = run_end(record, now), record.launched_at
    if stop is None or started is None or record.hourly_price is None:
        return Decimal(0)
    return record.hourly_price * hours_between(max(start, started), min(end, stop))


def committed(record: RequestRecord, now: dt.datetime) -> Decimal:
    """What a running launch will still cost from `now` to its time to live."""
    if record.state not in LIVE or record.ends_at is None or record.hourly_price is None:
        return Decimal(0)
    return record.hourly_price * hours_between(now, record.ends_at)


def project_of(record: RequestRecord, default: str = "") -> str:
    """The project a launch (or an extension of one) is charged to: its own, else the policy's cost tag."""
    spec = record.spec
    return (spec.project if isinstance(spec, (LaunchSpec, ExtendSpec)) else None) or default or "(none)"


def bought(record: RequestRecord) -> tuple[str, str]:
    """(instance type, pricing model) of a launch."""
    spec = record.spec
    return (spec.instance_type, spec.pricing_model) if isinstance(spec, LaunchSpec) else ("?", "?")


def _group_key(record: RequestRecord, group: str, default_project: str) -> str:
    instance_type, pricing_model = bought(record)
    return {"requester": record.requester, "project": project_of(record, default_project),
            "instance-type": instance_type, "pricing": pricing_model}[group]


@dataclass(frozen=True)
class LaunchSpend:
    request_id: str
    requester: str
    project: str
    instance_type: str
    pricing_model: str
    state: str
    hourly: Decimal
    hours: Decimal      # inside the period
    cost: Decimal       # inside the period
    projected: Decimal  # for a running launch: its whole cost to its TTL; else its whole cost
    committed: Decimal  # for a running launch: from now to its TTL


@dataclass(frozen=True)
class SpendReport:
    period: Period
    currency: str
    launches: tuple[LaunchSpend, ...]
    groups: dict[str, dict[str, Decimal]]  # group name → key → cost in the period
    daily: tuple[tuple[dt.date, Decimal], ...]
    # `budgets.BudgetStatus` rows when the policy has budgets (budgets.py prices them with this module's
    # functions, so it is named, not imported).
    budgets: tuple[Any, ...] = ()
    actual: dict[str, Any] | None = None    # source=aws: Cost Explorer's cost by cost tag value, and its note
    notes: tuple[str, ...] = field(default=())
    by: str | None = None                   # the one grouping asked for; None: every one

    @property
    def total(self) -> Decimal:
        return sum((launch.cost for launch in self.launches), Decimal(0))

    @property
    def committed(self) -> Decimal:
        return sum((launch.committed for launch in self.launches), Decimal(0))


def spend_report(records: list[RequestRecord], period: Period, now: dt.datetime, *, currency: str,
                 default_project: str = "", budgets: tuple[Any, ...] = (), actual: dict[str, Any] | None = None,
                 by: str | None = None) -> SpendReport:
    """Spend of the launches in `records` inside `period`, grouped every way `GROUPS` names, with daily totals."""
    launches, notes = [], []
    for record in records:
        if record.kind != "launch" or record.launched_at is None:
            continue
        if record.hourly_price is None:
            notes.append(f"{record.id} has no recorded hourly price and is left out")
            continue
        if record.currency != currency:
            notes.append(f"{record.id} is priced in {record.currency}, not {currency}, and is left out")
            continue
        started, stop = record.launched_at, run_end(record, now) or record.launched_at
        if stop <= period.start or started >= period.end:
            continue
        end_of_life = record.ends_at if record.state in LIVE and record.ends_at else stop
        launches.append(LaunchSpend(
            request_id=record.id, requester=record.requester, project=project_of(record, default_project),
            instance_type=bought(record)[0], pricing_model=bought(record)[1], state=record.state,
            hourly=record.hourly_price,
            hours=hours_between(max(period.start, started), min(period.end, stop)),
            cost=cost_between(record, period.start, period.end, now),
            projected=record.hourly_price * hours_between(started, end_of_life),
            committed=committed(record, now)))
    by_id = {r.id: r for r in records}
    groups: dict[str, dict[str, Decimal]] = {}
    for group in GROUPS:
        totals: dict[str, Decimal] = {}
        for launch in launches:
            key = _group_key(by_id[launch.request_id], group, default_project)
            totals[key] = totals.get(key, Decimal(0)) + launch.cost
        groups[group] = dict(sorted(totals.items(), key=lambda item: -item[1]))
    daily = []
    for day in period.days():
        start = dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc)
        day_start, day_end = max(start, period.start), min(start + dt.timedelta(days=1), period.end)
        daily.append((day, sum((cost_between(by_id[launch.request_id], day_start, day_end, now)
                                for launch in launches), Decimal(0))))
    return SpendReport(period=period, currency=currency, launches=tuple(launches), groups=groups, daily=tuple(daily),
                       budgets=tuple(budgets), actual=actual, notes=tuple(notes), by=by)
