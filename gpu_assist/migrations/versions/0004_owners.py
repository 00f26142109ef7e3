"""Owners: a request being carried out (`approved`, `launching`, `stopping`, `extending`) names who carries it out
(`owner`: host, process id and start, and which carrying-out in that process) and until when that claim holds
unless renewed (`owned_until`). The reconciler takes over only a request whose owner's lease is over or whose
process is known gone, so it never launches what a live process is still launching. Rows made before this
revision have no owner: a request left in a carrying-out state by an earlier gpu-assist is free to take over.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("owner", sa.String(160)))
        batch.add_column(sa.Column("owned_until", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.drop_column("owned_until")
        batch.drop_column("owner")
