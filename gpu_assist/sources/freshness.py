"""Fresh prices on a team's server: the jobs leader refreshes the price sources the team's config names.

The `[catalog]` table of the team's config file (`GPU_ASSIST_CONFIG`, beside `[policy]`) says which refreshers run
and how often, and how old a source may get before the approval channel hears of it:

    [catalog]
    refresh = ["azure"]   # refreshers the jobs leader runs (REFRESHER_NAMES)
    every = "6h"          # how often each runs
    max_age = "3d"        # a source observed longer ago than this is announced, once

Each refresh writes its provider's file into the deployment's catalog directory (`GPU_ASSIST_CATALOG_DIR`, one
directory every replica, the Jupyter server and the CLI of the deployment share) through `refresh.refresh`: checked
as the loader checks, then one atomic rename, so a refresh that fails leaves the last good file. Its outcome goes
to `refreshes.json` in the same directory, also replaced by a rename: per source, the date its rows were observed,
its last good refresh, its last attempt and that attempt's failure. Only the leader writes; every reader sees a
whole file. Readers notice a new catalog by the directory's change (`Context.catalog`), without a restart.

This module is the schedule and the bookkeeping, light enough for every reader; the refreshing itself (HTTP, the
sources) is `sources.scheduled`, the leader's.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import tomllib

from ..errors import ConfigError, GpuAssistError
from ..lifecycle.policy import CONFIG_VARIABLE
from ..pricing.query_parser import parse_duration

LEDGER = "refreshes.json"
# The refreshers a leader may run without an account's keys (`sources.scheduled.REFRESHERS` builds them).
REFRESHER_NAMES = ("azure", "aws-public")
EXAMPLE = '[catalog]\nrefresh = ["azure"]\nevery = "6h"\nmax_age = "3d"'


@dataclass(frozen=True)
class CatalogSchedule:
    """What the team's `[catalog]` table asks: the sources to refresh, every how many seconds, and the age past
    which a source is announced as stale."""

    sources: tuple[str, ...] = ()
    every_s: int = 86400
    max_age_s: int = 7 * 86400


@dataclass(frozen=True)
class SourceRefresh:
    """One source's bookkeeping: when its rows were observed (the newest `as_of` of its last good refresh), its
    last good refresh, its last attempt, and that attempt's failure ("" when it succeeded)."""

    source: str
    observed: dt.date | None = None
    refreshed_at: dt.datetime | None = None
    attempted_at: dt.datetime | None = None
    error: str = ""

    def age_s(self, now: dt.datetime) -> float | None:
        """Seconds since its rows were observed (from the start of that day, UTC); None when never."""
        if self.observed is None:
            return None
        return (now - dt.datetime.combine(self.observed, dt.time(), dt.timezone.utc)).total_seconds()


def load_schedule(environ: Mapping[str, str] | None = None) -> CatalogSchedule:
    """The `[catalog]` table of the team's config; none (no file, no table) refreshes nothing."""
    environ = os.environ if environ is None else environ
    path = environ.get(CONFIG_VARIABLE)
    if not path:
        return CatalogSchedule()
    try:
        table = tomllib.loads(Path(path).read_text(encoding="utf-8")).get("catalog", {})
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"cannot read the config file {path} ({CONFIG_VARIABLE}): {error}") from None
    sources = table.get("refresh", [])
    if isinstance(sources, str) or not all(isinstance(s, str) for s in sources):
        raise ConfigError("[catalog] refresh takes a list of refreshers", example=EXAMPLE)
    unknown = [s for s in sources if s not in REFRESHER_NAMES]
    if unknown:
        raise ConfigError(f"[catalog] refresh: no refresher '{unknown[0]}'",
                          hint=f"refreshers a leader runs: {', '.join(REFRESHER_NAMES)}", example=EXAMPLE)
    defaults = CatalogSchedule()
    return CatalogSchedule(tuple(sources), _seconds(table, "every", defaults.every_s),
                           _seconds(table, "max_age", defaults.max_age_s))


def _seconds(table: Mapping[str, Any], key: str, default: int) -> int:
    if table.get(key) in (None, ""):
        return default
    try:
        return parse_duration(str(table[key]), example=f'{key} = "6h"')
    except GpuAssistError as error:
        raise ConfigError(f"[catalog] {key}: {error.message}", hint=error.hint, example=EXAMPLE) from None


def read_ledger(directory: Path) -> dict[str, SourceRefresh]:
    """Each source's bookkeeping in `directory` (none before a leader's first refresh)."""
    try:
        entries = json.loads((Path(directory) / LEDGER).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {name: SourceRefresh(
        name, dt.date.fromisoformat(entry["observed"]) if entry.get("observed") else None,
        _instant(entry.get("refreshed_at")), _instant(entry.get("attempted_at")), entry.get("error", ""))
        for name, entry in entries.items()}


def _instant(text: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text) if text else None


def write_ledger(directory: Path, ledger: Mapping[str, SourceRefresh]) -> None:
    entries = {name: {"observed": s.observed.isoformat() if s.observed else None,
                      "refreshed_at": s.refreshed_at.isoformat() if s.refreshed_at else None,
                      "attempted_at": s.attempted_at.isoformat() if s.attempted_at else None, "error": s.error}
               for name, s in sorted(ledger.items())}
    handle, temp = tempfile.mkstemp(dir=directory, prefix=f".{LEDGER}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(entries, out, indent=2)
        os.replace(temp, Path(directory) / LEDGER)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def stale(schedule: CatalogSchedule, ledger: Mapping[str, SourceRefresh], now: dt.datetime) -> list[SourceRefresh]:
    """The scheduled sources observed longer ago than the schedule's `max_age`."""
    return [state for name in schedule.sources if (state := ledger.get(name)) is not None
            and (age := state.age_s(now)) is not None and age > schedule.max_age_s]
