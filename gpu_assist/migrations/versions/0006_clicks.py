"""Clicks: a button's click is recorded here before Slack is acknowledged, with its owner (the process running it)
and a lease, and marked done once its handler ran; a replica that dies after the ack leaves its clicks here, and
the jobs leader runs them (`slackbot/inbox.py`), so no acknowledged click is lost.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "clicks",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("listener", sa.String(32), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("owner", sa.String(160), nullable=False),
        sa.Column("owned_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("done_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_clicks_done_at", "clicks", ["done_at"])


def downgrade() -> None:
    op.drop_index("ix_clicks_done_at", "clicks")
    op.drop_table("clicks")
