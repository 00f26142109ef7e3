"""`/metrics` in the Prometheus text format, read back with prometheus_client's own parser.

The team's launches are made the way a team makes them (submit, approve, launch through boto3 against the real
moto server over HTTP), under an injected clock, in a SQLite store; the GPUs are the fake NVML. The exposition
is fetched over HTTP from the metrics server's WSGI app on waitress, from `gpu-assist metrics serve` started as
a user starts it, and from the Slack server's `/metrics`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from fake_nvml import FakeGpu, FakeNvml
from prometheus_client.parser import text_string_to_metric_families
from slack_client import start_slack_server
from support import Clock, free_port, running, submit_launch

from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.commands import Context
from gpu_assist.host.nvml import NvmlSampler
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.metrics import metrics_application
from gpu_assist.store import Store
from gpu_assist.team.budgets import Budgets

# clock: the GPU samples and the store's requests are dated by the wall clock
pytestmark = [pytest.mark.slow, pytest.mark.clock]
GIB = 2**30


def _series(text: str) -> dict[str, list]:
    """Every sample by metric name, from the library's text parser (which refuses a malformed exposition)."""
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def _value(samples: dict[str, list], name: str, **labels) -> float:
    (match,) = [s.value for s in samples[name] if all(s.labels.get(k) == v for k, v in labels.items())]
    return match


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


@pytest.fixture
def team(aws, tmp_path, catalog):
    """Two launches running for 2 h (one charged to project llm), one request pending, one idle alert standing."""
    clock = Clock()
    policy = Policy(approvers=frozenset({"slack:U-ALICE", "slack:U-BOB"}), ami_id="ami-12c6146b",
                    max_cost=Decimal(40_000), budgets=Budgets({"*": Decimal(50_000), "llm": Decimal(10_000)}, "USD"))
    approvals = Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy, AwsProvisioner(policy), catalog, clock)
    llm = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 72h region=us-east-1 project=llm").id,
                            "slack:U-BOB")
    other = approvals.approve(submit_launch(approvals, "slack:U-DAN", "8xA100 24h region=us-east-1").id,
                              "slack:U-ALICE")
    submit_launch(approvals, "slack:U-CAROL", "8xH100 24h region=us-east-1")
    approvals.store.post_once(f"idle:{other.instance_ids[0]}", "idle", now=clock(), request_id=other.id)
    clock.advance(hours=2)
    return approvals, clock, llm, other


@pytest.fixture
def fake_gpus():
    busy = FakeGpu(uuid="GPU-busy", gpu_pct=85, memory_used=40 * GIB, processes=[(4242, 39 * GIB, "python")])
    idle = FakeGpu(uuid="GPU-idle", gpu_pct=0, memory_used=0)
    return NvmlSampler(FakeNvml([busy, idle]))


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:  # the test reads answers, not access lines
        pass


def _serving(application):
    """The WSGI app on a real HTTP server (the standard library's) on a free port, for a `with` block."""
    return running(make_server("127.0.0.1", free_port(), application, handler_class=_Quiet))


def test_the_exposition_carries_the_gpus_the_launches_their_spend_and_the_budgets(team, fake_gpus, catalog):
    approvals, clock, llm, other = team
    context = Context(catalog_loader=lambda: catalog, now=clock, approvals_factory=lambda _c: approvals,
                      sampler_factory=lambda: fake_gpus)
    window = [fake_gpus.sample(), fake_gpus.sample()]  # a poller's window of two samples, without its thread
    poller = SimpleNamespace(history=lambda: window)
    with _serving(metrics_application(poller.history, lambda: context.approvals.team_standing())) as server:
        base = f"http://127.0.0.1:{server.server_port}"
        status, content_type, text = _get(base + "/metrics")
        missing, _, _ = _get(base + "/nothing")
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4") and missing == 404
    s = _series(text)
    # This machine's GPUs, in base units.
    assert _value(s, "gpu_assist_local_gpus") == 2
    assert _value(s, "gpu_assist_gpu_utilization_ratio", uuid="GPU-busy") == pytest.approx(0.85)
    assert _value(s, "gpu_assist_gpu_memory_used_bytes", uuid="GPU-busy") == 40 * GIB
    assert _value(s, "gpu_assist_gpu_memory_total_bytes", uuid="GPU-busy") == 80 * GIB
    assert _value(s, "gpu_assist_gpu_temperature_celsius", gpu="0") == 60
    assert _value(s, "gpu_assist_gpu_power_watts", gpu="0") == 300
    assert _value(s, "gpu_assist_gpu_process_memory_used_bytes", pid="4242", process="python") == 39 * GIB
    assert _value(s, "gpu_assist_gpu_idle", uuid="GPU-idle") == 1 and _value(s, "gpu_assist_gpu_idle", gpu="0") == 0
    # The team: what runs, what it costs, this month, the budgets, the queue.
    hourly = {record.id: float(record.hourly_price) for record in (llm, other)}
    assert _value(s, "gpu_assist_store_up") == 1
    assert sum(x.value for x in s["gpu_assist_launches_running"]) == 2
    assert _value(s, "gpu_assist_instances_running", project="llm", instance_type=llm.spec.instance_type) == 1
    assert _value(s, "gpu_assist_running_cost_per_hour", currency="USD") == pytest.approx(sum(hourly.values()))
    assert _value(s, "gpu_assist_spend_month_to_date", project="llm") == pytest.approx(2 * hourly[llm.id])
    assert _value(s, "gpu_assist_spend_committed", project="llm") == pytest.approx(70 * hourly[llm.id])
    assert _value(s, "gpu_assist_budget", budget="llm", currency="USD") == 10_000
    assert _value(s, "gpu_assist_budget_spent_month_to_date", budget="*") == pytest.approx(2 * sum(hourly.values()))
    assert _value(s, "gpu_assist_budget_used_ratio", budget="llm") == pytest.approx(2 * hourly[llm.id] / 10_000)
    assert _value(s, "gpu_assist_requests_pending", kind="launch") == 1
    assert _value(s, "gpu_assist_instances_idle") == 1
    assert _value(s, "gpu_assist_store_read_failures_total") == 0
    # The Grafana dashboard in the docs asks only for series the exposition has.
    dashboard = json.loads((Path(__file__).parents[2] / "docs" / "grafana" / "gpu-assist-dashboard.json").read_text())
    asked = {name for panel in dashboard["panels"] for target in panel["targets"]
             for name in re.findall(r"gpu_assist_[a-z_]+", target["expr"])}
    assert len(asked) >= 15 and asked <= set(s)


