"""Decision deliveries: an audit row may name the delivery that caused it (`delivery`: an opaque key, a Slack
click's), and a unique index lets each delivery have one such row. A decision (an approval or a rejection, allowed
or refused) records the key of the click that asked for it, so a click run again after its first run died, past the
decision and before the click was marked done, finds its decision recorded and decides nothing twice.

The column is added in place (`ALTER TABLE … ADD COLUMN` on both dialects, not a batch copy of the table), so the
append-only triggers of revision 0001 stay on `audit_events`; no row is changed. The index is partial (`WHERE
delivery IS NOT NULL`, which SQLite and PostgreSQL both take): the rows no delivery caused are not in it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

NAMED = sa.text("delivery IS NOT NULL")


def upgrade() -> None:
    op.add_column("audit_events", sa.Column("delivery", sa.String(128)))
    op.create_index("ix_audit_events_delivery", "audit_events", ["delivery"], unique=True, sqlite_where=NAMED,
                    postgresql_where=NAMED)


def downgrade() -> None:
    op.drop_index("ix_audit_events_delivery", "audit_events")
    # In place on both dialects (SQLite 3.35 and later drop a column themselves): a batch copy would lose the
    # append-only triggers, and deleting rows through them is refused.
    op.execute("ALTER TABLE audit_events DROP COLUMN delivery")
