"""Constants and row builders the tests share (fixtures live in conftest.py)."""

from __future__ import annotations

import datetime as dt
import os
import socket
from pathlib import Path

from gpu_assist.catalog import OFFER_COLUMNS

REPO = Path(__file__).resolve().parent.parent
CATALOGS = REPO / "catalogs"
# The raw extracts the importers read and the recorded API responses, vendored so a bare clone tests alone.
SOURCES = CATALOGS / "sources"
FIXTURES = REPO / "tests" / "fixtures"
TODAY = dt.date(2026, 12, 2)


def offer(**values) -> dict:
    """One offer row with plausible defaults; tests override what they assert on."""
    row = {c: "" for c in OFFER_COLUMNS}
    row.update(provider="aws", region="us-east-1", instance_type="p4d.24xlarge", gpu="A100", gpu_count="8",
               gpu_memory_gib="40", interconnect="nvlink", currency="USD", on_demand_hourly="32",
               billing_granularity_s="1", source="skypilot-aws", as_of="2026-12-01", verified="yes")
    row.update({k: str(v) for k, v in values.items()})
    return row


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def soak() -> bool:
    """`make soak` sets GPU_ASSIST_SOAK=1 for the long variants."""
    return os.environ.get("GPU_ASSIST_SOAK") == "1"


# Distinctive fake credentials: a hook in conftest.py fails any test whose captured output contains one.
AWS_SECRET = "moto-secret-must-never-be-logged-7f3a"
DB_PASSWORD = "pg-password-must-never-be-logged-91c2"


class Clock:
    """An injected clock the test moves by hand: `clock()` is now, `clock.advance(hours=5)` moves it."""

    def __init__(self, start: dt.datetime = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.timezone.utc)):
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += dt.timedelta(**delta)
