"""The Slack face's click inbox in the store: a click is recorded (its `clicks` row and its audit row, "received",
in one transaction) before Slack is acknowledged, owned by one process with a lease, and run from here
(`slackbot/inbox.py` says why). The table is declared with the others (`gpu_assist.store.tables`), since the
migrations make every table; this is its repository, over the store's engine."""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable

from sqlalchemy import and_, insert, select, update
from sqlalchemy.exc import IntegrityError

from gpu_assist.store import Store
from gpu_assist.store.engine import utc
from gpu_assist.store.tables import clicks_table, requests_table

Rows = list[dict[str, Any]]


class Clicks:
    """The click inbox over a store's engine."""

    def __init__(self, store: Store):
        self.store, self.engine = store, store.engine

    def receive(self, key: str, listener: str, payload: dict[str, Any], *, owner: str, until: dt.datetime,
                      now: dt.datetime, actor: str, request_id: str | None, detail: str) -> bool:
        """Record a click, owned by `owner` until `until`, with its audit row ("received"), in one transaction;
        False when a click with `key` is recorded already (Slack's retry of it)."""
        try:
            with self.engine.begin() as connection:
                connection.execute(insert(clicks_table).values(key=key, listener=listener, payload=payload,
                                                               received_at=now, owner=owner, owned_until=until))
                state = connection.execute(select(requests_table.c.state).where(requests_table.c.id == request_id)
                                           ).scalar() if request_id else None
                self.store.audit_row(connection, request_id, actor, "click", "received", state, state, detail, now)
            return True
        except IntegrityError:
            return False

    def left(self, now: dt.datetime, gone: Callable[[str], bool]) -> Rows:
        """Clicks recorded but not run whose owner's lease is over at `now`, or whose owner is `gone(owner)`."""
        c = clicks_table.c
        with self.engine.connect() as connection:
            rows = connection.execute(select(clicks_table).where(c.done_at.is_(None)).order_by(c.received_at)
                                      ).mappings().all()
        return [dict(row) for row in rows if utc(row["owned_until"]) <= now or gone(row["owner"])]

    def take(self, click: dict[str, Any], *, owner: str, until: dt.datetime, now: dt.datetime) -> bool:
        """`owner` runs a click another owner left (`clicks_left`): one conditional UPDATE on the owner it had;
        audited."""
        c = clicks_table.c
        with self.engine.begin() as connection:
            taken = connection.execute(update(clicks_table).where(and_(
                c.key == click["key"], c.owner == click["owner"], c.done_at.is_(None))).values(
                owner=owner, owned_until=until)).rowcount == 1
            if taken:
                self.store.audit_row(connection, None, "system", "click", "taken over", None, None,
                            f"{click['listener']} click received {utc(click['received_at']):%H:%M:%S} by "
                            f"{click['owner']}, now run by {owner}", now)
        return taken

    def done(self, key: str, now: dt.datetime) -> None:
        with self.engine.begin() as connection:
            connection.execute(update(clicks_table).where(clicks_table.c.key == key).values(done_at=now))

    def forget(self, before: dt.datetime) -> int:
        """Delete the clicks run before `before` (no retry of them can arrive any more); how many."""
        with self.engine.begin() as connection:
            return connection.execute(clicks_table.delete().where(clicks_table.c.done_at < before)).rowcount
