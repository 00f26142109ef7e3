"""Admitted launches: a launch asked through SkyPilot's gate is approved, then admitted (`admitted`), and SkyPilot
launches it, not gpu-assist; the request state check learns the new state. The lists below are this revision's,
written out: a migration never reads the code's current model.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

STATES_0007 = ("pending", "approved", "rejected", "expired", "launching", "running", "stopping", "stopped", "failed",
               "extending", "extended")
STATES = (*STATES_0007, "admitted")


def _state_check(batch, states: tuple[str, ...]) -> None:
    batch.drop_constraint("request_state_known", type_="check")
    batch.create_check_constraint("request_state_known", "state IN (" + ", ".join(f"'{s}'" for s in states) + ")")


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        _state_check(batch, STATES)


def downgrade() -> None:
    admitted = op.get_bind().execute(sa.text("SELECT count(*) FROM requests WHERE state = 'admitted'")).scalar()
    if admitted:  # 0007 cannot hold them, and requests are never deleted
        raise RuntimeError(f"{admitted} admitted request(s) exist: the schema cannot go below 0008")
    with op.batch_alter_table("requests") as batch:
        _state_check(batch, STATES_0007)
