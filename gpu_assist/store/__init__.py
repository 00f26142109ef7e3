"""Where requests and their audit trail live: SQLAlchemy 2 over SQLite (one process) or PostgreSQL (replicas).

Every state change is one conditional UPDATE built from a declared `states.Transition` (`… WHERE id = :id AND
state IN (:source) AND kind IN (:kinds)`), so two clicks, a Slack retry or two replicas can never both win a
transition, and no code moves a request along an arrow `lifecycle.states` does not declare. `audit_events` is
append-only: the code only inserts, and a database trigger refuses UPDATE and DELETE. A row may name the delivery
that caused it (an opaque key, a Slack click's), unique among the rows: a write whose row names a delivery already
recorded is rolled back whole, state change included (`DeliveryRecorded`), so one delivery decides once however
often it is run. `tables` is the code's model of the schema; the schema itself is made by the Alembic migrations in
`gpu_assist/migrations/` (`store.schema`).

`Store` is the facade the faces and the core hold: repositories over its one engine, each a module of its own
(`requests`: requests and their audit trail; `notices`: what is posted once; `leader`: the jobs' leader lock); the
Slack face keeps its click inbox's repository itself (`slackbot/click_store.py`).
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from ..errors import GpuAssistError
from . import schema
from .engine import configured, default_url, open_engine
from .leader import LeaderLock
from .notices import NoticeRepository
from .requests import DeliveryRecorded, RequestRepository
from .tables import audit_table, clicks_table, metadata, notices_table, requests_table

__all__ = ["DeliveryRecorded", "Store", "audit_table", "clicks_table", "configured", "default_url", "metadata",
           "notices_table", "requests_table", "schema"]


class Store(RequestRepository, NoticeRepository, LeaderLock):
    """The request table, the audit log, the notices and the job locks, over one engine; safe to share between
    threads (one engine, short transactions)."""

    def __init__(self, url: str | None = None, *, engine: Engine | None = None, upgrade: bool = True):
        """Open the store; with `upgrade` (the default) bring its schema to the newest migration first
        (idempotent, serialised between processes: see `gpu_assist.store.schema`)."""
        self.url = url or default_url()
        self.engine = engine if engine is not None else open_engine(self.url)
        self.dialect = self.engine.dialect.name
        if upgrade:
            self.upgrade()

    @contextlib.contextmanager
    def _reaching(self) -> Iterator[None]:
        """A database that cannot be reached (down, refused, bad file) is one line, with the password hidden."""
        try:
            yield
        except OperationalError as error:
            reason = str(error.orig).strip().splitlines()[0] if error.orig else type(error).__name__
            raise GpuAssistError(f"cannot open the request store {self!r}: {reason}",
                                 hint="check GPU_ASSIST_DB_URL and that the database is up") from None

    def upgrade(self) -> str:
        """Bring the schema to the newest migration (see `gpu_assist.store.schema`); returns the revision."""
        with self._reaching():
            return schema.upgrade(self.engine)

    def revision(self) -> str | None:
        with self._reaching():
            return schema.current(self.engine)

    def __repr__(self) -> str:
        return f"Store({self.engine.url.render_as_string(hide_password=True)})"
