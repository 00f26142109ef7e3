"""gpu-assist's figures in the Prometheus text format, where teams already look (Prometheus + Grafana).

Three sources, read at each scrape: this machine's GPUs (the NVML poller's samples: use, memory, temperature,
power, per-process memory, and which GPUs were idle through the poller's window), the age of each price source the
jobs leader refreshes (`sources.freshness`), and, with a store, the team (`standing.TeamStanding`: running launches
and their hourly cost, spend this month and committed to TTLs, each budget, pending requests, idle instances).
`gpu-assist metrics serve --port N` serves them alone; the Slack server answers the same at `GET /metrics`. A store
that cannot be read is `gpu_assist_store_up 0` and the other series still come, so a scrape never fails for one of
its parts.

Names follow Prometheus's conventions: the `gpu_assist_` prefix, base units (bytes, watts, degrees Celsius,
ratios 0–1), `_total` on counters. Money has no base unit: each amount is labelled with its currency.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import waitress
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .catalog import default_catalog_dir
from .host.nvml import GpuSample, NvmlSampler, Poller, Snapshot, idle_gpus
from .sources.freshness import SourceRefresh, read_ledger
from .team.standing import TeamStanding

log = logging.getLogger("gpu_assist.metrics")
MIB = 2**20
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
WsgiEnviron = dict[str, Any]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[WsgiEnviron, StartResponse], list[bytes]]


def _gauge(name: str, about: str, labels: Sequence[str] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"gpu_assist_{name}", about, labels=list(labels))


def gpu_metrics(snapshots: Sequence[Snapshot]) -> list[Metric]:
    """The newest snapshot's GPUs, and the ones idle through all of `snapshots` (the poller's window)."""
    last = snapshots[-1] if snapshots else None
    gpus: tuple[GpuSample, ...] = last.gpus if last else ()
    labels = ("gpu", "uuid", "model")
    count = _gauge("local_gpus", "GPUs NVML sees on this machine (0 without a driver)")
    count.add_metric([], len(gpus))
    readings = {
        "utilization_gpu_pct": (_gauge("gpu_utilization_ratio", "Share of the last sample period a kernel ran",
                                       labels), 0.01),
        "utilization_memory_pct": (_gauge("gpu_memory_bandwidth_utilization_ratio",
                                          "Share of the last sample period device memory was read or written",
                                          labels), 0.01),
        "memory_used_mib": (_gauge("gpu_memory_used_bytes", "Device memory in use", labels), MIB),
        "memory_total_mib": (_gauge("gpu_memory_total_bytes", "Device memory in all", labels), MIB),
        "temperature_c": (_gauge("gpu_temperature_celsius", "GPU core temperature", labels), 1),
        "power_w": (_gauge("gpu_power_watts", "Power drawn by the board", labels), 1),
        "power_limit_w": (_gauge("gpu_power_limit_watts", "Enforced power limit", labels), 1),
    }
    idle = _gauge("gpu_idle", "1 where the GPU was idle (under 10 % use, no process) through the poller's window",
                  labels)
    process_memory = _gauge("gpu_process_memory_used_bytes", "Device memory a process holds",
                            (*labels, "pid", "process"))
    idle_now = set(idle_gpus(snapshots))
    for gpu in gpus:
        values = [str(gpu.index), gpu.uuid or "", gpu.name or ""]
        for field, (family, scale) in readings.items():
            reading = getattr(gpu, field)
            if reading is not None:  # unsupported on this GPU: no sample, rather than a made-up 0
                family.add_metric(values, reading * scale)
        idle.add_metric(values, 1 if gpu.index in idle_now else 0)
        for process in gpu.processes:
            if process.used_memory_mib is not None:
                process_memory.add_metric([*values, str(process.pid), process.name or ""],
                                          process.used_memory_mib * MIB)
    return [count, *(family for family, _ in readings.values()), idle, process_memory]


def team_metrics(team: TeamStanding) -> list[Metric]:
    """The team's launches, money and queue as the store records them."""
    currency = team.currency
    running = _gauge("launches_running", "gpu-assist launches running",
                     ("project", "region", "instance_type", "pricing_model"))
    instances = _gauge("instances_running", "Instances gpu-assist launched that are running",
                       ("project", "region", "instance_type", "pricing_model"))
    for launch in team.running:
        where = [launch.project, launch.region, launch.instance_type, launch.pricing_model]
        running.add_metric(where, 1)
        instances.add_metric(where, launch.instances)
    hourly = _gauge("running_cost_per_hour", "What the running launches cost per hour, at their approved prices",
                    ("currency",))
    hourly.add_metric([currency], float(team.hourly))
    spent = _gauge("spend_month_to_date", "Spend on gpu-assist launches since the 1st of the month (UTC)",
                   ("project", "currency"))
    committed = _gauge("spend_committed", "What the running launches will still cost until their TTLs",
                       ("project", "currency"))
    for project in sorted(set(team.month_to_date) | set(team.committed)):
        spent.add_metric([project, currency], float(team.month_to_date.get(project, 0)))
        committed.add_metric([project, currency], float(team.committed.get(project, 0)))
    budget = _gauge("budget", "A monthly budget", ("budget", "currency"))
    budget_spent = _gauge("budget_spent_month_to_date", "Spend this month counted against a budget",
                          ("budget", "currency"))
    budget_committed = _gauge("budget_committed", "Committed spend to TTLs counted against a budget",
                              ("budget", "currency"))
    budget_used = _gauge("budget_used_ratio", "Spend this month over the budget's amount", ("budget",))
    for status in team.budgets:
        budget.add_metric([status.name, status.currency], float(status.amount))
        budget_spent.add_metric([status.name, status.currency], float(status.month_to_date))
        budget_committed.add_metric([status.name, status.currency], float(status.committed))
        budget_used.add_metric([status.name], float(status.used_fraction))
    pending = _gauge("requests_pending", "Requests waiting for an approver's decision", ("kind",))
    for kind in ("launch", "stop", "extend"):
        pending.add_metric([kind], team.pending.get(kind, 0))
    idle = _gauge("instances_idle", "Running instances gpu-assist launched with an idle alert standing")
    idle.add_metric([], team.idle_instances)
    left_out = _gauge("launches_unpriced", "Launches this month left out of spend (no price, or another currency)")
    left_out.add_metric([], team.left_out)
    return [running, instances, hourly, spent, committed, budget, budget_spent, budget_committed, budget_used,
            pending, idle, left_out]


