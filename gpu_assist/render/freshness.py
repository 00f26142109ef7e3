"""The words of a team's price refreshes (`sources.freshness`): each source's observation date and last refresh,
under `catalog status` and as `/gpu catalog` (registered on `text.render`; the Slack face imports this module), and
the line the approval channel hears once when a source is older than its limit."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from typing import Any

from ..commands.objects import CatalogFreshness
from ..sources.freshness import SourceRefresh
from .tables import text_table
from .text import render


def _days(seconds: float) -> str:
    days = seconds / 86400
    return f"{days:.0f} days" if days >= 2 else f"{seconds / 3600:.0f} hours"


def _instant(value: dt.datetime | None) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC" if value else "never"


@render.register(CatalogFreshness)
def render_freshness(result: CatalogFreshness, **_options: Any) -> str:
    if not result.sources:
        return ("No price source is refreshed on this server: the team's config names none "
                "([catalog] refresh, docs/deploying.md).")
    return refresh_table({s.source: s for s in result.sources}, result.at)


def refresh_table(ledger: Mapping[str, SourceRefresh], now: dt.datetime) -> str:
    """Per source the jobs leader refreshes: when its rows were observed, how long ago, its last good refresh, and
    what its last attempt ran into when that failed (the last good file stays)."""
    rows = [[s.source, s.observed.isoformat() if s.observed else "never",
             _days(age) if (age := s.age_s(now)) is not None else "", _instant(s.refreshed_at),
             f"failed {_instant(s.attempted_at)}: {s.error}" if s.error else "ok"]
            for s in sorted(ledger.values(), key=lambda s: s.source)]
    return "refreshed by the jobs leader:\n" + text_table(
        ["source", "observed", "age", "last refresh", "last attempt"], rows, fold={4}, narrow=[(4, 30)])


def stale_line(state: SourceRefresh, max_age_s: int, now: dt.datetime) -> str:
    """The approval channel's notice that a source is older than the team's limit (posted once per observation)."""
    age = state.age_s(now) or 0.0
    why = f" Its last refresh failed: {state.error}." if state.error else ""
    return (f":warning: {state.source} prices were observed {state.observed} ({_days(age)} ago), older than the "
            f"team's limit of {_days(max_age_s)}; quotes still use them.{why}")
