"""Where requests and their audit trail live: SQLAlchemy 2 over SQLite (one process) or PostgreSQL (replicas).

Every state change is one conditional UPDATE built from a declared `states.Transition` (`… WHERE id = :id AND
state IN (:source) AND kind IN (:kinds)`), so two clicks, a Slack retry or two replicas can never both win a
transition, and no code moves a request along an arrow `lifecycle.states` does not declare. `audit_events` is
append-only: the code only inserts, and a database trigger refuses UPDATE and DELETE. A row may name the delivery
that caused it (an opaque key, a Slack click's), unique among the rows: a write whose row names a delivery already
recorded is rolled back whole, state change included (`DeliveryRecorded`), so one delivery decides once however
often it is run. The tables below are the code's model of the schema; the schema itself is made by the Alembic
migrations in `gpu_assist/migrations/` (`store.schema`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterator

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    and_,
    create_engine,
    event,
    exists,
    insert,
    literal,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Engine, RowMapping
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError
from sqlalchemy.sql.elements import ColumnElement

from ..errors import ConfigError, GpuAssistError
from ..lifecycle.records import AuditEvent, RequestRecord
from ..lifecycle.specs import ExtendSpec, LaunchSpec, spec_from_json, to_json
from ..lifecycle.states import KINDS, STATES, SUBMIT, UNFINISHED, Transition
from . import schema

Records = list[RequestRecord]  # (a method of Store is named `list`, which hides the builtin in its body)
Events = list[AuditEvent]
Ids = list[str]
Rows = list[dict[str, Any]]

metadata = MetaData()

requests_table = Table(
    "requests", metadata,
    Column("id", String(32), primary_key=True),
    Column("kind", String(16), nullable=False),  # launch | stop | extend
    Column("requester", String(128), nullable=False),
    Column("spec", JSON, nullable=False),
    Column("estimated_cost", Numeric(18, 6)),
    Column("currency", String(3), nullable=False, default="USD"),
    Column("state", String(16), nullable=False, index=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("approver", String(128)),
    Column("decided_at", DateTime(timezone=True)),
    Column("instance_ids", JSON, nullable=False, default=list),
    Column("ends_at", DateTime(timezone=True)),  # when a running launch's approved duration is over
    Column("error", Text),
    Column("version", Integer, nullable=False, default=0),
    Column("hourly_price", Numeric(18, 6)),  # a launch's approved price per hour, all its instances together
    Column("launched_at", DateTime(timezone=True)),  # when it reached running: its spend starts here
    Column("stopped_at", DateTime(timezone=True)),   # when it reached stopped: its spend ends here
    Column("card_channel", String(64)),  # where its Slack card was posted: alerts and outcomes reply in its thread
    Column("card_ts", String(32)),
    Column("owner", String(160)),  # who carries it out (`gpu_assist.lifecycle.owners`), while approved … extending
    Column("owned_until", DateTime(timezone=True)),  # the owner's lease: renewed while it works
    CheckConstraint("state IN (" + ", ".join(f"'{state}'" for state in STATES) + ")", name="request_state_known"),
    CheckConstraint("kind IN (" + ", ".join(f"'{kind}'" for kind in KINDS) + ")", name="request_kind_known"),
)

audit_table = Table(
    "audit_events", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("request_id", String(32), index=True),
    Column("actor", String(128), nullable=False),
    Column("action", String(32), nullable=False),
    Column("outcome", String(16), nullable=False),  # ok | refused | error
    Column("from_state", String(16)),
    Column("to_state", String(16)),
    Column("detail", Text, nullable=False, default=""),
    Column("delivery", String(128)),  # the delivery that caused it (a Slack click's key), when one did: one row each
    # Unique: rows without a delivery may repeat, as NULLs do in a unique index on both databases. The migration
    # makes it partial (WHERE delivery IS NOT NULL), smaller; the model leaves the dialects' `*_where` out, since
    # naming `postgresql_where` loads the PostgreSQL dialect in every process, a store verb on SQLite included.
    Index("ix_audit_events_delivery", "delivery", unique=True),
)
_EVENT_COLUMNS = [audit_table.c[f.name] for f in dataclasses.fields(AuditEvent)]  # what a reader of the log sees

notices_table = Table(
    "notices", metadata,
    Column("key", String(200), primary_key=True),  # what was posted: budget:…, idle:…, digest:…
    Column("kind", String(32), nullable=False),
    Column("request_id", String(32)),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("until", DateTime(timezone=True)),  # a snoozed idle alert may be posted again after this
    Column("detail", Text, nullable=False, default=""),
)


clicks_table = Table(
    "clicks", metadata,
    Column("key", String(64), primary_key=True),  # a hash of what identifies the click: a retry has the same
    Column("listener", String(32), nullable=False),  # which button's handler runs it
    Column("payload", JSON, nullable=False),  # what the handler reads (Slack's payload, less its token)
    Column("received_at", DateTime(timezone=True), nullable=False),
    Column("owner", String(160), nullable=False),  # the process running it (`lifecycle.owners`), and its lease
    Column("owned_until", DateTime(timezone=True), nullable=False),
    Column("done_at", DateTime(timezone=True), index=True),  # None until its handler has run
)


def _default_path() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "gpu-assist" / "state.db"


def default_url() -> str:
    configured = os.environ.get("GPU_ASSIST_DB_URL")
    if configured:
        return configured
    path = _default_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def configured() -> bool:
    """Whether the team keeps requests here: GPU_ASSIST_DB_URL is set, or the default file has been made."""
    return bool(os.environ.get("GPU_ASSIST_DB_URL")) or _default_path().exists()


def _engine(url: str, connect_args: dict[str, Any]) -> Engine:
    """The engine for `url`; one that is no database URL SQLAlchemy can open (no URL, an unknown dialect, a driver
    not installed) is a ConfigError naming GPU_ASSIST_DB_URL. The URL itself is never echoed: it may hold a
    password."""
    try:
        return create_engine(url, future=True, pool_pre_ping=True, connect_args=connect_args)
    except (ArgumentError, ImportError) as error:
        reason = f"its driver is not installed ({error})" if isinstance(error, ImportError) else \
            str(error).splitlines()[0].removesuffix(" from given URL string")
        raise ConfigError(f"GPU_ASSIST_DB_URL is not a database URL gpu-assist can open: {reason}",
                          hint="it takes an SQLAlchemy URL, sqlite:///PATH or postgresql+psycopg://USER@HOST/DB "
                               "(unset: ~/.local/share/gpu-assist/state.db)",
                          example="GPU_ASSIST_DB_URL=sqlite:////tmp/gpu-assist.db gpu-assist requests") from None


class DeliveryRecorded(Exception):
    """A write whose audit row names a delivery that has its row already: nothing of it was written. `event` is the
    row recorded first (what that delivery decided)."""

    def __init__(self, event: AuditEvent):
        super().__init__(f"{event.action} {event.outcome} is recorded for this delivery already")
        self.event = event


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    """SQLite returns naive datetimes; everything here is UTC."""
    return None if value is None else _utc(value)


def _utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value


class Store:
    """The request table and the audit log; safe to share between threads (one engine, short transactions)."""

    def __init__(self, url: str | None = None, *, engine: Engine | None = None, upgrade: bool = True):
        """Open the store; with `upgrade` (the default) bring its schema to the newest migration first
        (idempotent, serialised between processes: see `gpu_assist.store.schema`)."""
        self.url = url or default_url()
        if engine is None:
            sqlite = self.url.startswith("sqlite")
            connect_args = {"timeout": 30, "check_same_thread": False} if sqlite else {}
            engine = _engine(self.url, connect_args)
            if sqlite:
                event.listen(engine, "connect", _sqlite_pragmas)
        self.engine = engine
        self.dialect = engine.dialect.name
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

    def insert_request(self, record: RequestRecord, *, actor: str, detail: str = "",
                       delivery: str | None = None) -> None:
        """A new request (`states.SUBMIT`), its spec in its JSON column; its audit row names `delivery` when given
        (DeliveryRecorded, and no request, when that delivery has its row already)."""
        if record.kind != record.spec.kind or record.kind not in SUBMIT.kinds or record.state != SUBMIT.target:
            raise ValueError(f"a new request is a pending {', '.join(SUBMIT.kinds)}, not {record.kind} {record.state}")
        values = {column.name: getattr(record, column.name) for column in requests_table.columns}
        values.update(spec=to_json(record.spec), instance_ids=list(record.instance_ids), version=0)
        with self._once(delivery), self.engine.begin() as connection:
            connection.execute(insert(requests_table).values(**values))
            self._audit(connection, record.id, actor, SUBMIT.action, "ok", None, SUBMIT.target, detail,
                        record.created_at, delivery=delivery)

    def transition(self, request_id: str, step: Transition, *, actor: str, now: dt.datetime, detail: str = "",
                   action: str | None = None, condition: ColumnElement[bool] | None = None,
                   delivery: str | None = None, **values: Any) -> bool:
        """`step` as one conditional UPDATE; True when this caller won it (and its audit row, named `action` or
        the step's own, is written, naming `delivery` when given). DeliveryRecorded, and nothing changed, when
        `delivery` has its row already."""
        if step.target == "running" and "running" not in step.source and "launched_at" not in values:
            values["launched_at"] = now  # the spend clock starts once, when it first runs
        if step.target == "stopped" and "stopped_at" not in values:
            values["stopped_at"] = now
        where = and_(requests_table.c.id == request_id, requests_table.c.state.in_(step.source),
                     requests_table.c.kind.in_(step.kinds))
        if condition is not None:
            where = and_(where, condition)
        if "spec" in values:
            values["spec"] = to_json(values["spec"])
        with self._once(delivery), self.engine.begin() as connection:
            current = connection.execute(select(requests_table.c.state).where(requests_table.c.id == request_id)
                                         ).scalar()
            result = connection.execute(update(requests_table).where(where).values(
                state=step.target, version=requests_table.c.version + 1, **values))
            if result.rowcount == 1:
                self._audit(connection, request_id, actor, action or step.action, "ok", current, step.target, detail,
                            now, delivery=delivery)
                return True
        return False

    def take_over(self, record: RequestRecord, *, owner: str, until: dt.datetime, now: dt.datetime, actor: str,
                  why: str, gone: bool = False) -> bool:
        """`owner` carries `record` out from now on, when it is still where it was and free: no owner, an owner whose
        lease is over at `now`, or (`gone`) the owner it had, whose process is known ended. One conditional UPDATE,
        so two reconcilers cannot both take it, and an owner that renewed its lease meanwhile keeps it; audited."""
        c = requests_table.c
        free = or_(c.owner.is_(None), c.owned_until.is_(None), c.owned_until <= now)
        if gone and record.owner is not None:
            free = or_(free, c.owner == record.owner)
        with self.engine.begin() as connection:
            taken = connection.execute(update(requests_table).where(and_(
                c.id == record.id, c.state == record.state, free)).values(owner=owner, owned_until=until)).rowcount
            if taken == 1:
                self._audit(connection, record.id, actor, "take over", "ok", record.state, record.state,
                            f"{why}; now carried out by {owner}", now)
        return taken == 1

    def renew(self, request_id: str, owner: str, until: dt.datetime) -> bool:
        """Extend `owner`'s lease on a request it carries out; False when it is no longer its owner (the reconciler
        took it over, or it is done). Not a state change: nothing to audit."""
        c = requests_table.c
        with self.engine.begin() as connection:
            return connection.execute(update(requests_table).where(and_(
                c.id == request_id, c.owner == owner, c.state.in_(UNFINISHED))).values(owned_until=until)).rowcount == 1

    def set_card(self, request_id: str, channel: str, ts: str) -> None:
        """Where the request's Slack card was posted (not a state change: nothing to audit)."""
        with self.engine.begin() as connection:
            connection.execute(update(requests_table).where(requests_table.c.id == request_id).values(
                card_channel=channel, card_ts=ts))

    def audit(self, request_id: str | None, actor: str, action: str, outcome: str, *, now: dt.datetime,
              detail: str = "", delivery: str | None = None) -> None:
        """An audit row without a state change; naming `delivery` when given (DeliveryRecorded, and no row, when
        that delivery has its row already)."""
        with self._once(delivery), self.engine.begin() as connection:
            state = connection.execute(select(requests_table.c.state).where(requests_table.c.id == request_id)
                                       ).scalar() if request_id else None
            self._audit(connection, request_id, actor, action, outcome, state, state, detail, now, delivery=delivery)

    def caused_by(self, delivery: str) -> AuditEvent | None:
        """The audit row `delivery` caused, if it has one."""
        with self.engine.connect() as connection:
            row = connection.execute(select(*_EVENT_COLUMNS).where(audit_table.c.delivery == delivery)
                                     ).mappings().first()
        return AuditEvent(**{**row, "at": _utc(row["at"])}) if row else None

    @contextlib.contextmanager
    def _once(self, delivery: str | None) -> Iterator[None]:
        """Around a transaction whose audit row names `delivery`: its insert colliding with the row that delivery
        has already (the unique index; the transaction is rolled back by then) is DeliveryRecorded."""
        try:
            yield
        except IntegrityError:
            first = self.caused_by(delivery) if delivery is not None else None
            if first is None:
                raise
            raise DeliveryRecorded(first) from None

    @staticmethod
    def _audit(connection: Connection, request_id: str | None, actor: str, action: str, outcome: str,
               from_state: str | None, to_state: str | None, detail: str, now: dt.datetime, *,
               delivery: str | None = None) -> None:
        connection.execute(insert(audit_table).values(
            at=now, request_id=request_id, actor=actor, action=action, outcome=outcome, from_state=from_state,
            to_state=to_state, detail=detail, delivery=delivery))

    def get(self, request_id: str) -> RequestRecord | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(requests_table).where(requests_table.c.id == request_id)).mappings().first()
        return _record(row) if row else None

    def fetch(self, request_id: str) -> RequestRecord:
        """A request that must exist (requests are never deleted): KeyError otherwise, a bug, not a user's typo."""
        record = self.get(request_id)
        if record is None:
            raise KeyError(request_id)
        return record

    def list(self, *, states: tuple[str, ...] | None = None, limit: int = 50) -> Records:
        query = select(requests_table).order_by(requests_table.c.created_at.desc()).limit(limit)
        if states:
            query = query.where(requests_table.c.state.in_(states))
        with self.engine.connect() as connection:
            return [_record(row) for row in connection.execute(query).mappings()]

    def placement_of(self, instance_id: str) -> tuple[str, str] | None:
        """(cloud, region) where gpu-assist launched an instance, from its own records; None when none has it."""
        return next(((record.spec.provider, record.spec.where)
                     for record in self.list(states=("running", "stopping"), limit=1000)
                     if isinstance(record.spec, LaunchSpec) and instance_id in record.instance_ids), None)

    def extensions_waiting(self, launch_id: str) -> Ids:
        """Extensions of a launch that are asked or approved but not yet carried out."""
        return [r.id for r in self.list(states=("pending", "approved", "extending"), limit=1000)
                if isinstance(r.spec, ExtendSpec) and r.spec.launch_request == launch_id]

    def due(self, state: str, column: Any, now: dt.datetime) -> Records:
        query = select(requests_table).where(and_(requests_table.c.state == state, column <= now))
        with self.engine.connect() as connection:
            return [_record(row) for row in connection.execute(query).mappings()]

    def audit_trail(self, request_id: str | None = None) -> Events:
        query = select(*_EVENT_COLUMNS).order_by(audit_table.c.id)
        if request_id:
            query = query.where(audit_table.c.request_id == request_id)
        with self.engine.connect() as connection:
            return [AuditEvent(**{**row, "at": _utc(row["at"])}) for row in connection.execute(query).mappings()]

    def spend_rows(self, since: dt.datetime) -> Records:
        """Launches that ran at some time after `since` (still running, or stopped after it)."""
        query = select(requests_table).where(and_(
            requests_table.c.kind == "launch", requests_table.c.launched_at.is_not(None),
            (requests_table.c.stopped_at.is_(None)) | (requests_table.c.stopped_at >= since)))
        with self.engine.connect() as connection:
            return [_record(row) for row in connection.execute(query).mappings()]

    def post_once(self, key: str, kind: str, *, now: dt.datetime, request_id: str | None = None,
                  detail: str = "", until: dt.datetime | None = None) -> bool:
        """True for exactly one caller per `key` (a replica or a retry racing finds it taken), or when the key's
        snooze is over (then it is taken again, snooze cleared). `until`: the claim is only a lease, free to take
        again after it unless `keep(key)` makes it final (a post that a crash may interrupt)."""
        with self.engine.begin() as connection:
            renewed = connection.execute(update(notices_table).where(and_(
                notices_table.c.key == key, notices_table.c.until.is_not(None), notices_table.c.until <= now)).values(
                at=now, until=until, detail=detail)).rowcount
            if renewed:
                return True
        try:
            with self.engine.begin() as connection:
                connection.execute(insert(notices_table).values(key=key, kind=kind, request_id=request_id, at=now,
                                                                detail=detail, until=until))
            return True
        except IntegrityError:
            return False

    # ---- the click inbox: a click is recorded before it is acknowledged, and run from here ----------------------
    def receive_click(self, key: str, listener: str, payload: dict[str, Any], *, owner: str, until: dt.datetime,
                      now: dt.datetime, actor: str, request_id: str | None, detail: str) -> bool:
        """Record a click, owned by `owner` until `until`, with its audit row ("received"), in one transaction;
        False when a click with `key` is recorded already (Slack's retry of it)."""
        try:
            with self.engine.begin() as connection:
                connection.execute(insert(clicks_table).values(key=key, listener=listener, payload=payload,
                                                               received_at=now, owner=owner, owned_until=until))
                state = connection.execute(select(requests_table.c.state).where(requests_table.c.id == request_id)
                                           ).scalar() if request_id else None
                self._audit(connection, request_id, actor, "click", "received", state, state, detail, now)
            return True
        except IntegrityError:
            return False

    def clicks_left(self, now: dt.datetime, gone: Callable[[str], bool]) -> Rows:
        """Clicks recorded but not run whose owner's lease is over at `now`, or whose owner is `gone(owner)`."""
        c = clicks_table.c
        with self.engine.connect() as connection:
            rows = connection.execute(select(clicks_table).where(c.done_at.is_(None)).order_by(c.received_at)
                                      ).mappings().all()
        return [dict(row) for row in rows if _utc(row["owned_until"]) <= now or gone(row["owner"])]

    def take_click(self, click: dict[str, Any], *, owner: str, until: dt.datetime, now: dt.datetime) -> bool:
        """`owner` runs a click another owner left (`clicks_left`): one conditional UPDATE on the owner it had;
        audited."""
        c = clicks_table.c
        with self.engine.begin() as connection:
            taken = connection.execute(update(clicks_table).where(and_(
                c.key == click["key"], c.owner == click["owner"], c.done_at.is_(None))).values(
                owner=owner, owned_until=until)).rowcount == 1
            if taken:
                self._audit(connection, None, "system", "click", "taken over", None, None,
                            f"{click['listener']} click received {_utc(click['received_at']):%H:%M:%S} by "
                            f"{click['owner']}, now run by {owner}", now)
        return taken

    def click_done(self, key: str, now: dt.datetime) -> None:
        with self.engine.begin() as connection:
            connection.execute(update(clicks_table).where(clicks_table.c.key == key).values(done_at=now))

    def forget_clicks(self, before: dt.datetime) -> int:
        """Delete the clicks run before `before` (no retry of them can arrive any more); how many."""
        with self.engine.begin() as connection:
            return connection.execute(clicks_table.delete().where(clicks_table.c.done_at < before)).rowcount

    def keep(self, key: str) -> None:
        """Make a leased claim (`post_once(until=…)`) final: what it guarded was posted."""
        with self.engine.begin() as connection:
            connection.execute(update(notices_table).where(notices_table.c.key == key).values(until=None))

    def unannounced(self, kind: str, outcomes: dict[str, tuple[str, ...]], now: dt.datetime) -> Records:
        """Requests with a Slack card whose state is an outcome of their kind (`outcomes`: kind → states) and whose
        notice `<kind>:<id>` is not taken (none, or a lease over at `now`): what nobody has announced yet."""
        c, n = requests_table.c, notices_table.c
        taken = select(n.key).where(and_(n.key == literal(f"{kind}:") + c.id, or_(n.until.is_(None), n.until > now)))
        query = select(requests_table).where(and_(
            c.card_ts.is_not(None), or_(*[and_(c.kind == k, c.state.in_(states)) for k, states in outcomes.items()]),
            ~exists(taken))).order_by(c.created_at)
        with self.engine.connect() as connection:
            return [_record(row) for row in connection.execute(query).mappings()]

    def snooze(self, key: str, until: dt.datetime) -> bool:
        with self.engine.begin() as connection:
            return connection.execute(update(notices_table).where(notices_table.c.key == key).values(
                until=until)).rowcount == 1

    def forget(self, key: str) -> None:
        """The condition a notice was about is over (an idle instance got busy): the next one is new."""
        with self.engine.begin() as connection:
            connection.execute(notices_table.delete().where(and_(notices_table.c.key == key,
                                                                 notices_table.c.until.is_(None))))

    def forget_before(self, kind: str, before: dt.datetime) -> int:
        """Delete the notices of `kind` taken before `before` (ones no longer guarding anything); how many."""
        with self.engine.begin() as connection:
            return connection.execute(notices_table.delete().where(and_(
                notices_table.c.kind == kind, notices_table.c.at < before))).rowcount

    def standing_notices(self, kind: str) -> tuple[str | None, ...]:
        """The request id of each notice of `kind` that stands (an idle alert stands until its instance is busy
        again and `forget` drops it)."""
        with self.engine.connect() as connection:
            return tuple(connection.execute(select(notices_table.c.request_id).where(
                notices_table.c.kind == kind)).scalars())

    def notice(self, key: str) -> dict[str, Any] | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(notices_table).where(notices_table.c.key == key)).mappings().first()
        return {**row, "at": _aware(row["at"]), "until": _aware(row["until"])} if row else None

    @contextlib.contextmanager
    def job_lock(self, name: str) -> Iterator[bool]:
        """True while this process alone runs job `name`: a PostgreSQL advisory lock; always True on SQLite."""
        if self.dialect != "postgresql":
            yield True
            return
        key = int(uuid.uuid5(uuid.NAMESPACE_URL, f"gpu-assist:{name}").int % (2**63))
        with self.engine.connect() as connection:
            held = connection.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar()
            try:
                yield bool(held)
            finally:
                if held:
                    connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                connection.commit()


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _record(row: RowMapping) -> RequestRecord:
    spec = row["spec"] if isinstance(row["spec"], dict) else json.loads(row["spec"])
    return RequestRecord(
        id=row["id"], kind=row["kind"], requester=row["requester"], spec=spec_from_json(row["kind"], spec),
        estimated_cost=Decimal(str(row["estimated_cost"])) if row["estimated_cost"] is not None else None,
        currency=row["currency"], state=row["state"], created_at=_utc(row["created_at"]),
        expires_at=_utc(row["expires_at"]), approver=row["approver"], decided_at=_aware(row["decided_at"]),
        instance_ids=tuple(row["instance_ids"] or ()), ends_at=_aware(row["ends_at"]), error=row["error"],
        version=row["version"],
        hourly_price=Decimal(str(row["hourly_price"])) if row["hourly_price"] is not None else None,
        launched_at=_aware(row["launched_at"]), stopped_at=_aware(row["stopped_at"]),
        card_channel=row["card_channel"], card_ts=row["card_ts"], owner=row["owner"],
        owned_until=_aware(row["owned_until"]),
    )
