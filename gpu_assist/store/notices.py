"""The notices: what was posted, or is being posted, handed to exactly one caller per key (a replica, a retry or
the next round finds it taken): alerts, digests, announcements, a Slack delivery's claim. A claim may be a lease
(`until`), made final by `keep` once what it guards was posted."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import and_, exists, insert, literal, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from ..lifecycle.records import RequestRecord
from .engine import aware
from .requests import record_of
from .tables import notices_table, requests_table


class NoticeRepository:
    """The `notices` table over `engine`."""

    engine: Engine

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

    def keep(self, key: str) -> None:
        """Make a leased claim (`post_once(until=…)`) final: what it guarded was posted."""
        with self.engine.begin() as connection:
            connection.execute(update(notices_table).where(notices_table.c.key == key).values(until=None))

    def unannounced(self, kind: str, outcomes: dict[str, tuple[str, ...]], now: dt.datetime) -> list[RequestRecord]:
        """Requests with a Slack card whose state is an outcome of their kind (`outcomes`: kind → states) and whose
        notice `<kind>:<id>` is not taken (none, or a lease over at `now`): what nobody has announced yet."""
        c, n = requests_table.c, notices_table.c
        taken = select(n.key).where(and_(n.key == literal(f"{kind}:") + c.id, or_(n.until.is_(None), n.until > now)))
        query = select(requests_table).where(and_(
            c.card_ts.is_not(None), or_(*[and_(c.kind == k, c.state.in_(states)) for k, states in outcomes.items()]),
            ~exists(taken))).order_by(c.created_at)
        with self.engine.connect() as connection:
            return [record_of(row) for row in connection.execute(query).mappings()]

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
        return {**row, "at": aware(row["at"]), "until": aware(row["until"])} if row else None
