"""The spot interruption watch against a local instance metadata service that follows the documented IMDSv2
format (EC2 User Guide, "Use IMDSv2": `PUT /latest/api/token` with `X-aws-ec2-metadata-token-ttl-seconds`, the
token in `X-aws-ec2-metadata-token`, 401 without it; "Spot Instance interruption notices":
`/latest/meta-data/spot/instance-action` is 404 until EC2 schedules the interruption, then
`{"action": "terminate", "time": "2026-12-02T12:02:00Z"}`), reached through `AWS_EC2_METADATA_SERVICE_ENDPOINT`
as the AWS SDKs read it.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from support import free_port, running

from gpu_assist.host import spot_watch as spot

pytestmark = [pytest.mark.slow, pytest.mark.clock]  # clock: the interruption notice carries a wall-clock instant


class FakeImds(http.server.ThreadingHTTPServer):
    def __init__(self):
        super().__init__(("127.0.0.1", free_port()), _Handler)
        self.endpoint = f"http://127.0.0.1:{self.server_port}"
        self.tokens: set[str] = set()
        self.action: dict | None = None
        self.polls = 0
        self.refused = 0

    def interrupt_in(self, seconds: float, action: str = "terminate") -> dt.datetime:
        when = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(seconds=seconds)
        self.action = {"action": action, "time": when.strftime("%Y-%m-%dT%H:%M:%SZ")}
        return when


class _Handler(http.server.BaseHTTPRequestHandler):
    server: FakeImds

    def log_message(self, *args) -> None:
        pass

    def _answer(self, status: int, body: bytes = b"", content_type: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self) -> None:
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
        if self.path != "/latest/api/token" or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            self._answer(400)
            return
        token = f"token-{len(self.server.tokens)}"
        self.server.tokens.add(token)
        self._answer(200, token.encode())

    def do_GET(self) -> None:
        if self.headers.get("X-aws-ec2-metadata-token") not in self.server.tokens:
            self.server.refused += 1
            self._answer(401)
            return
        if self.path != "/latest/meta-data/spot/instance-action":
            self._answer(404)
            return
        self.server.polls += 1
        if self.server.action is None:
            self._answer(404)
        else:
            self._answer(200, json.dumps(self.server.action).encode(), "application/json")


@pytest.fixture
def imds(monkeypatch):
    with running(FakeImds()) as server:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", server.endpoint)
        yield server


def _until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_the_function_is_called_once_with_the_action_and_its_time(imds):
    calls: list[spot.InstanceAction] = []
    watcher = spot.watch(calls.append, interval_s=0.05)
    assert watcher is not None
    _until(lambda: imds.polls >= 3)
    assert calls == []  # 404: nothing scheduled
    when = imds.interrupt_in(120)
    _until(lambda: calls)
    polls = imds.polls
    time.sleep(0.3)
    assert calls == [spot.InstanceAction("terminate", when)] and imds.polls == polls  # once, then it stops
    watcher.stop()


def test_a_token_the_service_forgets_is_renewed(imds):
    metadata = spot.InstanceMetadata()
    assert metadata.instance_action() is None
    imds.tokens.clear()  # the service restarted: every token it gave is gone
    when = imds.interrupt_in(90, "stop")
    assert metadata.instance_action() == spot.InstanceAction("stop", when) and imds.refused == 1


def test_off_ec2_it_does_nothing_and_says_so_in_one_line(monkeypatch, capsys):
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    assert spot.watch(lambda action: None) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not watching" in err and "Traceback" not in err


JOB = """
import signal, sys, time, pathlib
out = pathlib.Path(sys.argv[1])
def stop(*_):
    out.write_text(out.read_text() + "job got SIGTERM\\n")
    if sys.argv[2] == "obeys":
        sys.exit(143)
signal.signal(signal.SIGTERM, stop)
out.write_text("job started\\n")
time.sleep(60)
"""


def _spot_watch(tmp_path, imds, behaviour: str, seconds_left: float):
    log = tmp_path / "events.txt"
    job = tmp_path / "job.py"
    job.write_text(JOB)
    command = [sys.executable, "-m", "gpu_assist", "spot", "watch", "--interval", "0.1",
               "--on-warning", f"echo checkpoint saved >> {log}", "--",
               sys.executable, str(job), str(log), behaviour]
    process = subprocess.Popen(command, env={**os.environ, "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.endpoint},
                               stderr=subprocess.PIPE, text=True)
    _until(lambda: log.exists())
    threading.Timer(0.3, imds.interrupt_in, args=(seconds_left,)).start()
    started = time.monotonic()
    _, err = process.communicate(timeout=60)
    return process.returncode, log.read_text(), err, time.monotonic() - started


def test_spot_watch_runs_the_warning_command_then_stops_the_job(tmp_path, imds):
    status, events, err, _ = _spot_watch(tmp_path, imds, "obeys", 120)
    assert events == "job started\ncheckpoint saved\njob got SIGTERM\n"
    assert status == 143 and "EC2 will terminate this instance at" in err


def test_a_job_that_ignores_sigterm_is_killed_at_the_interruption_time(tmp_path, imds):
    status, events, err, took = _spot_watch(tmp_path, imds, "ignores", 3)
    assert events.endswith("job got SIGTERM\n") and status == 128 + 9
    assert "killed at the interruption time" in err and took < 15
