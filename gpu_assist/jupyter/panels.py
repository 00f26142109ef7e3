"""ipywidgets panels over the shared command grammar: what the CLI and Slack say, as notebook widgets.

Inputs are widgets (GPU dropdown from gpus.csv, count, duration, pricing toggles, filters, currency); a click
builds the same command text the CLI would and runs it through `gpu_assist.commands`. Results are a sortable
pandas table and a bar chart of total cost per option drawn in HTML: no image round-trip, no plotting
dependency, and it renders wherever the notebook's HTML does (JupyterLab, VS Code, nbconvert). Errors go to a
visible error line, never a traceback.
"""

from __future__ import annotations

from decimal import Decimal

import html
import threading
from typing import cast

import ipywidgets as widgets

from ..commands import Context, Result, parse_command, run
from ..compare import COLUMNS, Comparison
from ..errors import GpuAssistError
from ..identity import chosen_name
from ..pricing import Quote
from ..records import RequestRecord
from ..plural import plural
from ..render.money import format_money
from ..request import PRICING_MODELS, PROVIDERS
from .client import JupyterServer


def _error_line() -> widgets.HTML:
    return widgets.HTML(value="", layout=widgets.Layout(min_height="1.5em"))


def _show_error(label: widgets.HTML, message: str) -> None:
    label.value = f'<span style="color:#c62828">⚠ {html.escape(message)}</span>' if message else ""


def cost_bars(labels: list[str], totals: list[float], currency: str) -> str:
    """A horizontal bar chart as HTML: one bar per option, scaled to the most expensive shown."""
    if not totals:
        return ""
    top = max(totals) or 1.0
    rows = []
    for label, total in zip(labels, totals, strict=True):
        width = max(1.0, 100.0 * total / top)
        rows.append(f'<div style="display:flex;align-items:center;gap:6px;font-size:12px">'
                    f'<span style="width:16em;overflow:hidden;white-space:nowrap">{html.escape(label)}</span>'
                    f'<span style="background:#1976d2;height:10px;width:{width:.1f}%"></span>'
                    f'<span>{html.escape(format_money(Decimal(str(total)), currency))}</span></div>')
    return '<div class="gpu-assist-bars">' + "".join(rows) + "</div>"


class _Panel(widgets.VBox):
    """A form, a Run button, an error line and an output area; subclasses say which command to build."""

    def __init__(self, context: Context | None, children: list, button: str):
        self.context = context or Context()
        self.error = _error_line()
        self.button = widgets.Button(description=button, button_style="primary")
        self.output = widgets.Output()
        self.result: Result | None = None
        self.button.on_click(lambda _: self.run())
        super().__init__(children=[*children, self.button, self.error, self.output])

    def command_text(self) -> str:
        raise NotImplementedError

    def run(self):
        """Run the command; the result is also kept in `.result` for code that wants the data."""
        _show_error(self.error, "")
        try:
            command = parse_command(self.command_text(), self.context.catalog.gpus)
            self.result = run(command, self.context, actor=chosen_name())
        except GpuAssistError as error:
            _show_error(self.error, str(error))
            self.result = None
            return None
        self.output.clear_output()
        with self.output:
            self.show(self.result)
        return self.result

    def show(self, result) -> None:
        from IPython.display import HTML, display

        from ..render.text import render

        display(HTML(f"<pre>{html.escape(render(result))}</pre>"))


