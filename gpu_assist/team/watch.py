"""What the periodic jobs tell the team about money: idle alerts, budget crossings and the daily digest.

The builders here are pure (records, a fleet report and `now` in, messages' content out); `watch_round` is the
edge that reads the store and fleet and asks a `poster` to post. Each message has a notice key that the store
hands to exactly one caller (`Store.post_once`), so a replica, a retry or the next round never posts it twice:
an idle alert per instance per idle period (the key is forgotten when the instance is busy again, and a snooze
lets it come back after 4 h), a budget crossing per budget, month and threshold, a digest per day.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from ..lifecycle.records import RequestRecord
from ..pricing.query import format_duration
from .budgets import BudgetStatus
from .periods import AskedPeriod, PeriodKind
from .sharing import SharingAdvice
from .spending import bought, cost_between, spend_report

SNOOZE = dt.timedelta(hours=4)  # what an idle alert's Keep 4 h button gives
EXTENSION_S = 24 * 3600  # what its Extend TTL button asks for; `/gpu extend r-… 48h` asks for any other


@dataclass(frozen=True)
class IdleAlert:
    key: str
    request_id: str
    requester: str
    instance_id: str
    instance_type: str
    utilization_pct: float | None
    window: str
    cost_so_far: Decimal
    hourly: Decimal
    currency: str
    ends_at: dt.datetime
    sharing: SharingAdvice | None = None  # what would pack its work instead, when its use was measured


class MeasuredInstance(Protocol):
    """What an idle alert reads of one instance's measured use (`fleet.InstanceUsage`)."""

    @property
    def request_id(self) -> str | None: ...
    @property
    def instance_id(self) -> str: ...
    @property
    def instance_type(self) -> str: ...
    @property
    def idle(self) -> bool: ...
    @property
    def gpu_utilization_avg_pct(self) -> float | None: ...
    @property
    def sharing(self) -> SharingAdvice | None: ...


class UsageReport(Protocol):
    """What the idle alerts read of a fleet's measured use (`fleet.FleetReport`, which the adapter builds)."""

    @property
    def window_s(self) -> int: ...
    @property
    def instances(self) -> Sequence[MeasuredInstance]: ...


def idle_key(instance_id: str) -> str:
    return f"idle:{instance_id}"


def idle_alerts(report: UsageReport, records: list[RequestRecord],
                now: dt.datetime) -> tuple[list[IdleAlert], list[str]]:
    """(alerts for idle instances gpu-assist launched, keys of its instances that are busy again)."""
    by_id = {r.id: r for r in records if r.state == "running"}
    alerts: list[IdleAlert] = []
    busy: list[str] = []
    for usage in report.instances:
        record = by_id.get(usage.request_id or "")
        if record is None or usage.instance_id not in record.instance_ids:
            continue  # not launched by gpu-assist, or no longer running by its records
        if not usage.idle:
            if usage.gpu_utilization_avg_pct is not None:
                busy.append(idle_key(usage.instance_id))
            continue
        alerts.append(IdleAlert(
            key=idle_key(usage.instance_id), request_id=record.id, requester=record.requester,
            instance_id=usage.instance_id, instance_type=usage.instance_type,
            utilization_pct=usage.gpu_utilization_avg_pct, window=format_duration(report.window_s),
            cost_so_far=cost_between(record, record.launched_at or now, now, now),
            hourly=record.hourly_price or Decimal(0), currency=record.currency, ends_at=record.ends_at or now,
            sharing=usage.sharing))
    return alerts, busy


@dataclass(frozen=True)
class DigestRow:
    request_id: str
    requester: str
    instance_type: str
    hourly: Decimal
    ends_at: dt.datetime


@dataclass(frozen=True)
class Digest:
    day: dt.date
    currency: str
    yesterday: Decimal
    month_to_date: Decimal
    budgets: tuple[BudgetStatus, ...]
    running: tuple[DigestRow, ...]
    idle: frozenset[str]         # request ids with an idle instance
    ending: tuple[str, ...]      # request ids whose TTL ends in the next 24 h
    waiting: tuple[str, ...]     # pending requests, one line each


def build_digest(records: list[RequestRecord], pending: list[RequestRecord], now: dt.datetime, *, currency: str,
                 budgets: tuple[BudgetStatus, ...], idle_requests: set[str],
                 describe: Callable[[RequestRecord], str]) -> Digest:
    """The day's digest from the launches that ran this month or yesterday, and the pending requests."""
    yesterday = spend_report(records, AskedPeriod(PeriodKind.YESTERDAY).at(now), now, currency=currency).total
    month = spend_report(records, AskedPeriod().at(now), now, currency=currency).total
    running = sorted((r for r in records if r.state == "running"), key=lambda r: r.ends_at or now)
    return Digest(
        day=now.date(), currency=currency, yesterday=yesterday, month_to_date=month, budgets=tuple(budgets),
        running=tuple(DigestRow(r.id, r.requester, bought(r)[0], r.hourly_price or
                                Decimal(0), r.ends_at or now) for r in running),
        idle=frozenset(idle_requests),
        ending=tuple(f"{r.id} at {r.ends_at:%H:%M} UTC" for r in running
                     if r.ends_at and r.ends_at <= now + dt.timedelta(hours=24)),
        waiting=tuple(describe(r) for r in pending))


def digest_due(hour: int | None, now: dt.datetime) -> str | None:
    """The notice key of today's digest once its hour has come; None before it or with no digest set."""
    if hour is None or now.hour < hour:
        return None
    return f"digest:{now:%Y-%m-%d}"
