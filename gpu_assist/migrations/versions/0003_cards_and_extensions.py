"""Cards and extensions: a request remembers where its Slack card was posted (`card_channel`, `card_ts`), so an
idle alert and an extension's outcome reply in the request's own thread; and a third request kind, `extend`,
moves a running launch's time to live through the approval path, with its own carrying-out state (`extending`)
and end state (`extended`). The lists below are this revision's, written out: a migration never reads the
code's current model.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

STATES_0002 = ("pending", "approved", "rejected", "expired", "launching", "running", "stopping", "stopped", "failed")
STATES = (*STATES_0002, "extending", "extended")
KINDS_0002 = ("launch", "stop")
KINDS = (*KINDS_0002, "extend")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN (" + ", ".join(f"'{value}'" for value in values) + ")"


def _checks(batch, states: tuple[str, ...], kinds: tuple[str, ...]) -> None:
    batch.drop_constraint("request_state_known", type_="check")
    batch.drop_constraint("request_kind_known", type_="check")
    batch.create_check_constraint("request_state_known", _in("state", states))
    batch.create_check_constraint("request_kind_known", _in("kind", kinds))


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("card_channel", sa.String(64)))
        batch.add_column(sa.Column("card_ts", sa.String(32)))
        _checks(batch, STATES, KINDS)


def downgrade() -> None:
    extensions = op.get_bind().execute(sa.text("SELECT count(*) FROM requests WHERE kind = 'extend'")).scalar()
    if extensions:  # 0002 cannot hold them, and requests are never deleted
        raise RuntimeError(f"{extensions} extension request(s) exist: the schema cannot go below 0003")
    with op.batch_alter_table("requests") as batch:
        _checks(batch, STATES_0002, KINDS_0002)
        batch.drop_column("card_ts")
        batch.drop_column("card_channel")
