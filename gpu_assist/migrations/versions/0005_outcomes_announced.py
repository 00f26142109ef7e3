"""Outcomes announced: from this revision on, a request's outcome is announced on its Slack card once, by whoever
finished it, through a `notices` row `outcome:<request id>`; the jobs leader announces every finished request with a
card that has none. The requests finished before this revision were announced by their decider already: each gets
its row now, so the first round after the upgrade does not announce them again. No schema change.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

OUTCOMES = {"launch": ("running", "failed", "rejected", "stopped", "expired"),
            "stop": ("stopped", "failed", "rejected", "expired"),
            "extend": ("extended", "failed", "rejected", "expired")}


def upgrade() -> None:
    finished = " OR ".join(f"(kind = '{kind}' AND state IN ({', '.join(repr(s) for s in states)}))"
                           for kind, states in OUTCOMES.items())
    op.get_bind().execute(sa.text(
        "INSERT INTO notices (key, kind, request_id, at, detail) "
        "SELECT 'outcome:' || id, 'outcome', id, CURRENT_TIMESTAMP, 'announced before revision 0005' FROM requests "
        f"WHERE card_ts IS NOT NULL AND ({finished}) "
        "AND NOT EXISTS (SELECT 1 FROM notices WHERE notices.key = 'outcome:' || requests.id)"))


def downgrade() -> None:
    op.get_bind().execute(sa.text("DELETE FROM notices WHERE kind = 'outcome'"))
