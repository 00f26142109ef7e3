"""ipywidgets panels over the shared command grammar: what the CLI and Slack say, as notebook widgets.

Inputs are widgets (GPU dropdown from gpus.csv, count, duration, pricing toggles, filters, currency); a click
builds the command object from their values with the grammar's own value parsers (free-text fields through the
grammar's words) and runs it through `gpu_assist.commands`. Results are a sortable
pandas table and a bar chart of total cost per option drawn in HTML: no image round-trip, no plotting
dependency, and it renders wherever the notebook's HTML does (JupyterLab, VS Code, nbconvert). Errors go to a
visible error line, never a traceback.
"""

# mypy: disallow-subclassing-any=False
# (ipywidgets has no type information: the panels subclass its widgets all the same)

from __future__ import annotations

import html
from collections.abc import Hashable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Callable

import ipywidgets as widgets
from IPython.display import HTML, display

from ..catalog.providers import PROVIDERS
from ..commands import Command, Context, QuoteCommand, RecommendCommand, Result
from ..commands.execute import run
from ..commands.quote_grammar import words_of
from ..errors import GpuAssistError
from ..lifecycle.identity import chosen_name
from ..plan.workload import EXAMPLE, METHODS, PRECISIONS, workload_of
from ..pricing.amounts import parse_count
from ..pricing.compare import COLUMNS, Comparison
from ..pricing.query import HOUR_S, PRICING_MODELS, Query
from ..pricing.query_parser import (
    NO_DURATION,
    accepted_gpus,
    normalise,
    parse_currency,
    parse_duration,
    parse_pricing_models,
    parse_providers,
    parse_regions,
)
from ..pricing.quote import Quote
from ..render import operations as _operations  # noqa: F401 - register their texts
from ..render import plans as _plans  # noqa: F401 - register their texts
from ..render.frames import comparison_frame, quote_frame
from ..render.money import format_money
from ..render.notes import said, words
from ..render.text import render

if TYPE_CHECKING:
    from ..plan.recommendation import Recommendation

# IPython's display functions carry no annotations: their types as the panels call them.
show_object: Callable[[object], None] = display
_html_object: Callable[[str], object] = HTML


def show_html(markup: str) -> None:
    """Show `markup` in the cell's output (the output area the caller has entered)."""
    show_object(_html_object(markup))


def _error_line() -> widgets.HTML:
    return widgets.HTML(value="", layout=widgets.Layout(min_height="1.5em"))


def _show_error(label: widgets.HTML, message: str) -> None:
    label.value = f'<span style="color:#c62828">⚠ {html.escape(message)}</span>' if message else ""


def cost_bars(labels: list[str], totals: list[float], currency: str, unit: str = "") -> str:
    """A horizontal bar chart as HTML: one bar per option, scaled to the most expensive shown; `unit` follows
    each figure (`/h` for hourly rates)."""
    if not totals:
        return ""
    top = max(totals) or 1.0
    rows = []
    for label, total in zip(labels, totals, strict=True):
        width = max(1.0, 100.0 * total / top)
        rows.append(f'<div style="display:flex;align-items:center;gap:6px;font-size:12px">'
                    f'<span style="width:16em;overflow:hidden;white-space:nowrap">{html.escape(label)}</span>'
                    f'<span style="background:#1976d2;height:10px;width:{width:.1f}%"></span>'
                    f'<span>{html.escape(format_money(Decimal(str(total)), currency) + unit)}</span></div>')
    return '<div class="gpu-assist-bars">' + "".join(rows) + "</div>"


