"""Spend and alerts: each launch records its approved hourly price (all instances together) and when it
started and stopped running, so spend is a sum over rows, not a replay of the audit log; `notices` holds what
was posted once (a budget crossing, an idle alert for one idle period, a day's digest) so no replica posts it
twice. Rows made before this revision are filled in from their spec and their audit trail.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03
"""

import json
from decimal import Decimal

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("hourly_price", sa.Numeric(18, 6)))
        batch.add_column(sa.Column("launched_at", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("stopped_at", sa.DateTime(timezone=True)))
    op.create_table(
        "notices",
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("request_id", sa.String(32)),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True)),
        sa.Column("detail", sa.Text, nullable=False),
    )
    _backfill(op.get_bind())


def _backfill(connection) -> None:
    """Launches from before this revision: price from their spec, start and stop from their audit trail."""
    launches = connection.execute(sa.text("SELECT id, spec FROM requests WHERE kind = 'launch'")).fetchall()
    for request_id, spec in launches:
        spec = spec if isinstance(spec, dict) else json.loads(spec)
        hourly = Decimal(str(spec.get("hourly", "0"))) * int(spec.get("instances", 1))
        started = connection.execute(sa.text(
            "SELECT min(at) FROM audit_events WHERE request_id = :id AND to_state = 'running' "
            "AND from_state != 'running'"), {"id": request_id}).scalar()
        stopped = connection.execute(sa.text(
            "SELECT min(at) FROM audit_events WHERE request_id = :id AND to_state = 'stopped' "
            "AND from_state != 'stopped'"), {"id": request_id}).scalar()
        connection.execute(sa.text("UPDATE requests SET hourly_price = :hourly, launched_at = :started, "
                                   "stopped_at = :stopped WHERE id = :id").bindparams(
                                       sa.bindparam("hourly", type_=sa.Numeric(18, 6))),
                           {"hourly": hourly, "started": started, "stopped": stopped, "id": request_id})


def downgrade() -> None:
    op.drop_table("notices")
    with op.batch_alter_table("requests") as batch:
        batch.drop_column("stopped_at")
        batch.drop_column("launched_at")
        batch.drop_column("hourly_price")