def catalog_metrics(ledger: Mapping[str, SourceRefresh], now: dt.datetime) -> list[Metric]:
    """Each price source the jobs leader refreshes (`sources.freshness`): how old its rows are, and when its last
    good refresh was; none before the first refresh."""
    age = _gauge("catalog_age_seconds", "Time since a price source's rows were observed (the start of that day, UTC)",
                 ("source",))
    refreshed = _gauge("catalog_refreshed_timestamp_seconds", "When a price source was last refreshed without error",
                       ("source",))
    for name, state in sorted(ledger.items()):
        seconds = state.age_s(now)
        if seconds is not None:
            age.add_metric([name], seconds)
        if state.refreshed_at is not None:
            refreshed.add_metric([name], state.refreshed_at.timestamp())
    return [age, refreshed]


def _catalog_ledger() -> Mapping[str, SourceRefresh]:
    return read_ledger(default_catalog_dir())


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class GpuAssistCollector(Collector):
    """Collects at each scrape. `snapshots`: the poller's window (newest last); `team`: the standing now, or None
    where no store is configured. A failing team read is logged and counted, never raised into the scrape."""

    def __init__(self, snapshots: Callable[[], Sequence[Snapshot]],
                 team: Callable[[], TeamStanding] | None = None, *,
                 catalog: Callable[[], Mapping[str, SourceRefresh]] = _catalog_ledger,
                 clock: Callable[[], dt.datetime] = _utc_now):
        self._snapshots, self._team, self._catalog, self._clock = snapshots, team, catalog, clock
        self.store_failures = 0

    def collect(self) -> Iterator[Metric]:
        yield from gpu_metrics(self._snapshots())
        try:
            yield from catalog_metrics(self._catalog(), self._clock())
        except (OSError, ValueError):  # an unreadable refresh ledger: the other series still come
            log.exception("metrics: could not read the catalog's refresh ledger")
        if self._team is None:
            return
        up = _gauge("store_up", "1 where the last scrape read the request store")
        try:
            families = team_metrics(self._team())
            up.add_metric([], 1)
        except Exception:  # noqa: BLE001 - the store is down or unreadable: say so, keep the GPU series
            log.exception("metrics: could not read the team's standing from the store")
            self.store_failures += 1
            families = []
            up.add_metric([], 0)
        failures = CounterMetricFamily("gpu_assist_store_read_failures", "Scrapes that could not read the store")
        failures.add_metric([], self.store_failures)
        yield from (up, failures, *families)


