"""Slack ack latency under load: N concurrent clients send signed `/gpu quote` requests over loopback to a real
`gpu-assist slack serve` process; the lazy work answers a local mock of Slack's `response_url`s.

Per level: ack latency p50/p99 (client-side: request sent → HTTP answer), commands/s, errors; and the server's
peak RSS. Bounded: a fixed number of requests per level, loopback only.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from mock_slack import MockSlack  # noqa: E402
from slack_client import BOT_TOKEN, SIGNING_SECRET, command_body, signed_post  # noqa: E402


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_server(mock: MockSlack, state: Path, threads: int):
    port = _free_port()
    env = {**os.environ, "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
           "GPU_ASSIST_SLACK_API_URL": mock.api_url, "GPU_ASSIST_DB_URL": f"sqlite:///{state / 'state.db'}",
           "GPU_ASSIST_CACHE_DIR": str(state / "cache")}
    process = subprocess.Popen([sys.executable, "-m", "gpu_assist", "slack", "serve", "--host", "127.0.0.1",
                                "--port", str(port), "--no-jobs", "--threads", str(threads)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/healthz", timeout=1)
            return process, base + "/slack/events"
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("server did not start")


GPUS = ("A100", "H100", "L4", "A10G", "V100", "T4", "L40S", "H200", "A100-80GB", "B200")


def run_level(url: str, mock: MockSlack, clients: int, requests: int, *, varied: bool) -> dict:
    """`varied`: every request a different quote (GPU × count × hours), so no answer comes from memory."""
    latencies, errors, lock = [], [0], threading.Lock()
    per_client = max(1, requests // clients)
    counter = iter(range(10**9))

    def client():
        for _ in range(per_client):
            n = next(counter)
            text = f"quote {1 + n % 16}x{GPUS[n % len(GPUS)]} {1 + n // 160}h" if varied else "quote 8xA100 72h"
            body = command_body(text, user="U-BENCH", response_url=mock.response_url())
            started = time.perf_counter()
            status, _ = signed_post(url, body)
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                if status != 200:
                    errors[0] += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    latencies.sort()
    return {"clients": clients, "varied": varied, "requests": len(latencies), "errors": errors[0],
            "ack_p50_ms": statistics.median(latencies) * 1000,
            "ack_p99_ms": latencies[int(0.99 * (len(latencies) - 1))] * 1000,
            "commands_per_s": len(latencies) / wall}


def measure(levels=(10, 50, 200), requests: int = 600, threads: int = 32) -> dict:
    import tempfile

    mock = MockSlack().start()
    state = Path(tempfile.mkdtemp(prefix="gpu-assist-bench-"))
    process, url = start_server(mock, state, threads)
    try:
        run_level(url, mock, 5, 50, varied=False)  # warm up
        results = [run_level(url, mock, clients, max(requests, clients), varied=varied)
                   for varied in (True, False) for clients in levels]
        deadline = time.monotonic() + 60
        sent = sum(r["requests"] for r in results) + 50
        while len(mock.calls("response/")) < sent and time.monotonic() < deadline:
            time.sleep(0.2)
        answered = len(mock.calls("response/"))
        return {"levels": results, "lazy_answers_received": answered, "lazy_answers_expected": sent,
                "server_peak_rss_mib": _peak_rss_mib(process.pid), "server_threads": threads}
    finally:
        process.terminate()
        process.wait(timeout=10)
        mock.stop()


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
