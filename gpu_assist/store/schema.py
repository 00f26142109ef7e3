"""The request store's schema: brought to the newest Alembic migration once, before a face serves.

`upgrade(engine)` is idempotent and serialised: on PostgreSQL it runs inside one transaction holding an advisory
lock (two replicas starting on one fresh database take turns; the second finds the schema done), on SQLite under
an exclusive lock on a file beside the database. A database created by an earlier gpu-assist (tables, no
`alembic_version`) is stamped at the first revision, whose schema it has, then upgraded.

Opening a store is on every store verb's path, so a database already at `HEAD_REVISION` is recognised by one
SELECT of `alembic_version`, without loading Alembic (its imports and the reading of the revision scripts cost most
of a second); only a database behind takes the lock and runs the migrations.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine

if TYPE_CHECKING:
    from alembic.config import Config

UPGRADE_LOCK_KEY = 7262021  # pg_advisory_xact_lock key of the schema upgrade
FIRST_REVISION = "0001"
# The newest revision in gpu_assist/migrations/versions, known without reading the scripts; a test holds it to
# Alembic's own head, so a new migration that forgets it fails there.
HEAD_REVISION = "0008"
# Where Alembic finds the revisions: a package path, so it holds wherever the store's modules live; teams' databases
# record the revision ids, not this path, but a deployment's own alembic.ini may name it.
SCRIPT_LOCATION = "gpu_assist:migrations"
_in_process = threading.Lock()


def _revision(revision: str | None) -> str:
    """`revision`, which a packaged migrations directory always has; None means the package lost its migrations."""
    if revision is None:
        raise RuntimeError("gpu_assist/migrations has no revision: the package is incomplete")
    return revision


def _alembic() -> ModuleType:
    """Alembic, with the parts used here loaded, on first use: a store at the newest schema never needs it."""
    for part in ("command", "config", "migration", "script"):
        importlib.import_module(f"alembic.{part}")
    return importlib.import_module("alembic")


def _config(connection: Connection | None) -> Config:
    config: Config = _alembic().config.Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    return config


def head() -> str:
    """The newest revision this gpu-assist knows."""
    config = _config(None)
    return _revision(_alembic().script.ScriptDirectory.from_config(config).get_current_head())


def current(engine: Engine) -> str | None:
    """The revision the database is at; None before any migration."""
    with engine.connect() as connection:
        revision: str | None = _alembic().migration.MigrationContext.configure(connection).get_current_revision()
        return revision


@contextlib.contextmanager
def _sqlite_file_lock(engine: Engine) -> Iterator[None]:
    """Processes sharing one SQLite file take turns: flock on `<database>.upgrade-lock` (POSIX)."""
    database = engine.url.database
    if not database or database == ":memory:":
        yield
        return
    with open(f"{database}.upgrade-lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def at_head(engine: Engine) -> bool:
    """Whether the database is at `HEAD_REVISION` already: one look for `alembic_version` and one SELECT of it."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return False
        versions = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return versions == [HEAD_REVISION]


def upgrade(engine: Engine) -> str:
    """Create or upgrade the schema to the newest revision; returns it. Safe to call from every process at once.

    A database at the head already is left alone, without the lock; one behind is migrated under it."""
    if at_head(engine):
        return HEAD_REVISION
    command = _alembic().command

    with _in_process, (_sqlite_file_lock(engine) if engine.dialect.name == "sqlite" else contextlib.nullcontext()):
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": UPGRADE_LOCK_KEY})
            config = _config(connection)
            tables = set(inspect(connection).get_table_names())
            if "requests" in tables and "alembic_version" not in tables:
                command.stamp(config, FIRST_REVISION)  # made by create_all before migrations existed
            command.upgrade(config, "head")
    return _revision(current(engine))
