"""The periodic jobs (expire, reap, reconcile, the team's price refreshes) on exactly one process among all
replicas and workers.

Every process runs `run_jobs_forever`, but only the leader does a round. Leadership is a lease the
database (or the file system) gives back by itself when its holder dies, so no heartbeat is needed:

- PostgreSQL: a session advisory lock held on one dedicated connection. A killed process's connection
  closes, the server drops its locks, and a follower takes the lock at its next tick.
- SQLite (one machine): an exclusive `flock` on a file beside the database, released by the kernel when
  the process exits; an in-memory database has a single process by definition.

Rounds are aligned on the wall clock (round k starts at k × interval), so every process agrees what a
round is: the leader does round k, and a follower that takes over after the leader died does round k+1,
never a second round k. Takeover therefore happens within one interval.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
import uuid
from typing import TYPE_CHECKING, Callable, Protocol

from sqlalchemy import text

from gpu_assist.catalog import default_catalog_dir
from gpu_assist.sources.freshness import load_schedule
from gpu_assist.sources.scheduled import refresh_due

from .workers import prune_deliveries

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from gpu_assist.commands import Context
    from gpu_assist.lifecycle.approvals import Approvals
    from gpu_assist.store import Store

log = logging.getLogger("gpu_assist.slack")
JOB_INTERVAL_S = float(os.environ.get("GPU_ASSIST_JOB_INTERVAL_S", "60"))
_LEADER_KEY = int(uuid.uuid5(uuid.NAMESPACE_URL, "gpu-assist:job-leader").int % (2**63))


class PostgresLease:
    """A session advisory lock on a connection of its own, checked alive before each round."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._connection: Connection | None = None

    def held(self) -> bool:
        try:
            if self._connection is not None:
                self._connection.execute(text("SELECT 1")).scalar()  # the lock lives as long as this session
                return True
            connection = self._engine.connect()
            if connection.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": _LEADER_KEY}).scalar():
                connection.commit()
                self._connection = connection
                return True
            connection.rollback()
            connection.close()
            return False
        except Exception:  # noqa: BLE001 - the server went away: the lock went with it
            self.release()
            return False

    def release(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.invalidate()  # close the session itself, not return it to the pool with the lock
            except Exception:  # noqa: BLE001
                pass


class FileLease:
    """An exclusive flock on `path`, kept open while this process leads."""

    def __init__(self, path: str):
        self._path = path
        self._fd: int | None = None

    def held(self) -> bool:
        if self._fd is not None:
            return True
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class AlwaysLease:
    def held(self) -> bool:
        return True

    def release(self) -> None:
        pass


class Lease(Protocol):
    """Leadership of the periodic jobs: `held()` takes it when free, `release()` gives it back."""

    def held(self) -> bool: ...

    def release(self) -> None: ...


def lease_for(store: Store) -> Lease:
    """The lease that fits the store's database."""
    if store.dialect == "postgresql":
        return PostgresLease(store.engine)
    database = store.engine.url.database
    if store.dialect == "sqlite" and database and database != ":memory:":
        return FileLease(database + ".jobs-leader")
    return AlwaysLease()


def run_round(approvals: Approvals, number: int) -> None:
    jobs = approvals.orchestration
    expired, reaped, reconciled = jobs.expire_due(), jobs.reap(), jobs.reconcile()
    pruned = prune_deliveries(approvals.store, approvals.clock())
    log.info("jobs round %d on pid %d: %d expired, %d reaped, %d reconciled, %d delivery claims pruned", number,
             os.getpid(), len(expired), len(reaped), len(reconciled), pruned)
    for source in refresh_due(load_schedule(), default_catalog_dir(), approvals.clock()):
        log.info("jobs round %d: refreshed %s: %s", number, source.source, source.error or "ok")


def run_jobs_forever(context: Context, stop: threading.Event, interval_s: float = JOB_INTERVAL_S,
                     on_round: Callable[[], None] | None = None) -> None:
    """At every tick of the wall clock, the leader runs a round; a failed round is logged, never fatal."""
    lease: Lease | None = None
    last = 0
    try:
        while True:
            tick = max(last + 1, int(time.time() // interval_s) + 1)
            if stop.wait(max(0.0, tick * interval_s - time.time())):
                return
            # The round is the tick it runs in: a timer that wakes early or late repeats none.
            last = max(tick, int(time.time() // interval_s))
            try:
                lease = lease or lease_for(context.approvals.store)
                if lease.held():
                    run_round(context.approvals, last)
                    if on_round is not None:
                        on_round()  # the money side: idle alerts, budget crossings, the digest
            except Exception:  # noqa: BLE001
                log.exception("periodic jobs failed; retrying in %.0f s", interval_s)
    finally:
        if lease is not None:
            lease.release()


def start_jobs(context: Context, interval_s: float = JOB_INTERVAL_S, on_round: Callable[[], None] | None = None) \
        -> threading.Event:
    stop = threading.Event()
    threading.Thread(target=run_jobs_forever, args=(context, stop, interval_s, on_round), name="gpu-assist-jobs",
                     daemon=True).start()
    return stop