class QuotePanel(_Panel):
    def __init__(self, context: Context | None = None):
        context = context or Context()
        names = [spec.name for spec in context.catalog.gpus]
        self.gpu = widgets.Dropdown(options=names, value="A100" if "A100" in names else names[0], description="GPU")
        self.count = widgets.BoundedIntText(value=8, min=1, max=100_000, description="count")
        self.duration = widgets.Text(value="72h", description="duration")
        self.pricing = widgets.ToggleButtons(options=["all", *PRICING_MODELS], value="all", description="pricing")
        self.providers = widgets.SelectMultiple(options=PROVIDERS, description="providers", rows=4)
        self.region = widgets.Text(value="", placeholder="us-east-1, eu, cn…", description="region")
        self.currency = widgets.Dropdown(options=["USD", "CNY"], value=context.currency, description="currency")
        self.top = widgets.BoundedIntText(value=10, min=1, max=1000, description="top")
        self.table = None
        self.chart = ""
        super().__init__(context, [widgets.HBox([self.gpu, self.count, self.duration]), self.pricing,
                                   widgets.HBox([self.providers, widgets.VBox([self.region, self.currency,
                                                                               self.top])])], "Quote")

    def command_text(self) -> str:
        words = ["quote", f"{self.count.value}x{self.gpu.value}", self.duration.value.strip(),
                 f"currency={self.currency.value}", f"top={self.top.value}"]
        if self.pricing.value != "all":
            words.append(f"pricing={self.pricing.value}")
        if self.providers.value:
            words.append("provider=" + ",".join(self.providers.value))
        if self.region.value.strip():
            words.append("region=" + self.region.value.strip().replace(" ", ""))
        return " ".join(w for w in words if w)

    def show(self, result: Quote | Comparison) -> None:
        from IPython.display import HTML, display

        if isinstance(result, Comparison):
            self.show_comparison(result)
            return
        frame = result.to_frame()
        if frame.empty:
            display(HTML(f"<i>No option matches:</i> {html.escape(result.empty_reason or 'try fewer filters')}"
                         + "".join(f"<br>{html.escape(n)}" for n in result.notices)))
            return
        shown = frame[["provider", "region", "zone", "instance_type", "instances", "pricing_model", "hourly",
                       "total", "per_gpu_hour", "verified"]].copy()
        for column in ("hourly", "total", "per_gpu_hour"):
            shown[column] = shown[column].astype(float).round(4)
        self.table = shown
        labels = [f"{o.provider} {o.instance_type} {o.pricing_model}" for o in result.options]
        display(HTML(cost_bars(labels, [float(o.total) for o in result.options], result.currency)))
        display(shown.style.format({"hourly": "{:,.4f}", "total": "{:,.2f}", "per_gpu_hour": "{:,.4f}"})
                .set_table_attributes('class="gpu-assist-quote"'))
        if result.notices:
            display(HTML("<br>".join(html.escape(n) for n in result.notices)))


    def show_comparison(self, result: Comparison) -> None:
        """The comparison's columns as a styled DataFrame (each row's cheapest model highlighted) and a bar
        chart of the cheapest ranked total per provider."""
        from IPython.display import HTML, display

        frame = result.to_frame()
        self.table = frame
        if frame.empty:
            display(HTML(f"<i>No option matches:</i> {html.escape(result.quote.empty_reason or 'try fewer filters')}"
                         + "".join(f"<br>{html.escape(n)}" for n in result.notices)))
            return
        ranked = frame[frame.ranked]
        best = ranked.assign(best_total=ranked[list(COLUMNS)].min(axis=1)).groupby("provider", sort=False)[
            "best_total"].min()
        self.chart = cost_bars(list(best.index), [float(v) for v in best], result.currency)
        display(HTML(self.chart))
        models = [m for m in COLUMNS if frame[m].notna().any()]
        shown = frame[["provider", "instance_type", "instances", "where", *models, "verified", "notes"]]
        money = {m: (lambda v: "" if v != v else format_money(Decimal(str(v)), result.currency)) for m in models}
        display(shown.style.format(money).highlight_min(subset=models, axis=1, props="font-weight:bold;"
                                                         "background-color:#c8e6c9")
                .set_table_attributes('class="gpu-assist-quote"'))
        if len(frame) > len(ranked):
            display(HTML("<i>Rows with verified=False are unverified or stale list prices, not ranked.</i>"))
        if result.notices:
            display(HTML("<br>".join(html.escape(n) for n in result.notices)))


class RecommendPanel(_Panel):
    def __init__(self, context: Context | None = None):
        self.kind = widgets.ToggleButtons(options=["train", "finetune", "serve"], value="train", description="kind")
        self.size = widgets.Text(value="7B", description="model")
        self.precision = widgets.Dropdown(options=["bf16", "fp16", "fp8", "fp32", "int8", "int4"], value="bf16",
                                          description="precision")
        self.method = widgets.Dropdown(options=["full", "lora", "qlora"], value="full", description="method")
        self.options = widgets.Text(value="tokens=20B deadline=72h", description="options",
                                    placeholder="tokens=20B deadline=72h budget=$5000 users=50 region=cn")
        super().__init__(context, [self.kind, widgets.HBox([self.size, self.precision, self.method]), self.options],
                         "Recommend")

    def command_text(self) -> str:
        method = self.method.value if self.kind.value == "finetune" and self.method.value != "full" else ""
        return " ".join(filter(None, ["recommend", self.kind.value, self.size.value.strip(), self.precision.value,
                                      method, self.options.value.strip()]))

    def show(self, result) -> None:
        from IPython.display import HTML, display

        from ..render.text import render

        plans = result.plans
        labels = [f"{p.gpu_count}x{p.gpu} {p.provider} {p.strategy}" for p in plans]
        display(HTML(cost_bars(labels, [float(p.total) for p in plans], result.currency)))
        display(HTML(f"<pre>{html.escape(render(result))}</pre>"))


class UtilizationPanel(widgets.VBox):
    """Live per-GPU bars from the NVML poller; says so plainly when there is no GPU. Call `stop()` to end it."""

    def __init__(self, sampler=None, *, interval_s: float = 1.0, history_s: float = 600.0, start: bool = True):
        from ..utilization import NvmlSampler, Poller

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
        self.status.value = f"{plural(len(snapshot.gpus), 'GPU')} · " \
            f"driver {html.escape(snapshot.driver_version or '?')}" + \
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


