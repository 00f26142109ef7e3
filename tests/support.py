"""Constants and row builders the tests share (fixtures live in conftest.py)."""

from __future__ import annotations

import contextlib
import datetime as dt
import http.server
import os
import socket
import socketserver
import threading
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from gpu_assist.catalog import OFFER_COLUMNS

REPO = Path(__file__).resolve().parent.parent
CATALOGS = REPO / "catalogs"
# The raw extracts the importers read and the recorded API responses, vendored so a bare clone tests alone.
SOURCES = CATALOGS / "sources"
FIXTURES = REPO / "tests" / "fixtures"
TODAY = dt.date(2026, 12, 2)
NOON = dt.datetime.combine(TODAY, dt.time(12), tzinfo=dt.timezone.utc)  # the instant pinned clocks start at


def offer(**values) -> dict:
    """One offer row with plausible defaults; tests override what they assert on."""
    row = {c: "" for c in OFFER_COLUMNS}
    row.update(provider="aws", region="us-east-1", instance_type="p4d.24xlarge", gpu="A100", gpu_count="8",
               gpu_memory_gib="40", interconnect="nvlink", currency="USD", on_demand_hourly="32",
               billing_granularity_s="1", source="skypilot-aws", as_of="2026-12-01", verified="yes")
    row.update({k: str(v) for k, v in values.items()})
    return row


# A launch as gpu-assist stored it before LaunchSpec (keys in their order; no project).
OLD_LAUNCH = {
    "request_id": "r-0123456789ab", "requester": "slack:U-CAROL", "text": "launch 8xA100 72h region=us-east-1",
    "gpu": "A100", "gpus": 8, "instance_type": "p4d.24xlarge", "instances": 1, "vcpus": 96, "region": "us-east-1",
    "zone": "", "pricing_model": "on-demand", "duration_s": 259200, "hourly": "21.957642",
    "ceiling_hourly": "21.957642", "estimated_total": "1580.950224", "currency": "USD",
    "candidates": [{"region": "us-east-1", "zone": None, "hourly": "21.957642"},
                   {"region": "us-west-2", "zone": "usw2-az1", "hourly": "21.957642"}],
    "price_source": "skypilot-aws 2026-12-01", "checks": {"dry_run": "ok", "quota": "quota unknown"},
    "launched_region": "us-west-2", "launched_zone": "us-west-2a",
}


def submit_launch(approvals, requester: str, words: str):
    """`launch <words>` as the grammar parses it (what every face hands the lifecycle), submitted by `requester`."""
    from gpu_assist.commands.grammar import parse_command

    return approvals.submit_launch(requester, parse_command(f"launch {words}", approvals.catalog.gpus))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# What the start-up of every Python process the tests start reads (tests/child_startup/sitecustomize.py: the
# loopback guard, its log of refusals, the moved clock); tests/conftest.py sets them for the whole run.
CHILD_STARTUP_ENV = ("PYTHONPATH", "GPU_ASSIST_TEST_REFUSED_LOG", "GPU_ASSIST_TEST_CLOCK_SHIFT_S",
                     "GPU_ASSIST_TEST_CLOCK_LOG", "GPU_ASSIST_TEST_CLOCK_OWNER", "TZ")


def child_env(values: dict[str, str]) -> dict[str, str]:
    """An environment of `values` alone for a child process, but for CHILD_STARTUP_ENV: a process that must not
    inherit this one's environment still starts loopback-only, on the suite's clock."""
    return {**{name: os.environ[name] for name in CHILD_STARTUP_ENV if name in os.environ}, **values}


def soak() -> bool:
    """`make soak` sets GPU_ASSIST_SOAK=1 for the long variants."""
    return os.environ.get("GPU_ASSIST_SOAK") == "1"


# Distinctive fake credentials: a hook in conftest.py fails any test whose captured output contains one.
AWS_SECRET = "moto-secret-must-never-be-logged-7f3a"
DB_PASSWORD = "pg-password-must-never-be-logged-91c2"


class Clock:
    """An injected clock the test moves by hand: `clock()` is now, `clock.advance(hours=5)` moves it."""

    def __init__(self, start: dt.datetime = NOON):
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += dt.timedelta(**delta)


class RecordedFiles(http.server.ThreadingHTTPServer):
    """A local HTTP server for recorded real-format responses, with the faults the refresh tests need.

    `body_of(path, query, base)` returns the bytes for a path (None: 404). `faults`: a path substring → status codes
    to answer first, one per request; `broken`: substrings always answered 500; `truncate`: paths whose body stops
    half-way; `hits`: every path asked for, in order.
    """

    def __init__(self, body_of: Callable[[str, str, str], bytes | None]):
        super().__init__(("127.0.0.1", free_port()), _RecordedHandler)
        self.base = f"http://127.0.0.1:{self.server_port}"
        self.body_of = body_of
        self.faults: dict[str, list[int]] = {}
        self.broken: set[str] = set()
        self.truncate: set[str] = set()
        self.hits: list[str] = []

    def status_for(self, full_path: str) -> int | None:
        """The fault status this request gets, if any (an injected one is used up)."""
        pending = next((codes for part, codes in self.faults.items() if part in full_path and codes), None)
        if pending:
            return pending.pop(0)
        return 500 if any(part in full_path for part in self.broken) else None


class _RecordedHandler(http.server.BaseHTTPRequestHandler):
    server: RecordedFiles

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.hits.append(self.path)
        path, _, query = self.path.partition("?")
        status = self.server.status_for(self.path)
        body = None if status else self.server.body_of(path, query, self.server.base)
        if status or body is None:
            self.send_response(status or 404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2] if path in self.server.truncate else body)


Server = TypeVar("Server", bound=socketserver.BaseServer)


@contextlib.contextmanager
def running(server: Server) -> Iterator[Server]:
    """`server` answering from a thread of its own for the duration of the block, then shut and closed."""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def serving(body_of: Callable[[str, str, str], bytes | None]) -> contextlib.AbstractContextManager[RecordedFiles]:
    """A RecordedFiles server on a free port for the duration of the block."""
    return running(RecordedFiles(body_of))