def test_a_store_that_cannot_be_read_is_store_up_0_and_the_gpu_series_still_come(fake_gpus, catalog):
    def broken(_context):
        raise RuntimeError("database is down")

    context = Context(catalog_loader=lambda: catalog, approvals_factory=broken, sampler_factory=lambda: fake_gpus)
    window = [fake_gpus.sample()]
    poller = SimpleNamespace(history=lambda: window)
    with _serving(metrics_application(poller.history, lambda: context.approvals.team_standing())) as server:
        base = f"http://127.0.0.1:{server.server_port}"
        first, second = _series(_get(base + "/metrics")[2]), _series(_get(base + "/metrics")[2])
    assert _value(second, "gpu_assist_store_up") == 0 and _value(second, "gpu_assist_local_gpus") == 2
    assert _value(first, "gpu_assist_store_read_failures_total") == 1
    assert _value(second, "gpu_assist_store_read_failures_total") == 2
    assert "gpu_assist_spend_month_to_date" not in second


def _wait_for(url: str, process: subprocess.Popen, log) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.1)
    raise AssertionError("metrics serve did not start: " + log.read_text())


def test_metrics_serve_as_a_user_starts_it_answers_with_the_team_from_its_store(team, tmp_path):
    approvals = team[0]
    port = free_port()
    log = tmp_path / "metrics.log"
    env_db = {"GPU_ASSIST_DB_URL": str(approvals.store.engine.url)}
    with open(log, "w") as out:
        process = subprocess.Popen([sys.executable, "-m", "gpu_assist", "metrics", "serve", "--host", "127.0.0.1",
                                    "--port", str(port), "--interval", "0.2"],
                                   env={**os.environ, **env_db}, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for(f"http://127.0.0.1:{port}/metrics", process, log)
        status, _, text = _get(f"http://127.0.0.1:{port}/metrics")
        refused = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", data=b"", method="POST")
        post_status = _get_request(refused)
    finally:
        process.terminate()
        process.wait(timeout=10)
    s = _series(text)
    assert status == 200 and post_status == 405
    assert f"serving Prometheus metrics on http://127.0.0.1:{port}/metrics\n" in log.read_text()
    assert "gpu_assist_local_gpus" in s  # 0 here without a driver; the GPUs on a GPU machine
    assert _value(s, "gpu_assist_store_up") == 1 and _value(s, "gpu_assist_requests_pending", kind="launch") == 1
    assert sum(x.value for x in s["gpu_assist_launches_running"]) == 2


def _get_request(request: urllib.request.Request) -> int:
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_metrics_url_brackets_an_ipv6_address():
    from gpu_assist.metrics import metrics_url

    assert metrics_url("::1", 9100) == "http://[::1]:9100/metrics"
    assert metrics_url("0.0.0.0", 9400) == "http://0.0.0.0:9400/metrics"


def test_metrics_serve_refuses_a_bad_port_in_one_line():
    done = subprocess.run([sys.executable, "-m", "gpu_assist", "metrics", "serve", "--port", "70000"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: --port must be 1-65535") and "metrics serve --port 9400" in done.stderr


def test_the_slack_server_answers_metrics_from_its_store(team, moto_server, mock_slack, tmp_path):
    approvals = team[0]
    process, info = start_slack_server(moto_server, mock_slack, tmp_path, db_url=str(approvals.store.engine.url))
    try:
        status, content_type, text = _get(info["base"] + "/metrics")
    finally:
        process.terminate()
        process.wait(timeout=10)
    s = _series(text)
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    assert _value(s, "gpu_assist_store_up") == 1 and _value(s, "gpu_assist_requests_pending", kind="launch") == 1
    assert "gpu_assist_local_gpus" in s and "gpu_assist_running_cost_per_hour" in s
