"""Notebook panels without a browser: build, set widget values, click, read the result and the error line."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from fake_nvml import FakeNvml, eight_gpus
from support import TODAY

from gpu_assist.commands import Context
from gpu_assist.commands.grammar import parse_command
from gpu_assist.facts import NoPrices
from gpu_assist.host.nvml import NvmlSampler
from gpu_assist.jupyter import QuotePanel, RecommendPanel, UtilizationPanel
from gpu_assist.jupyter.panels import cost_bars
from gpu_assist.jupyter.utilization_panel import sparkline
from gpu_assist.pricing.compare import compare, refine
from gpu_assist.pricing.query_parser import parse_request
from gpu_assist.pricing.quote import quote
from gpu_assist.render.notes import words

pytestmark = pytest.mark.clock  # the panels quote on today's date and date their GPU samples


@pytest.fixture
def context(catalog):
    return Context(catalog_loader=lambda: catalog, today=lambda: TODAY, currency="USD")


def test_quote_panel_gives_the_cores_numbers(context, catalog):
    panel = QuotePanel(context)
    panel.gpu.value, panel.count.value, panel.duration.value, panel.top.value = "A100", 8, "72h", 5
    panel.button.click()
    assert panel.error.value == ""
    core = compare(refine(quote(parse_request("8xA100 72h", catalog.gpus), catalog, today=TODAY)), top=5)
    assert panel.result.rows == core.rows
    ranked = panel.table[panel.table.ranked]
    assert list(ranked.instance_type) == [r.instance_type for r in core.rows]
    assert ranked["on-demand"].tolist()[:1] == [float(core.rows[0].cell("on-demand").total)]
    # the same columns as the text view: one per pricing model, the unverified rows flagged, not ranked
    assert {"on-demand", "spot", "reserved-1y", "reserved-3y", "where", "notes"} <= set(panel.table.columns)
    assert not panel.table[~panel.table.ranked].verified.any()


def test_quote_panel_charts_the_cheapest_total_per_provider(context):
    panel = QuotePanel(context)
    panel.run()
    bars = panel.chart.split("</div>")
    assert "gpu-assist-bars" in panel.chart and len(bars) > 4
    assert [p for p in ("aws", "azure", "gcp", "lambda") if p in panel.chart] == ["aws", "azure", "gcp", "lambda"]
    assert "tencent" not in panel.chart  # unverified rows are not ranked, nor charted


def test_quote_panel_filters_become_the_grammars_words(context):
    panel = QuotePanel(context)
    panel.pricing.value, panel.providers.value, panel.region.value = "spot", ("aws", "gcp"), "us-east-1, eu"
    words = parse_command("quote 8xA100 72h pricing=spot provider=aws,gcp region=us-east-1,eu currency=USD top=10",
                          context.catalog.gpus)
    assert panel.command() == words  # the widgets' values give the command their words would
    panel.button.click()
    assert {r.provider for r in panel.result.rows} <= {"aws", "gcp"}
    assert {m for r in panel.result.rows for m, _ in r.cells} == {"spot"}


def test_an_empty_quote_shows_its_reason(context):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()  # what a notebook kernel provides: display() publishes rich output
    panel = QuotePanel(context)
    panel.gpu.value, panel.count.value, panel.duration.value, panel.pricing.value = "H100", 8, "1mo", "monthly"
    with capture_output() as shown:
        panel.button.click()
    reason = words(panel.result.quote.empty_reason)
    assert panel.result.rows == () and isinstance(panel.result.quote.empty_reason, NoPrices)
    assert reason.startswith("no monthly prices for H100")
    assert shown.outputs[0].data["text/html"] == f"<i>No option matches:</i> {reason}"
    import gpu_assist

    assert gpu_assist.quote("8xH100 1mo monthly").attrs["empty_reason"].startswith("no monthly prices for H100")


def test_the_python_api_gives_money_as_numbers_pandas_computes_with():
    import gpu_assist

    options = gpu_assist.quote("8xA100 72h", list=True)
    assert all(options[c].dtype == "float64" for c in ("hourly", "total", "billed_hours", "per_gpu_hour"))
    assert options.savings_vs_on_demand.isna().any() and options.total.min() > 0  # None became NaN
    compared = gpu_assist.quote("8xA100 72h")
    assert all(compared[c].dtype == "float64" for c in ("on-demand", "spot", "reserved-1y", "total", "hourly"))
    assert compared["reserved-1y"].isna().any()  # not sold so: NaN
    plans = gpu_assist.recommend("train 7B tokens=20B")
    assert plans.total.dtype == "float64" and plans.hourly.dtype == "float64"
    assert plans.within_budget.dtype == object  # not money: left as it is


def test_the_python_api_can_be_called_again_after_its_modules_are_imported():
    """A submodule named like an API function would replace it on the package when first imported (the second
    `gpu_assist.recommend(…)` in a notebook found a module): no module bears an API function's name."""
    import importlib
    import pkgutil

    import gpu_assist

    modules = {m.name for m in pkgutil.iter_modules(gpu_assist.__path__)}
    assert not modules & set(gpu_assist.__all__)
    for name in modules - {"__main__"}:  # which would run the CLI
        importlib.import_module(f"gpu_assist.{name}")
    assert len(gpu_assist.recommend("train 7B tokens=20B")) == len(gpu_assist.recommend("train 7B tokens=20B"))
    assert callable(gpu_assist.utilization) and callable(gpu_assist.quote) and callable(gpu_assist.spend)
    assert callable(gpu_assist.commit)


