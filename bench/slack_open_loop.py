"""Slack at a team's pace: distinct signed `/gpu quote` commands sent at a fixed arrival rate (open loop: a
command is sent on schedule whether or not the previous ones were answered) to a real `gpu-assist slack
serve` process, with 1 worker (waitress) and 2 workers (gunicorn).

Per rate: ack latency (sent → HTTP answer) and answer latency (sent → the mock Slack, in a process of its
own, receives the `response_url` POST) p50/p99, commands answered "busy", and commands never answered.
Saturation: commands answered per second while far more are offered than the server can take. RSS per
worker process. Neither end of the measurement may be what saturates the 2 cores it shares with the server:
the client is one asyncio loop sending pre-built, pre-signed requests (Slack accepts a timestamp within
300 s) over connections it keeps open, as Slack does, opening another only when all are waiting; the mock
Slack is one asyncio loop in its own process that reads each answer and notes when it arrived, nothing
more. Both clocks are CLOCK_MONOTONIC, shared by every process on the machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from slack_client import BOT_TOKEN, SIGNING_SECRET, command_body  # noqa: E402

GPUS = ("A100", "H100", "L4", "A10G", "V100", "T4", "L40S", "H200", "A100-80GB", "B200")
BUSY_WORD = b"busy"
_OK = b'{"ok": true, "user_id": "UBOT", "bot_id": "BBOT", "team_id": "T1", "url": "https://example.slack.com/"}'


async def _answer_slack(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, arrived: dict) -> None:
    """One kept-alive connection to the mock Slack: each request's path and arrival time, and `{"ok": true}`."""
    try:
        while head := await reader.readuntil(b"\r\n\r\n"):
            path = head.split(b" ", 2)[1].decode()
            arrived.setdefault(path.lstrip("/"), time.monotonic())
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(_OK), _OK))
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
        pass  # the server closed the connection, or the mock is stopping with it still open
    finally:
        writer.close()


async def _mock_slack() -> None:
    arrived: dict[str, float] = {}
    server = await asyncio.start_server(lambda r, w: _answer_slack(r, w, arrived), "127.0.0.1", 0)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    print(json.dumps(arrived), flush=True)


