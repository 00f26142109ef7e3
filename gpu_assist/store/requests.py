"""The requests and their audit trail: every state change one conditional UPDATE built from a declared
`states.Transition`, and its audit row in the same transaction; a row naming a delivery that has its row already is
rolled back whole (`DeliveryRecorded`). See `gpu_assist.store` for the rules."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from decimal import Decimal
from typing import Any, Iterator

from sqlalchemy import and_, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine, RowMapping
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from ..lifecycle.records import AuditEvent, RequestRecord
from ..lifecycle.specs import ExtendSpec, LaunchSpec, spec_from_json, to_json
from ..lifecycle.states import SUBMIT, UNFINISHED, Transition
from .engine import aware, utc
from .tables import EVENT_COLUMNS, audit_table, requests_table

Records = list[RequestRecord]  # (a method here is named `list`, which hides the builtin in the class body)
Events = list[AuditEvent]
Ids = list[str]


class DeliveryRecorded(Exception):
    """A write whose audit row names a delivery that has its row already: nothing of it was written. `event` is the
    row recorded first (what that delivery decided)."""

    def __init__(self, event: AuditEvent):
        super().__init__(f"{event.action} {event.outcome} is recorded for this delivery already")
        self.event = event


class RequestRepository:
    """The `requests` and `audit_events` tables over `engine`."""

    engine: Engine

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
            self.audit_row(connection, record.id, actor, SUBMIT.action, "ok", None, SUBMIT.target, detail,
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
                self.audit_row(connection, request_id, actor, action or step.action, "ok", current, step.target, detail,
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
                self.audit_row(connection, record.id, actor, "take over", "ok", record.state, record.state,
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
            self.audit_row(connection, request_id, actor, action, outcome, state, state, detail, now, delivery=delivery)

    def caused_by(self, delivery: str) -> AuditEvent | None:
        """The audit row `delivery` caused, if it has one."""
        with self.engine.connect() as connection:
            row = connection.execute(select(*EVENT_COLUMNS).where(audit_table.c.delivery == delivery)
                                     ).mappings().first()
        return AuditEvent(**{**row, "at": utc(row["at"])}) if row else None

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
    def audit_row(connection: Connection, request_id: str | None, actor: str, action: str, outcome: str,
               from_state: str | None, to_state: str | None, detail: str, now: dt.datetime, *,
               delivery: str | None = None) -> None:
        connection.execute(insert(audit_table).values(
            at=now, request_id=request_id, actor=actor, action=action, outcome=outcome, from_state=from_state,
            to_state=to_state, detail=detail, delivery=delivery))

    def get(self, request_id: str) -> RequestRecord | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(requests_table).where(requests_table.c.id == request_id)).mappings().first()
        return record_of(row) if row else None

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
            return [record_of(row) for row in connection.execute(query).mappings()]

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
            return [record_of(row) for row in connection.execute(query).mappings()]

    def audit_trail(self, request_id: str | None = None) -> Events:
        query = select(*EVENT_COLUMNS).order_by(audit_table.c.id)
        if request_id:
            query = query.where(audit_table.c.request_id == request_id)
        with self.engine.connect() as connection:
            return [AuditEvent(**{**row, "at": utc(row["at"])}) for row in connection.execute(query).mappings()]

    def spend_rows(self, since: dt.datetime) -> Records:
        """Launches that ran at some time after `since` (still running, or stopped after it)."""
        query = select(requests_table).where(and_(
            requests_table.c.kind == "launch", requests_table.c.launched_at.is_not(None),
            (requests_table.c.stopped_at.is_(None)) | (requests_table.c.stopped_at >= since)))
        with self.engine.connect() as connection:
            return [record_of(row) for row in connection.execute(query).mappings()]


def record_of(row: RowMapping) -> RequestRecord:
    spec = row["spec"] if isinstance(row["spec"], dict) else json.loads(row["spec"])
    return RequestRecord(
        id=row["id"], kind=row["kind"], requester=row["requester"], spec=spec_from_json(row["kind"], spec),
        estimated_cost=Decimal(str(row["estimated_cost"])) if row["estimated_cost"] is not None else None,
        currency=row["currency"], state=row["state"], created_at=utc(row["created_at"]),
        expires_at=utc(row["expires_at"]), approver=row["approver"], decided_at=aware(row["decided_at"]),
        instance_ids=tuple(row["instance_ids"] or ()), ends_at=aware(row["ends_at"]), error=row["error"],
        version=row["version"],
        hourly_price=Decimal(str(row["hourly_price"])) if row["hourly_price"] is not None else None,
        launched_at=aware(row["launched_at"]), stopped_at=aware(row["stopped_at"]),
        card_channel=row["card_channel"], card_ts=row["card_ts"], owner=row["owner"],
        owned_until=aware(row["owned_until"]),
    )