def registry(collector: GpuAssistCollector) -> CollectorRegistry:
    """A registry of gpu-assist's series alone (not the process's own, which a library may already register)."""
    owned = CollectorRegistry(auto_describe=False)
    owned.register(collector)
    return owned


def exposition(collected: CollectorRegistry) -> bytes:
    return generate_latest(collected)


def wsgi_metrics(collected: CollectorRegistry) -> WsgiApp:
    """`GET /metrics` as a WSGI app: the exposition, or 405 for any other method."""

    def application(environ: WsgiEnviron, start_response: StartResponse) -> list[bytes]:
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            body = b'{"error": "only GET is allowed here"}'
            start_response("405 Method Not Allowed", [("Content-Type", "application/json"), ("Allow", "GET, HEAD"),
                                                      ("Content-Length", str(len(body)))])
            return [body]
        body = exposition(collected)
        start_response("200 OK", [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))])
        return [body] if environ.get("REQUEST_METHOD") == "GET" else []

    return application


def metrics_application(snapshots: Callable[[], Sequence[Snapshot]], team: Callable[[], TeamStanding] | None,
                        ) -> WsgiApp:
    """The metrics server's WSGI app: `GET /metrics` from `snapshots` (a poller's window) and `team` (the store's
    standing, None where no store is configured); anything else a JSON 404."""
    metrics_app = wsgi_metrics(registry(GpuAssistCollector(snapshots, team)))

    def application(environ: WsgiEnviron, start_response: StartResponse) -> list[bytes]:
        if environ.get("PATH_INFO") == "/metrics":
            return metrics_app(environ, start_response)
        body = b'{"error": "no such path; Prometheus scrapes /metrics"}'
        start_response("404 Not Found", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return application


def metrics_url(host: str, port: int) -> str:
    """Where the exposition answers (an IPv6 address in brackets)."""
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/metrics"


def serve(host: str, port: int, sampler: NvmlSampler, team: Callable[[], TeamStanding] | None, *,
          interval_s: float = 5.0, window_s: float = 600.0,
          listening: Callable[[str], None] = lambda url: None) -> None:
    """`gpu-assist metrics serve`: sample the GPUs every `interval_s` in the background and answer on waitress
    until interrupted; the team's series only with `team`. `listening` is told the URL once the port is bound
    (port 0: the one the system chose)."""
    poller = Poller(sampler, interval_s=interval_s, history_s=window_s).start()
    try:
        server = waitress.create_server(metrics_application(poller.history, team), host=host, port=port, threads=4,
                                        ident="gpu-assist-metrics")
        url = metrics_url(host, int(getattr(server, "effective_port", port)))
        log.info("gpu-assist metrics on %s", url)
        listening(url)
        server.run()
    finally:
        poller.stop()