class _Panel(widgets.VBox):
    """A form, a Run button, an error line and an output area; subclasses say which command to build."""

    def __init__(self, context: Context | None, children: list[Any], button: str):
        self.context = context or Context()
        self.error = _error_line()
        self.button = widgets.Button(description=button, button_style="primary")
        self.output = widgets.Output()
        self.result: Result | None = None
        self.button.on_click(lambda _: self.run())
        super().__init__(children=[*children, self.button, self.error, self.output])

    def command(self) -> Command:
        """The command the form's values ask for; ParseError for a value the grammar refuses."""
        raise NotImplementedError

    def run(self) -> Result | None:
        """Run the command; the result is also kept in `.result` for code that wants the data."""
        _show_error(self.error, "")
        try:
            self.result = run(self.command(), self.context, actor=chosen_name())
        except GpuAssistError as error:
            _show_error(self.error, str(error))
            self.result = None
            return None
        self.output.clear_output()
        with self.output:
            self.show(self.result)
        return self.result

    def show(self, result: Any) -> None:
        show_html(f"<pre>{html.escape(render(result))}</pre>")


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
        self.table: Any = None  # the DataFrame last shown
        self.chart = ""
        super().__init__(context, [widgets.HBox([self.gpu, self.count, self.duration]), self.pricing,
                                   widgets.HBox([self.providers, widgets.VBox([self.region, self.currency,
                                                                               self.top])])], "Quote")

    def command(self) -> QuoteCommand:
        """The widgets' values, each through the grammar's parser for it (a blank duration is one hour, said so)."""
        duration = self.duration.value.strip()
        region = self.region.value.strip()
        gpu, variants = accepted_gpus(self.context.catalog.gpus, self.gpu.value)
        request = Query(
            gpu=gpu, variants=variants, count=self.count.value,
            duration_s=parse_duration(duration) if duration else HOUR_S,
            assumptions=() if duration else (NO_DURATION,),
        ).narrowed(
            pricing_models=parse_pricing_models(self.pricing.value) if self.pricing.value != "all" else (),
            providers=parse_providers(",".join(self.providers.value)) if self.providers.value else (),
            regions=parse_regions(region) if region else (),
            currency=parse_currency(self.currency.value))
        return QuoteCommand(request=request, top=self.top.value)

    def show(self, result: Quote | Comparison) -> None:
        if isinstance(result, Comparison):
            self.show_comparison(result)
            return
        frame = quote_frame(result)
        if frame.empty:
            show_html(f"<i>No option matches:</i> {html.escape(frame.attrs['empty_reason'] or 'try fewer filters')}"
                      + "".join(f"<br>{html.escape(n)}" for n in frame.attrs["notices"]))
            return
        shown = frame[["provider", "region", "zone", "instance_type", "instances", "pricing_model", "hourly",
                       "total", "per_gpu_hour", "verified"]].copy()
        for column in ("hourly", "total", "per_gpu_hour"):
            shown[column] = shown[column].astype(float).round(4)
        self.table = shown
        labels = [f"{o.provider} {o.instance_type} {o.pricing_model}" for o in result.options]
        show_html(cost_bars(labels, [float(o.total) for o in result.options], result.currency))
        show_object(shown.style.format({"hourly": "{:,.4f}", "total": "{:,.2f}", "per_gpu_hour": "{:,.4f}"})
                .set_table_attributes('class="gpu-assist-quote"'))
        if result.notices:
            show_html("<br>".join(html.escape(n) for n in said(result.notices)))

    def show_comparison(self, result: Comparison) -> None:
        """The comparison's columns as a styled DataFrame (each row's cheapest model highlighted) and a bar
        chart of the cheapest ranked total per provider."""
        frame = comparison_frame(result)
        self.table = frame
        if frame.empty:
            reason = words(result.quote.empty_reason) if result.quote.empty_reason else "try fewer filters"
            show_html(f"<i>No option matches:</i> {html.escape(reason)}"
                      + "".join(f"<br>{html.escape(n)}" for n in said(result.notices)))
            return
        ranked = frame[frame.ranked]
        best = ranked.assign(best_total=ranked[list(COLUMNS)].min(axis=1)).groupby("provider", sort=False)[
            "best_total"].min()
        self.chart = cost_bars(list(best.index), [float(v) for v in best], result.currency)
        show_html(self.chart)
        models: list[Hashable] = [str(m) for m in COLUMNS if frame[str(m)].notna().any()]
        shown = frame[["provider", "instance_type", "instances", "where", *models, "verified", "notes"]]
        money: dict[Any, str | Callable[[object], str] | None] = {
            m: (lambda v: "" if v != v else format_money(Decimal(str(v)), result.currency)) for m in models}
        show_object(shown.style.format(money).highlight_min(subset=models, axis=1, props="font-weight:bold;"
                                                         "background-color:#c8e6c9")
                .set_table_attributes('class="gpu-assist-quote"'))
        if len(frame) > len(ranked):
            show_html("<i>Rows with verified=False (unverified, stale or derived prices) are not ranked.</i>")
        if result.notices:
            show_html("<br>".join(html.escape(n) for n in said(result.notices)))


class RecommendPanel(_Panel):
    def __init__(self, context: Context | None = None):
        self.kind = widgets.ToggleButtons(options=["train", "finetune", "serve"], value="train", description="kind")
        self.size = widgets.Text(value="7B", description="model")
        self.precision = widgets.Dropdown(options=list(PRECISIONS), value="bf16", description="precision")
        self.method = widgets.Dropdown(options=list(METHODS), value="full", description="method")
        self.options = widgets.Text(value="tokens=20B deadline=72h", description="options",
                                    placeholder="tokens=20B deadline=72h budget=5000 users=50 region=cn")
        self.top = widgets.BoundedIntText(value=10, min=1, max=1000, description="top")
        super().__init__(context, [self.kind, widgets.HBox([self.size, self.precision, self.method]),
                                   widgets.HBox([self.options, self.top])], "Recommend")

    def command(self) -> RecommendCommand:
        """The chosen kind, precision and method as they are, the size read as a count (`7B`), and the options'
        words read by the workload's grammar (a method applies to fine-tuning alone, so another kind drops it)."""
        method = self.method.value if self.kind.value == "finetune" else "full"
        workload = workload_of(self.kind.value, parse_count(normalise(self.size.value), "model size", EXAMPLE),
                               self.context.catalog.gpus, precision=self.precision.value, method=method,
                               words=words_of(self.options.value))
        return RecommendCommand(workload=workload, top=self.top.value)

    def show(self, result: Recommendation) -> None:
        plans = result.plans
        labels = [f"{p.gpu_count}x{p.gpu} {p.provider} {p.strategy}" for p in plans]
        # Totals for the job when every plan has one; hourly rates when the job's length is unknown.
        timed = all(p.total is not None for p in plans)
        figures = [float(p.total if timed and p.total is not None else p.hourly) for p in plans]
        show_html(cost_bars(labels, figures, result.currency, "" if timed else "/h"))
        show_html(f"<pre>{html.escape(render(result))}</pre>")
