"""The GPU Assistant sidebar's tabs in a real JupyterLab 4 in Debian's headless Chromium (Playwright), as two
Jupyter users of one server (tests/jupyter_users.py names them by token; the browser then holds Jupyter's login
cookie and sends its XSRF token, as any browser does). The server's gpu-assist routes run on the bundled catalogs,
a pinned clock, scripted GPUs and a store whose launches moto carries out over HTTP (tests/e2e/lab_pinned.py).

Each test writes its screenshots under its temporary directory (their paths are attached to a failure's report);
`make screenshots` also copies them into docs/screenshots (GPU_ASSIST_SCREENSHOTS)."""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import boto3
import pytest
from jupyter_users import TOKENS
from support import AWS_SECRET, NOON, free_port

from gpu_assist.catalog.providers import PROVIDERS
from gpu_assist.clouds.sdk.aws import REQUEST_TAG
from gpu_assist.clouds.fleet import NAMESPACE, UTILIZATION
from gpu_assist.commands import Context
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.render import csv as render_csv

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run"]
HERE = Path(__file__).parent
SCREENSHOTS = "GPU_ASSIST_SCREENSHOTS"  # `make screenshots`: where the docs' copies go
NARROW, WIDE = 250, 760  # the sidebar's width in pixels: JupyterLab's default column, and dragged wide
WAIT_MS = 60_000
THEMES = "@jupyterlab/apputils-extension:themes"
_WORKSPACES = itertools.count()


