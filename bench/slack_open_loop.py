"""Slack at a team's pace: distinct signed `/gpu quote` commands sent at a fixed arrival rate (open loop: a
command is sent on schedule whether or not the previous ones were answered) to a real `gpu-assist slack
serve` process, with 1 worker (waitress) and 2 workers (gunicorn).

Per rate: ack latency (sent → HTTP answer) and answer latency (sent → the mock Slack, in a process of its
own, receives the `response_url` POST) p50/p99, commands answered "busy", and commands never answered.
Saturation: commands answered per second while far more are offered than the server can take. RSS per
worker process. The client is one asyncio loop with pre-signed bodies, so it costs the server little CPU;
both clocks are CLOCK_MONOTONIC, shared by every process on the machine.
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
_MOCK = """
import json, sys
sys.path.insert(0, sys.argv[1])
from mock_slack import MockSlack
mock = MockSlack().start()
print(mock.url, flush=True)
sys.stdin.read()
print(json.dumps([[r["method"], r["at"]] for r in mock.received]), flush=True)
"""


class MockProcess:
    """tests/mock_slack.py in a process of its own, so receiving answers does not slow the client."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-c", _MOCK, str(REPO / "tests")], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.url = self.process.stdout.readline().strip()

    def finish(self) -> dict[str, float]:
        """method/path → when it arrived (the first time), for everything received."""
        out, _ = self.process.communicate(timeout=60)
        arrived: dict[str, float] = {}
        for method, at in json.loads(out.strip().splitlines()[-1]):
            arrived.setdefault(method, at)
        return arrived


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
    head = (f"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
            f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(data)}\r\n"
            f"X-Slack-Request-Timestamp: {stamp}\r\nX-Slack-Signature: {signature}\r\n\r\n")
    return head.encode() + data


async def _one(port: int, request: bytes, record: dict) -> None:
    record["sent"] = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        await writer.drain()
        data = await reader.read()
        writer.close()
        record["acked"] = time.monotonic()
        head, _, body = data.partition(b"\r\n\r\n")
        record["status"] = int(head.split(b" ", 2)[1]) if head else 0
        record["busy"] = BUSY_WORD in body
    except OSError:
        record["status"] = 0


async def _send_at_rate(port: int, requests: list[bytes], rate: float) -> list[dict]:
    records = [{} for _ in requests]
    start = time.monotonic() + 0.05
    tasks = []
    for number, request in enumerate(requests):
        delay = start + number / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(_one(port, request, records[number])))
    await asyncio.gather(*tasks)
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
               saturation_seconds: float, threads: int = 16) -> dict:
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
                text = f"quote {1 + n % 16}x{GPUS[n % len(GPUS)]} {1 + n // 160}h"  # every one distinct
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
    return {"workers": workers, "threads": threads, "levels": levels, "rss": rss}


def measure(rates=(50, 100, 300), seconds: float = 8.0, saturation_rate: float = 1000,
            saturation_seconds: float = 4.0) -> dict:
    return {"configs": [run_config(workers, rates, seconds, saturation_rate, saturation_seconds)
                        for workers in (1, 2)], "cpus": os.cpu_count()}


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
