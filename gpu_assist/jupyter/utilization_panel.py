"""The notebook's live utilisation panel: per-GPU bars and sparklines from the NVML poller."""

# mypy: disallow-subclassing-any=False
# (ipywidgets has no type information: the panel subclasses its VBox all the same)

from __future__ import annotations

import html
import threading

import ipywidgets as widgets

from ..host.nvml import IDLE_BELOW_PCT, NvmlSampler, Poller, idle_gpus
from ..plural import plural


class UtilizationPanel(widgets.VBox):
    """Live per-GPU bars from the NVML poller; says so plainly when there is no GPU. Call `stop()` to end it."""

    def __init__(self, sampler: NvmlSampler | None = None, *, interval_s: float = 1.0, history_s: float = 600.0,
                 start: bool = True):
        self.poller = Poller(sampler or NvmlSampler(), interval_s=interval_s, history_s=history_s)
        self.status = widgets.HTML()
        self.bars = widgets.VBox()
        self.processes = widgets.HTML()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        super().__init__(children=[self.status, self.bars, self.processes])
        if start:
            self.start()

    def start(self) -> None:
        self.poller.start()
        self._stop.clear()
        self._thread = threading.Thread(target=self._refresh_loop, name="gpu-assist-util-panel", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.poller.stop()

    def _refresh_loop(self) -> None:
        while not self._stop.is_set():
            self.refresh()
            self._stop.wait(self.poller.interval_s)

    def refresh(self) -> None:
        """Show the latest snapshot, with a sparkline of each GPU's recent utilisation."""
        snapshot = self.poller.latest()
        if snapshot is None:
            self.status.value = "<i>sampling…</i>"
            return
        if not snapshot.gpus:
            self.status.value = f"<b>No GPUs here:</b> {html.escape(snapshot.reason or 'none found')}"
            self.bars.children = ()
            return
        history = self.poller.history()
        window = history[-60:]  # what the sparklines show
        idle = idle_gpus(window)
        idle_line = "" if not idle else \
            f"<br><b>idle</b> for the last {window[-1].taken_at - window[0].taken_at:.0f} s: " \
            f"GPU {', '.join(map(str, idle))} (below {IDLE_BELOW_PCT:g}% use, no process)"
        self.status.value = f"{plural(len(snapshot.gpus), 'GPU')} · " \
            f"driver {html.escape(snapshot.driver_version or '?')}" + idle_line + \
            "".join(f"<br><span style='color:#c62828'>{html.escape(e)}</span>" for e in snapshot.errors)
        rows = []
        for gpu in snapshot.gpus:
            memory = (gpu.memory_used_mib or 0) / max(gpu.memory_total_mib or 1, 1) * 100
            spark = sparkline([next((g.utilization_gpu_pct for g in s.gpus if g.index == gpu.index), None)
                               for s in history[-60:]])
            rows.append(widgets.HBox([
                widgets.Label(f"GPU {gpu.index} {gpu.name or ''}"),
                widgets.FloatProgress(value=gpu.utilization_gpu_pct or 0, min=0, max=100, description="util"),
                widgets.FloatProgress(value=memory, min=0, max=100, description="memory"),
                widgets.Label(spark)]))
        self.bars.children = rows
        lines = [f"GPU {gpu.index}: pid {p.pid} {html.escape(p.name or '(hidden)')} "
                 f"{(p.used_memory_mib or 0) / 1024:.1f} GiB" for gpu in snapshot.gpus for p in gpu.processes]
        self.processes.value = "<br>".join(lines)


def sparkline(values: list[float | None]) -> str:
    marks = "▁▂▃▄▅▆▇█"
    return "".join(" " if v is None else marks[min(7, int(v / 100 * 8))] for v in values)