@pytest.fixture(scope="module")
def lab(tmp_path_factory, moto_server):
    """A started JupyterLab (its URL) with gpu_assist.jupyter pinned by lab_pinned, bob its one approver, a team
    budget of $20,000 a month, and AWS the moto server (reset first)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (`make test` installs it)")
    urllib.request.urlopen(urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST"), timeout=10)
    root = tmp_path_factory.mktemp("lab")
    settings = root / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}', encoding="utf-8")
    (root / "policy.toml").write_text('[policy.budgets]\nmonthly = { "*" = 20000 }\n', encoding="utf-8")
    port = free_port()
    tests = str(HERE.parent)
    env = {**os.environ, "GPU_ASSIST_DB_URL": f"sqlite:///{root / 'state.db'}", "GPU_ASSIST_APPROVERS": "jupyter:bob",
           "GPU_ASSIST_AMI_ID": "ami-12c6146b", "GPU_ASSIST_CONFIG": str(root / "policy.toml"),
           "AWS_ENDPOINT_URL": moto_server, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
           "AWS_REGION": "us-east-1", "JUPYTER_CONFIG_DIR": str(root / "cfg"),
           "JUPYTER_RUNTIME_DIR": str(root / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(root / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(root / "workspaces"),
           "PYTHONPATH": os.pathsep.join(filter(None, [tests, str(HERE), os.environ.get("PYTHONPATH")]))}
    env.pop("AWS_PROFILE", None)
    log = open(root / "lab.log", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--ServerApp.root_dir={root}", "--ServerApp.allow_root=True", "--LabApp.news_url=",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",  # else it asks pypi.org
         "--LabApp.collaborative=False", "--ServerApp.identity_provider_class=jupyter_users.TokenUsers",
         "--ServerApp.jpserver_extensions=lab_pinned=True"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            _api(base, "carol", "gpu-assist/api/requests")
            break
        except (OSError, ValueError):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError((root / "lab.log").read_text()) from None
            time.sleep(0.5)
    yield base
    process.terminate()  # JupyterLab stops its kernels first: the notebook cell test starts one
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
    log.close()


def _api(base: str, user: str, path: str, body: dict | None = None, method: str | None = None) -> object:
    """A route's JSON as `user` asks it with their API token (as a script would)."""
    (token,) = [t for t, name in TOKENS.items() if name == user]
    request = urllib.request.Request(f"{base}/{path}", data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {token}"}, method=method)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"null")


@pytest.fixture(scope="module")
def aws_clients(lab, moto_server):
    def make(service: str):
        return boto3.client(service, endpoint_url=moto_server, region_name="us-east-1", aws_access_key_id="testing",
                            aws_secret_access_key=AWS_SECRET)
    return make


@pytest.fixture
def chromium():
    """Chromium for one test (Playwright's sync API runs its own event loop, which must be gone before
    pytest-jupyter's fixtures tear down)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def shots(request, tmp_path):
    """`shots(locator_or_page, name)`: a PNG under this test's temporary directory (listed in the report when the
    test fails), and in $GPU_ASSIST_SCREENSHOTS too when `make screenshots` sets it."""
    taken: list[str] = []
    request.node.gpu_assist_screenshots = taken

    def take(target, name: str) -> Path:
        path = tmp_path / f"{name}.png"
        target.screenshot(path=str(path))
        taken.append(str(path))
        if os.environ.get(SCREENSHOTS):
            shutil.copy(path, Path(os.environ[SCREENSHOTS]) / path.name)
        return path
    return take


@contextlib.contextmanager
def sidebar(lab, chromium, shots, user: str, *, width: int = NARROW, dark: bool = False):
    """JupyterLab opened as `user` with the GPU Assistant sidebar shown at `width` pixels; yields (page, panel).
    The API token signs the user in once (Jupyter sets its login cookie); JupyterLab then runs on the cookie and
    the XSRF token, as in any browser."""
    (token,) = [t for t, name in TOKENS.items() if name == user]
    if dark:
        _set_theme(lab, user, "JupyterLab Dark")
    context = chromium.new_context(viewport={"width": 1280, "height": 860},
                                   extra_http_headers={"Authorization": f"token {token}"})
    try:
        page = context.new_page()
        page.goto(f"{lab}/api/me", timeout=WAIT_MS)
        context.set_extra_http_headers({})
        # A workspace of its own: JupyterLab restores a workspace's layout, and this test starts from the default.
        page.goto(f"{lab}/lab/workspaces/e2e-{next(_WORKSPACES)}", timeout=WAIT_MS)
        page.click("li[data-id='gpu-assist-panel']", timeout=WAIT_MS)
        panel = page.locator("#gpu-assist-panel")
        panel.wait_for(timeout=WAIT_MS)
        _drag_sidebar(page, panel, width)  # JupyterLab restores the last width it saved: set it each time
        yield page, panel
    except BaseException:
        shots(page, f"failed-as-{user}")  # the page as it was when the test failed, listed in the report
        raise
    finally:
        context.close()
        if dark:
            _set_theme(lab, user, "JupyterLab Light")


def _set_theme(lab: str, user: str, theme: str) -> None:
    _api(lab, user, f"lab/api/settings/{THEMES}", {"raw": json.dumps({"theme": theme})}, method="PUT")


def _drag_sidebar(page, panel, width: int) -> None:
    """Drag the sidebar's edge until the panel is `width` pixels wide (a drag while JupyterLab still lays the page
    out may not take: try again)."""
    for _ in range(5):
        page.wait_for_timeout(200)
        box = panel.bounding_box()
        if abs(box["width"] - width) < 6:
            return
        page.mouse.move(box["x"] + box["width"] + 2, box["y"] + 200)
        page.mouse.down()
        page.mouse.move(box["x"] + width, box["y"] + 200, steps=8)
        page.mouse.up()
    raise AssertionError(f"the sidebar is {panel.bounding_box()['width']} pixels wide, not {width}")


def _tab(panel, name: str):
    panel.get_by_role("tab", name=name).click()
    return panel.locator(f"#gpu-assist-{name.lower()}")


def _rows(tab) -> list[dict]:
    return tab.locator("tr.gpu-assist-option").evaluate_all("""rows => rows.map(row => ({
        rank: row.querySelector('.gpu-assist-rank').textContent, provider: row.dataset.provider,
        instance_type: row.dataset.instanceType, instances: Number(row.dataset.instances), where: row.dataset.where,
        best: row.dataset.best, verified: !row.classList.contains('gpu-assist-unverified'),
        totals: Object.fromEntries([...row.querySelectorAll('td[data-model]')].map(
            cell => [cell.dataset.model, cell.dataset.total === '' ? null : Number(cell.dataset.total)]))}))""")


def test_the_quote_tabs_rows_are_the_clis_comparison_for_8xa100_72h(lab, chromium, catalog, shots):
    pinned = Context(catalog_loader=lambda: catalog, today=lambda: NOON.date())
    cli = list(csv.DictReader(io.StringIO(render_csv.render(run(parse_command("quote 8xA100 72h", catalog.gpus),
                                                                     pinned)))))
    with sidebar(lab, chromium, shots, "carol") as (page, panel):
        quote = panel.locator("#gpu-assist-quote")
        quote.locator("tr.gpu-assist-option").first.wait_for(timeout=WAIT_MS)
        shown = _rows(quote)
        cheapest = quote.locator("tr.gpu-assist-cheapest")
        assert cheapest.count() == 1 and "cheapest" in cheapest.inner_text()
        marker = quote.locator("sup.gpu-assist-marker").first
        assert marker.get_attribute("title")  # a footnote is its marker's tooltip
        shots(panel, "quote-narrow")
        assert quote.locator("td[data-model]").first.is_hidden()  # narrow: the best total only

        providers = quote.get_by_label("Provider").locator("option")  # the server's registry, not a copy
        page.wait_for_function(f"""() => document.querySelectorAll(
            '#gpu-assist-quote select[name=provider] option').length === {len(PROVIDERS) + 1}""", timeout=WAIT_MS)
        offered = providers.evaluate_all("options => options.map(option => option.value)")
        quote.get_by_label("Pricing model").select_option("spot")
        page.wait_for_function("""() => {
            const rows = [...document.querySelectorAll('#gpu-assist-quote tr.gpu-assist-option')];
            return rows.length && rows.every(row => row.dataset.best === 'spot');
        }""", timeout=WAIT_MS)
        spot = _rows(quote)
        quote.get_by_role("button", name="Open this quote as a notebook cell").click()
        cell = page.locator(".jp-Notebook .jp-Cell .cm-content", has_text="gpu_assist.quote(").first
        cell.wait_for(timeout=WAIT_MS)
        code = [line for line in cell.locator(".cm-line").all_inner_texts() if line.strip()]
        assert code == ["import gpu_assist", 'gpu_assist.quote("8xA100 72h pricing=spot")']

    columns = ["on-demand", "spot", "reserved-1y", "reserved-3y"]
    assert [(r["provider"], r["instance_type"], r["instances"], r["where"], r["best"], r["verified"],
             r["rank"]) for r in shown] == [
        (c["provider"], c["instance_type"], int(c["instances"]), c["where"], c["best"], c["verified"] == "yes",
         c["rank"] or "–") for c in cli]
    assert [r["totals"] for r in shown] == [{m: float(c[m]) if c[m] else None for m in columns} for c in cli]
    assert len(shown) > 10 and {r["best"] for r in spot} == {"spot"}
    assert offered == ["", *PROVIDERS]


def test_a_quote_rows_request_launch_files_a_pending_request_as_the_user(lab, chromium, shots):
    """Request launch sits on each row of a cloud the team launches on (the policy's allowed providers: AWS
    here), and asks for the price that row ranks by (on-demand here) for the quote's duration, as Slack's card
    does: a pending request of the Jupyter user, which an approver decides."""
    with sidebar(lab, chromium, shots, "carol", width=WIDE) as (page, panel):
        quote = panel.locator("#gpu-assist-quote")
        quote.locator("tr.gpu-assist-option").first.wait_for(timeout=WAIT_MS)
        aws = quote.locator("tr.gpu-assist-option[data-provider='aws']").first
        others = quote.locator("tr.gpu-assist-option:not([data-provider='aws']) button.gpu-assist-launch").count()
        aws.locator("button.gpu-assist-launch").click()
        status = quote.locator(".gpu-assist-status", has_text="is pending")
        status.wait_for(timeout=WAIT_MS)
        said = status.inner_text()
        shots(panel, "quote-launch")
    asked = re.search(r"Launch of (aws:\S+ 72h) asked: (r-[0-9a-f]{12}) is pending", said)
    assert asked and others == 0, said
    detail = _api(lab, "bob", f"gpu-assist/api/requests?q={asked[2]}")
    assert (detail["state"], detail["requester"]) == ("pending", "jupyter:carol")
    assert detail["spec"]["instance_type"] == asked[1].split(":")[1]


def test_the_wide_sidebar_shows_every_pricing_model_side_by_side(lab, chromium, shots):
    with sidebar(lab, chromium, shots, "carol", width=WIDE) as (page, panel):
        quote = panel.locator("#gpu-assist-quote")
        quote.locator("tr.gpu-assist-option").first.wait_for(timeout=WAIT_MS)
        assert quote.locator("td[data-model]").first.is_visible()
        assert quote.locator("th", has_text="res. 3y").first.is_visible()
        assert quote.locator("td.gpu-assist-narrow").first.is_hidden()
        table = quote.locator("table.gpu-assist-compare").first.bounding_box()
        assert table["width"] <= panel.bounding_box()["width"]  # no sideways scrolling at this width
        shots(panel, "quote-wide")


def test_the_recommend_tab_plans_a_workload_with_its_reasoning_folded(lab, chromium, catalog, shots):
    pinned = Context(catalog_loader=lambda: catalog, today=lambda: NOON.date())
    core = run(parse_command("recommend finetune 7B tokens=2B deadline=48h top=5", catalog.gpus), pinned)
    with sidebar(lab, chromium, shots, "carol", width=WIDE) as (page, panel):
        panel.get_by_role("tab", name="Quote").focus()  # by keyboard: the tab bar takes the arrow keys
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Enter")
        tab = panel.locator("#gpu-assist-recommend")
        tab.get_by_label("model size").wait_for(timeout=WAIT_MS)
        tab.get_by_label("model size").focus()
        page.keyboard.press("Enter")  # submits the form
        plans = tab.locator("li.gpu-assist-plan")
        plans.first.wait_for(timeout=WAIT_MS)
        heads = plans.locator(".gpu-assist-plan-head .gpu-assist-provider").all_inner_texts()
        reasoning = tab.locator("details", has_text="Reasoning")
        assert reasoning.get_attribute("open") is None  # folded until asked
        plans.first.locator("summary", has_text="Why").click()
        assert plans.first.locator("details li").first.is_visible()
        shots(panel, "recommend")
    assert heads == [f"{p.gpu_count}× {p.gpu}" for p in core.plans]


def test_the_spend_tab_shows_the_month_by_project_and_requester_with_the_budget(lab, chromium, shots):
    report = _api(lab, "bob", "gpu-assist/api/spend")
    with sidebar(lab, chromium, shots, "bob", width=WIDE) as (page, panel):
        tab = _tab(panel, "Spend")
        tab.locator("table[aria-label='spend by project']").wait_for(timeout=WAIT_MS)
        projects = dict(tab.locator("table[aria-label='spend by project'] tbody tr").evaluate_all(
            "rows => rows.map(r => [r.cells[0].textContent, r.cells[1].textContent])"))
        requesters = tab.locator("table[aria-label='spend by requester'] tbody td:first-child").all_inner_texts()
        bars = tab.locator("rect.gpu-assist-chart-bar").count()
        budget_line = tab.locator("line.gpu-assist-chart-budget").count()
        budget = tab.locator(".gpu-assist-budget").first.inner_text()
        shots(panel, "spend")
    assert set(projects) == {"vision", "nlp"} and report["total"] > 0
    assert projects["vision"] == f"${report['groups']['project']['vision']:,.2f}"
    assert sorted(requesters) == ["jupyter:alice", "jupyter:carol"]
    assert bars == len(report["daily"]) == 2 and budget_line == 1
    assert budget == report["budgets"][0]["line"]


def _report_use(cloudwatch, instance_id: str, percent: float) -> None:
    dimensions = [{"Name": "InstanceId", "Value": instance_id}, {"Name": "index", "Value": "0"}]
    cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=[
        {"MetricName": UTILIZATION, "Dimensions": dimensions, "Value": percent, "Unit": "Percent",
         "Timestamp": NOON - dt.timedelta(minutes=minute)} for minute in range(30)])


def test_the_gpus_tab_shows_this_servers_gpus_and_the_fleets_idle_instance(lab, chromium, aws_clients, shots):
    launches = {r["spec"]["project"]: r for r in _api(lab, "bob", "gpu-assist/api/requests")
                if r["kind"] == "launch" and r["state"] == "running"}
    idle, busy = launches["vision"]["instance_ids"][0], launches["nlp"]["instance_ids"][0]
    _report_use(aws_clients("cloudwatch"), idle, 3.0)
    _report_use(aws_clients("cloudwatch"), busy, 85.0)
    with sidebar(lab, chromium, shots, "carol", width=WIDE) as (page, panel):
        tab = _tab(panel, "GPUs")
        tab.locator(".gpu-assist-idle").wait_for(timeout=WAIT_MS)  # a minute of samples: the idle call-out
        page.wait_for_function("""() => document.querySelector('#gpu-assist-gpus polyline')
            .getAttribute('points').split(' ').length >= 5""", timeout=WAIT_MS)
        gpus = tab.locator(".gpu-assist-gpu")
        callouts = [gpus.nth(i).locator(".gpu-assist-idle").count() for i in range(gpus.count())]
        points = gpus.first.locator("polyline").get_attribute("points").split()
        fleet = tab.locator(f"li[data-id='{idle}']")
        fleet.wait_for(timeout=WAIT_MS)
        badges = {i: tab.locator(f"li[data-id='{i}'] .gpu-assist-badge").inner_text() for i in (idle, busy)}
        shots(panel, "gpus")
        fleet.get_by_role("button", name=f"Request a stop of {idle}").click()
        asked = tab.locator(".gpu-assist-status", has_text="Stop of").inner_text(timeout=WAIT_MS)
    assert callouts == [0, 1] and len(points) >= 5
    assert badges == {idle: "idle", busy: "85%"}
    (stop,) = [r for r in _api(lab, "bob", "gpu-assist/api/requests") if r["kind"] == "stop"]
    assert stop["id"] in asked and (stop["requester"], stop["state"], stop["instance_ids"]) == (
        "jupyter:carol", "pending", [idle])
    _api(lab, "bob", f"gpu-assist/api/requests/{stop['id']}/reject", {})  # the later tests' lists start clean


def test_an_approver_approves_in_jupyterlab_and_the_instance_runs_in_aws(lab, chromium, aws_clients, shots):
    record = _api(lab, "carol", "gpu-assist/api/launch", {"q": "8xA100 24h region=us-east-1 project=vision"})
    with sidebar(lab, chromium, shots, "bob", width=WIDE) as (page, panel):
        tab = _tab(panel, "Requests")
        card = tab.locator(f"li[data-id='{record['id']}']")
        approve = card.get_by_role("button", name=f"Approve {record['id']}")
        approve.wait_for(timeout=WAIT_MS)
        budget = card.locator(".gpu-assist-budget").inner_text()
        shots(panel, "requests")
        approve.click()
        tab.locator(f"ul[aria-label='Running requests'] li[data-id='{record['id']}']").wait_for(timeout=WAIT_MS)
    assert budget.startswith("budget team $20,000.00/month: $")
    reservations = aws_clients("ec2").describe_instances(Filters=[
        {"Name": f"tag:{REQUEST_TAG}", "Values": [record["id"]]}])["Reservations"]
    instances = [i for r in reservations for i in r["Instances"]]
    assert instances and {i["State"]["Name"] for i in instances} == {"running"}
    detail = _api(lab, "bob", f"gpu-assist/api/requests?q={record['id']}")
    assert (detail["state"], detail["approver"]) == ("running", "jupyter:bob")


def test_the_requester_sees_no_approve_button_and_a_forged_post_is_refused(lab, chromium, shots):
    record = _api(lab, "carol", "gpu-assist/api/launch", {"q": "8xA100 24h region=us-east-1 project=vision"})
    approve = f"{lab}/gpu-assist/api/requests/{record['id']}/approve"
    with sidebar(lab, chromium, shots, "carol") as (page, panel):
        tab = _tab(panel, "Requests")
        card = tab.locator(f"li[data-id='{record['id']}']")
        card.wait_for(timeout=WAIT_MS)
        buttons = card.get_by_role("button").count()
        why = card.locator(".gpu-assist-note", has_text="you cannot decide it").inner_text()
        shots(panel, "requests-requester")
        # A POST the sidebar would never send: with the login cookie but no XSRF token (what a cross-site form
        # sends), and one with it, as carol's own session could send, for her own request.
        forged = page.evaluate("""url => fetch(url, {method: 'POST', body: '{}'}).then(r => r.status)""", approve)
        own = page.evaluate("""url => {
            const xsrf = document.cookie.split('; ').find(c => c.startsWith('_xsrf=')).slice(6);
            return fetch(url, {method: 'POST', body: '{}', headers: {'X-XSRFToken': decodeURIComponent(xsrf)}})
                .then(async r => [r.status, await r.json()]);
        }""", approve)
    assert buttons == 0 and why.endswith("requesters cannot approve or reject their own request")
    assert forged == 403
    assert own[0] == 403 and own[1]["error"].startswith("requesters cannot approve or reject their own request")
    detail = _api(lab, "bob", f"gpu-assist/api/requests?q={record['id']}")
    assert detail["state"] == "pending" and [e["action"] for e in detail["audit"]][0] == "submit"


def test_the_dark_theme_renders_the_sidebar_in_its_colours(lab, chromium, shots):
    with sidebar(lab, chromium, shots, "carol", width=WIDE, dark=True) as (page, panel):
        quote = panel.locator("#gpu-assist-quote")
        quote.locator("tr.gpu-assist-option").first.wait_for(timeout=WAIT_MS)
        light = page.locator("body").get_attribute("data-jp-theme-light")
        colours = quote.evaluate("""node => {
            const style = getComputedStyle(node), row = getComputedStyle(node.querySelector('td.gpu-assist-offer'));
            const input = getComputedStyle(node.querySelector('input'));
            return [style.backgroundColor, row.color, input.backgroundColor, input.color];
        }""")
        shots(panel, "quote-dark")
    background, text, field, typed = (_luminance(c) for c in colours)
    assert light == "false" and background < 0.2 < 0.6 < text, colours
    assert field < 0.2 < 0.6 < typed, colours  # the inputs too: no light box in a dark sidebar


def _luminance(colour: str) -> float:
    """rgb(r, g, b) → relative luminance, 0 (black) to 1 (white)."""
    red, green, blue = (int(part) / 255 for part in colour[colour.index("(") + 1:colour.index(")")].split(",")[:3])
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue
