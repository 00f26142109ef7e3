"""The request store as it first shipped: requests (with its state and kind CHECKs) and the append-only
audit_events (a trigger refuses UPDATE and DELETE, on SQLite and PostgreSQL).

Revision ID: 0001
Revises:
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

STATES = ("pending", "approved", "rejected", "expired", "launching", "running", "stopping", "stopped", "failed")

APPEND_ONLY = {
    "sqlite": [
        "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_events "
        "BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END",
        "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_events "
        "BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END",
    ],
    "postgresql": [
        "CREATE OR REPLACE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'audit_events is append-only'; END $$",
        "CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit_events "
        "FOR EACH ROW EXECUTE FUNCTION audit_append_only()",
    ],
}


def upgrade() -> None:
    op.create_table(
        "requests",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("requester", sa.String(128), nullable=False),
        sa.Column("spec", sa.JSON, nullable=False),
        sa.Column("estimated_cost", sa.Numeric(18, 6)),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("approver", sa.String(128)),
        sa.Column("decided_at", sa.DateTime(timezone=True)),
        sa.Column("instance_ids", sa.JSON, nullable=False),
        sa.Column("ends_at", sa.DateTime(timezone=True)),
        sa.Column("error", sa.Text),
        sa.Column("version", sa.Integer, nullable=False),
        sa.CheckConstraint("state IN (" + ", ".join(f"'{state}'" for state in STATES) + ")",
                           name="request_state_known"),
        sa.CheckConstraint("kind IN ('launch', 'stop')", name="request_kind_known"),
    )
    op.create_index("ix_requests_state", "requests", ["state"])
    op.create_table(
        "audit_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("request_id", sa.String(32)),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("from_state", sa.String(16)),
        sa.Column("to_state", sa.String(16)),
        sa.Column("detail", sa.Text, nullable=False),
    )
    op.create_index("ix_audit_events_request_id", "audit_events", ["request_id"])
    for statement in APPEND_ONLY.get(op.get_bind().dialect.name, []):
        op.execute(statement)


def downgrade() -> None:
    op.drop_table("audit_events")  # its triggers go with it
    op.drop_table("requests")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS audit_append_only()")
