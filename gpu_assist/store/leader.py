"""The leader lock of a periodic job: which process among the replicas runs it."""

from __future__ import annotations

import contextlib
import uuid
from typing import Iterator

from sqlalchemy import text
from sqlalchemy.engine import Engine


class LeaderLock:
    """Job locks over `engine` (its dialect decides how)."""

    engine: Engine
    dialect: str

    @contextlib.contextmanager
    def job_lock(self, name: str) -> Iterator[bool]:
        """True while this process alone runs job `name`: a PostgreSQL advisory lock; always True on SQLite."""
        if self.dialect != "postgresql":
            yield True
            return
        key = int(uuid.uuid5(uuid.NAMESPACE_URL, f"gpu-assist:{name}").int % (2**63))
        with self.engine.connect() as connection:
            held = connection.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar()
            try:
                yield bool(held)
            finally:
                if held:
                    connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                connection.commit()