class MockProcess:
    """The mock Slack in a process of its own (`python bench/slack_open_loop.py mock`), so receiving answers
    costs neither the client nor the server."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, __file__, "mock"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.url = self.process.stdout.readline().strip()

    def finish(self) -> dict[str, float]:
        """method/path → when it arrived (the first time), for everything received."""
        out, _ = self.process.communicate(timeout=60)
        return json.loads(out.strip().splitlines()[-1])


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(mock_url: str, state: Path, workers: int, threads: int):
    port = _free_port()
    env = {**os.environ, "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
           "GPU_ASSIST_SLACK_API_URL": mock_url + "/api/", "GPU_ASSIST_DB_URL": f"sqlite:///{state / 'state.db'}",
           "GPU_ASSIST_CACHE_DIR": str(state / "cache")}
    process = subprocess.Popen([sys.executable, "-m", "gpu_assist", "slack", "serve", "--host", "127.0.0.1",
                                "--port", str(port), "--no-jobs", "--threads", str(threads), "--workers", str(workers)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
            if workers > 1:
                time.sleep(3)  # every worker, not only the first, has loaded its catalog
            return process, port
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("server did not start")


def _signed_request(port: int, body: str) -> bytes:
    from slack_sdk.signature import SignatureVerifier

    stamp = str(int(time.time()))
    signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=stamp, body=body)
    data = body.encode()
    head = (f"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(data)}\r\n"
            f"X-Slack-Request-Timestamp: {stamp}\r\nX-Slack-Signature: {signature}\r\n\r\n")
    return head.encode() + data


class Connections:
    """At most `most` connections to the server, kept open between requests as Slack keeps them: a request
    takes an idle one, else opens one while fewer than `most` are open, else waits for one to be free (that
    wait counts in its ack latency). The cap stays under waitress's 100 connections, past which it stops
    accepting and a connection would wait in the listen queue for ever."""

    def __init__(self, port: int, most: int = 64):
        self._port, self._room = port, most
        self._idle: asyncio.Queue = asyncio.Queue()

    async def take(self):
        if self._idle.empty() and self._room > 0:
            self._room -= 1
            try:
                return await asyncio.open_connection("127.0.0.1", self._port)
            except OSError:
                self._room += 1
                raise
        return await self._idle.get()

    def give_back(self, connection, *, broken: bool = False) -> None:
        if broken:
            connection[1].close()
            self._room += 1
        else:
            self._idle.put_nowait(connection)

    def close(self) -> None:
        while not self._idle.empty():
            self._idle.get_nowait()[1].close()


async def _exchange(connection, request: bytes) -> tuple[int, bytes]:
    reader, writer = connection
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    return int(head.split(b" ", 2)[1]), await reader.readexactly(length)


async def _one(request: bytes, record: dict, connections: Connections, timeout_s: float = 30.0) -> None:
    """Send one request and read its ack; no ack within `timeout_s` counts as an error, never a hang."""
    record["sent"] = time.monotonic()
    connection = None
    try:
        connection = await asyncio.wait_for(connections.take(), timeout_s)
        status, body = await asyncio.wait_for(_exchange(connection, request), timeout_s)
        record.update(acked=time.monotonic(), status=status, busy=BUSY_WORD in body)
        connections.give_back(connection)
    except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, StopIteration):
        record["status"] = 0
        if connection is not None:
            connections.give_back(connection, broken=True)


async def _send_at_rate(port: int, requests: list[bytes], rate: float) -> list[dict]:
    records: list[dict] = [{} for _ in requests]
    connections = Connections(port)
    start = time.monotonic() + 0.05
    tasks = []
    for number, request in enumerate(requests):
        delay = start + number / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(_one(request, records[number], connections)))
    await asyncio.gather(*tasks)
    connections.close()
    return records


def _p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else float("nan")


def _rss_mib(server: subprocess.Popen, workers: int) -> list[dict]:
    pids = [server.pid] if workers == 1 else [int(p) for p in subprocess.run(
        ["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout.split()]
    rows = []
    for pid in pids:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
        fields = dict(line.split(":", 1) for line in status if ":" in line)
        rows.append({"pid": pid, "rss_mib": int(fields["VmRSS"].split()[0]) / 1024,
                     "peak_rss_mib": int(fields["VmHWM"].split()[0]) / 1024})
    return rows


def run_config(workers: int, rates: tuple[float, ...], seconds: float, saturation_rate: float,
               saturation_seconds: float, threads: int = 16, varied: bool = True) -> dict:
    """`varied`: every command a different quote, so none is answered from memory; otherwise one quote
    asked again and again, which measures everything on the path except pricing and rendering."""
    state = Path(tempfile.mkdtemp(prefix="gpu-assist-bench-open-"))
    mock = MockProcess()
    server, port = start_server(mock.url, state, workers, threads)
    counter = iter(range(10**9))
    plans = []  # (label, rate, [response path per request], records)
    try:
        def commands(count: int) -> tuple[list[bytes], list[str]]:
            requests, paths = [], []
            for _ in range(count):
                n = next(counter)
                path = f"response/{n}"
                text = f"quote {1 + n % 16}x{GPUS[n % len(GPUS)]} {1 + n // 160}h" if varied else "quote 8xA100 72h"
                requests.append(_signed_request(port, command_body(text, user="U-BENCH",
                                                                   response_url=f"{mock.url}/{path}")))
                paths.append(path)
            return requests, paths

        warm, _ = commands(40)
        asyncio.run(_send_at_rate(port, warm, 20))
        for label, rate, duration in [*((f"{r:g}/s", r, seconds) for r in rates),
                                      ("saturation", saturation_rate, saturation_seconds)]:
            requests, paths = commands(int(rate * duration))
            records = asyncio.run(_send_at_rate(port, requests, rate))
            plans.append((label, rate, paths, records))
            time.sleep(2.0)
        time.sleep(8.0)  # answers still on their way
        rss = _rss_mib(server, workers)
    finally:
        server.terminate()
        server.wait(timeout=20)
    arrived = mock.finish()
    levels = []
    for label, rate, paths, records in plans:
        acks = [r["acked"] - r["sent"] for r in records if r.get("status") == 200]
        answered = [(arrived[p] - r["sent"], arrived[p]) for p, r in zip(paths, records) if p in arrived]
        busy = sum(1 for r in records if r.get("busy"))
        level = {"label": label, "rate": rate, "sent": len(records), "errors": sum(r.get("status") != 200
                                                                                 for r in records),
                 "busy": busy, "answered": len(answered), "never_answered": len(records) - len(answered) - busy,
                 "ack_p50_ms": _p(acks, 0.5), "ack_p99_ms": _p(acks, 0.99),
                 "answer_p50_ms": _p([a for a, _ in answered], 0.5), "answer_p99_ms": _p([a for a, _ in answered],
                                                                                      0.99)}
        if label == "saturation" and len(answered) > 1:
            times = sorted(at for _, at in answered)
            level["answers_per_s"] = (len(times) - 1) / (times[-1] - times[0])
        levels.append(level)
    return {"workers": workers, "threads": threads, "varied": varied, "levels": levels, "rss": rss}


def measure(rates=(50, 100, 300), seconds: float = 8.0, saturation_rate: float = 1000,
            saturation_seconds: float = 4.0) -> dict:
    """Distinct quotes with 1 and 2 workers; then one quote repeated, 2 workers, at saturation only: what the
    serving path alone (HTTP, checks, Bolt, hand-off, answer) can carry when the quote costs nothing."""
    configs = [run_config(workers, rates, seconds, saturation_rate, saturation_seconds) for workers in (1, 2)]
    configs.append(run_config(2, (), seconds, saturation_rate, saturation_seconds, varied=False))
    return {"configs": configs, "cpus": os.cpu_count()}


if __name__ == "__main__":
    if sys.argv[1:] == ["mock"]:
        asyncio.run(_mock_slack())
    else:
        print(json.dumps(measure(), indent=2))
