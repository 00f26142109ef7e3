"""Where the store is and how it is opened: the database URL (`GPU_ASSIST_DB_URL`, else a SQLite file in the
user's data directory), the engine over it (one line naming the variable for a URL that cannot be opened), and the
dates SQLite hands back without their zone."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError

from ..errors import ConfigError


def _default_path() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "gpu-assist" / "state.db"


def default_url() -> str:
    configured = os.environ.get("GPU_ASSIST_DB_URL")
    if configured:
        return configured
    path = _default_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def configured() -> bool:
    """Whether the team keeps requests here: GPU_ASSIST_DB_URL is set, or the default file has been made."""
    return bool(os.environ.get("GPU_ASSIST_DB_URL")) or _default_path().exists()


def _engine(url: str, connect_args: dict[str, Any]) -> Engine:
    """The engine for `url`; one that is no database URL SQLAlchemy can open (no URL, an unknown dialect, a driver
    not installed) is a ConfigError naming GPU_ASSIST_DB_URL. The URL itself is never echoed: it may hold a
    password."""
    try:
        return create_engine(url, future=True, pool_pre_ping=True, connect_args=connect_args)
    except (ArgumentError, ImportError) as error:
        reason = f"its driver is not installed ({error})" if isinstance(error, ImportError) else \
            str(error).splitlines()[0].removesuffix(" from given URL string")
        raise ConfigError(f"GPU_ASSIST_DB_URL is not a database URL gpu-assist can open: {reason}",
                          hint="it takes an SQLAlchemy URL, sqlite:///PATH or postgresql+psycopg://USER@HOST/DB "
                               "(unset: ~/.local/share/gpu-assist/state.db)",
                          example="GPU_ASSIST_DB_URL=sqlite:////tmp/gpu-assist.db gpu-assist requests") from None


def open_engine(url: str) -> Engine:
    """The engine of the store at `url`; a SQLite file is shared between threads, in WAL mode, waiting for locks."""
    sqlite = url.startswith("sqlite")
    engine = _engine(url, {"timeout": 30, "check_same_thread": False} if sqlite else {})
    if sqlite:
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def aware(value: dt.datetime | None) -> dt.datetime | None:
    """SQLite returns naive datetimes; everything here is UTC."""
    return None if value is None else utc(value)


def utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value
