"""The jobs leader's refreshes of the sources the team's `[catalog]` table names (`sources.freshness` has the
schedule and the bookkeeping): each due source refreshed into the shared catalog directory, its outcome recorded."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Callable, Mapping

from ..catalog.regions import default_region
from .aws_public import AwsPublicPriceSource
from .freshness import CatalogSchedule, SourceRefresh, read_ledger, write_ledger
from .offer_row import read_rows
from .public import AzureRetailSource
from .refresh import PriceSource, refresh


def _azure(directory: Path, today: dt.date) -> PriceSource:
    return AzureRetailSource(directory, today)


def _aws_public(directory: Path, today: dt.date) -> PriceSource:
    return AwsPublicPriceSource(directory, [default_region()])


# Each refresher a leader may run (`freshness.REFRESHER_NAMES`): name → the source over the catalog directory.
REFRESHERS: dict[str, Callable[[Path, dt.date], PriceSource]] = {"azure": _azure, "aws-public": _aws_public}


def refresh_due(schedule: CatalogSchedule, directory: Path, now: dt.datetime,
                refreshers: Mapping[str, Callable[[Path, dt.date], PriceSource]] = REFRESHERS) -> list[SourceRefresh]:
    """The leader's part of a round: each scheduled source whose last attempt is `every` ago or more is refreshed
    into `directory`; a failure (its source away, rows that do not validate) keeps the last good file and date and
    records the failure. The sources attempted, as they now stand."""
    ledger, attempted = read_ledger(directory), []
    for name in schedule.sources:
        last = ledger.get(name) or SourceRefresh(name)
        if last.attempted_at is not None and (now - last.attempted_at).total_seconds() < schedule.every_s:
            continue
        try:
            report = refresh(refreshers[name](Path(directory), now.date()), Path(directory))
            dates = [row.as_of for row in read_rows(report.path) if row.as_of]
            state = SourceRefresh(name, max(dates, default=now.date()), now, now)
        except Exception as error:  # noqa: BLE001 - any failure leaves the file; the next round tries again
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            state = replace(last, attempted_at=now, error=reason)
        ledger[name] = state
        write_ledger(Path(directory), ledger)
        attempted.append(state)
    return attempted