class LaunchPanel(widgets.VBox):
    """Ask for a launch, see pending requests, and (through the Jupyter server) approve or reject.

    Who acts is never the kernel's to say. With a server link (`server=JupyterServer(url, token)`, or
    `GPU_ASSIST_JUPYTER_URL` + `GPU_ASSIST_JUPYTER_TOKEN`), requests and decisions go through the server's REST
    routes and count as the user the server authenticated (`jupyter:<name>`). Without one, requests are recorded
    as `unauthenticated:<login>` and no Approve/Reject buttons are offered: decide in Slack or the server.
    """

    def __init__(self, context: Context | None = None, server: JupyterServer | None = None):
        self.context = context or Context()
        self.server = server or JupyterServer.from_env()
        self.text = widgets.Text(value="8xA100 72h spot region=us-east-1", description="launch")
        self.button = widgets.Button(description="Request launch", button_style="warning")
        self.error = _error_line()
        self.message = widgets.HTML()
        self.pending = widgets.VBox()
        self.button.on_click(lambda _: self.request())
        where = "as the Jupyter server's user" if self.server else \
            "unauthenticated (no Jupyter server link): approvers decide in Slack or through the server"
        super().__init__(children=[widgets.HBox([self.text, self.button]), self.error, self.message,
                                   widgets.HTML(f"<b>Pending requests</b> <i>{html.escape(where)}</i>"),
                                   self.pending])
        self.refresh()

    def request(self):
        """Submit; returns the request as the server's JSON (with a link) or the local record (without)."""
        _show_error(self.error, "")
        record: dict | RequestRecord
        try:
            if self.server:
                record = self.server.launch(self.text.value)
                line, checks = _describe_json(record), record["spec"]["checks"]
            else:
                from ..records import describe
                from ..specs import to_json

                # A launch command's result is the request it recorded.
                launched = cast(RequestRecord, run(parse_command("launch " + self.text.value,
                                                                 self.context.catalog.gpus),
                                                   self.context, actor=chosen_name()))
                line, checks = describe(launched), to_json(launched.spec)["checks"]
                record = launched
        except GpuAssistError as error:
            _show_error(self.error, str(error))
            return None
        self.message.value = html.escape(line) + "<br>" + \
            html.escape(f"dry run: {checks['dry_run']}; quota: {checks['quota']}")
        self.refresh()
        return record

    def decide(self, request_id: str, approve: bool):
        """Approve or reject through the server's route; without a server link there is nothing to decide with."""
        _show_error(self.error, "")
        if self.server is None:
            _show_error(self.error, "decisions need the Jupyter server (or Slack): this kernel has no server link")
            return None
        try:
            record = self.server.decide(request_id, approve)
        except GpuAssistError as error:
            _show_error(self.error, str(error))
            return None
        self.message.value = html.escape(_describe_json(record))
        self.refresh()
        return record

    def refresh(self) -> None:
        from ..records import describe

        rows = []
        if self.server is None:
            for record in self.context.approvals.store.list(states=("pending",)):
                rows.append(widgets.HBox([widgets.Label(describe(record))]))
        else:
            try:
                pending = [r for r in self.server.requests() if r["state"] == "pending"]
            except GpuAssistError as error:
                _show_error(self.error, str(error))
                pending = []
            for record in pending:
                approve = widgets.Button(description="Approve", button_style="success")
                reject = widgets.Button(description="Reject", button_style="danger")
                approve.on_click(lambda _, rid=record["id"]: self.decide(rid, True))
                reject.on_click(lambda _, rid=record["id"]: self.decide(rid, False))
                rows.append(widgets.HBox([widgets.Label(_describe_json(record)), approve, reject]))
        self.pending.children = rows


def _describe_json(record: dict) -> str:
    """A request as the server's JSON gives it, in one line like `records.describe`."""
    spec = record.get("spec", {})
    if record.get("kind") == "launch":
        what = (f"{spec.get('instances')}x{spec.get('instance_type')} ({spec.get('gpus')}x{spec.get('gpu')}) "
                f"{spec.get('pricing_model')} in {spec.get('region')}, est. {spec.get('estimated_total')} "
                f"{record.get('currency')}")
    else:
        what = "stop " + ", ".join(spec.get("instance_ids", []))
    return f"{record.get('id')} [{record.get('state')}] {what} — by {record.get('requester')}"


def assistant(context: Context | None = None) -> widgets.Tab:
    """All five panels as tabs, sharing one context (one catalog load, one store)."""
    context = context or Context()
    from .spend_panel import SpendPanel

    tab = widgets.Tab(children=[QuotePanel(context), RecommendPanel(context), UtilizationPanel(),
                                LaunchPanel(context), SpendPanel(context)])
    for index, title in enumerate(("Quote", "Recommend", "Utilization", "Launch", "Spend")):
        tab.set_title(index, title)
    return tab