def test_no_jupyter_module_bears_a_panels_name():
    """`from gpu_assist.jupyter import assistant` once bound the submodule `assistant.py`, not the function: the
    package's lazy `__getattr__` imported it, and the import system set the module as the package's attribute."""
    import pkgutil

    import gpu_assist.jupyter as jupyter

    assert not {m.name for m in pkgutil.iter_modules(jupyter.__path__)} & set(jupyter.__all__)


@pytest.mark.slow  # a fresh interpreter, as a notebook kernel starts
def test_the_readmes_jupyter_lines_run_in_a_fresh_interpreter(tmp_path):
    """The README's and the quickstart's lines, as a new user pastes them into a kernel."""
    lines = ("from gpu_assist.jupyter import assistant\n"
             "tabs = assistant()\n"
             "print(type(tabs).__name__, len(tabs.children))\n")
    done = subprocess.run([sys.executable, "-c", lines], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "GPU_ASSIST_DB_URL": f"sqlite:///{tmp_path}/state.db"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Tab 5\n"


def test_bad_input_shows_an_error_line_not_a_traceback(context):
    panel = QuotePanel(context)
    panel.duration.value = "banana"
    panel.button.click()
    assert "&#x27;banana&#x27; is not a duration" in panel.error.value and panel.result is None
    panel.duration.value = "3 days"
    panel.button.click()
    assert panel.error.value == "" and panel.result.request.duration_s == 3 * 86400
    recommend = RecommendPanel(context)
    recommend.size.value = "lots"
    recommend.button.click()
    assert "⚠" in recommend.error.value


def test_recommend_panel(context):
    panel = RecommendPanel(context)
    panel.kind.value, panel.size.value, panel.options.value = "train", "7B", "tokens=20B deadline=72h"
    panel.button.click()
    assert panel.error.value == "" and panel.result.plans
    assert all(p.meets_deadline for p in panel.result.plans)
    panel.options.value = ""  # no job length: the bars show hourly rates (there is no total to draw)
    panel.run()  # not through the button, whose dispatcher would swallow an exception
    assert panel.error.value == "" and panel.result.plans and all(p.total is None for p in panel.result.plans)


def test_recommend_panel_builds_the_workload_the_widgets_say(context):
    """The widgets' values go into the command as they are (no text joined and read again): the same command the
    grammar gives for the same words, a method only for fine-tuning, and a bad value named on the error line."""
    panel = RecommendPanel(context)
    panel.kind.value, panel.size.value, panel.precision.value = "finetune", "70B", "fp16"
    panel.method.value, panel.options.value, panel.top.value = "lora", "deadline=72h region=cn", 3
    said = parse_command("recommend finetune 70B fp16 lora deadline=72h region=cn top=3", context.catalog.gpus)
    assert panel.command() == said
    panel.kind.value = "train"  # the method stays on the form, but applies to fine-tuning alone
    assert panel.command().workload.method == "full"
    panel.size.value, panel.options.value = "7B", "tokens=lots"
    panel.button.click()
    assert "tokens" in panel.error.value and panel.result is None
    panel.size.value, panel.options.value = "10K", ""
    panel.button.click()
    assert "out of range" in panel.error.value


def test_utilization_panel_shows_live_gpus_and_stops():
    panel = UtilizationPanel(NvmlSampler(FakeNvml(eight_gpus())), interval_s=0.02)
    deadline = time.monotonic() + 5
    while len(panel.bars.children) < 8 and time.monotonic() < deadline:
        time.sleep(0.02)
    panel.stop()
    assert len(panel.bars.children) == 8
    gpu3 = panel.bars.children[3].children
    assert gpu3[1].value == 30 and "GPU 3" in gpu3[0].value
    assert "pid 1003 python" in panel.processes.value
    assert not panel._thread.is_alive()
    assert "idle" not in panel.status.value  # every GPU runs a process


def test_utilization_panel_calls_out_a_gpu_idle_through_its_window():
    gpus = eight_gpus()
    gpus[0].processes = []
    panel = UtilizationPanel(NvmlSampler(FakeNvml(gpus)), interval_s=0.02)
    deadline = time.monotonic() + 5
    while "idle" not in panel.status.value and time.monotonic() < deadline:
        time.sleep(0.02)
    panel.stop()
    assert "<b>idle</b> for the last" in panel.status.value and "GPU 0 (below 10% use, no process)" in \
        panel.status.value


def test_utilization_panel_without_a_gpu_says_so():
    panel = UtilizationPanel(NvmlSampler(FakeNvml([], init_error=9)), interval_s=0.02)
    deadline = time.monotonic() + 5
    while "No GPUs" not in panel.status.value and time.monotonic() < deadline:
        time.sleep(0.02)
    panel.stop()
    assert "No GPUs here:" in panel.status.value and "Driver Not Loaded" in panel.status.value


def test_chart_and_sparkline_helpers():
    bars = cost_bars(["a", "b"], [100.0, 50.0], "USD")
    assert "width:100.0%" in bars and "width:50.0%" in bars and "$50.00" in bars
    assert "$1.50/h" in cost_bars(["a"], [1.5], "USD", "/h")
    assert sparkline([0, 50, 100, None]) == "▁▅█ "
