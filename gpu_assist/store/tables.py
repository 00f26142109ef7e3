"""The code's model of the request store's schema: the tables as SQLAlchemy Core declares them, for the queries of
the repositories. The schema itself is made by the Alembic migrations in `gpu_assist/migrations/` (`store.schema`),
and a test holds the two to each other, so every table is declared here, the Slack face's click inbox included
(`slackbot/click_store.py` is its repository)."""

from __future__ import annotations

import dataclasses

from sqlalchemy import JSON, BigInteger, CheckConstraint, Column, DateTime, Index, Integer, MetaData, Numeric, String, \
    Table, Text

from ..lifecycle.records import AuditEvent
from ..lifecycle.states import KINDS, STATES

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
EVENT_COLUMNS = [audit_table.c[f.name] for f in dataclasses.fields(AuditEvent)]  # what a reader of the log sees

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
