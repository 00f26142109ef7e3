"""JupyterLab in Debian's headless Chromium (Playwright): open the GPU Assistant sidebar, quote, compare."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gpu_assist.pricing import quote
from gpu_assist.render.money import format_money
from gpu_assist.request import parse_request
from support import TODAY, free_port

ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "gpu-assist-e2e-token"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (`make test` installs it)")
    root = tmp_path_factory.mktemp("lab")
    port = free_port()
    env = {**os.environ, "GPU_ASSIST_DB_URL": f"sqlite:///{root / 'state.db'}", "JUPYTER_CONFIG_DIR": str(root / "cfg"),
           "JUPYTER_RUNTIME_DIR": str(root / "runtime")}
    log = open(root / "lab.log", "w")
    process = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
                                f"--port={port}", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
                                "--ServerApp.allow_root=True", "--LabApp.news_url=", "--LabApp.collaborative=False"],
                               env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2):
                break
        except OSError:
            if process.poll() is not None:
                raise RuntimeError((root / "lab.log").read_text()) from None
            time.sleep(0.5)
    yield base
    process.terminate()
    process.wait(timeout=20)
    log.close()


def test_sidebar_quote_matches_the_core(lab, catalog, tmp_path):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        # A fresh user-data-dir per run: a persistent context over an empty profile directory.
        browser = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True,
            viewport={"width": 1400, "height": 900}, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--no-first-run"])
        try:
            page = browser.new_page()
            page.goto(f"{lab}/lab?token={TOKEN}", timeout=90_000)
            page.wait_for_selector(".jp-SideBar", timeout=90_000)
            page.click("li[data-id='gpu-assist-panel']", timeout=60_000)
            panel = page.locator("#gpu-assist-panel")
            panel.locator("input").fill("8xA100 72h")
            panel.locator("button[type=submit]").click()
            first = panel.locator("tr.gpu-assist-option").first
            first.wait_for(timeout=60_000)
            shown = {name: first.locator(f".gpu-assist-{name}").inner_text()
                     for name in ("provider", "instance", "total")}
            page.wait_for_selector("#gpu-assist-panel .gpu-assist-util .gpu-assist-note", timeout=30_000)
            no_news = page.get_by_role("button", name="No")
            if no_news.count():
                no_news.first.click()  # JupyterLab's "notify about news?" toast, not ours
            page.screenshot(path=str(ARTIFACTS / "sidebar-quote.png"))
            util_text = panel.locator(".gpu-assist-util").inner_text()
        finally:
            browser.close()
    best = quote(parse_request("8xA100 72h", catalog.gpus), catalog, today=TODAY, top=10).options[0]
    assert shown == {"provider": best.provider, "instance": f"{best.instances}× {best.instance_type}",
                     "total": format_money(best.total, best.currency)}
    assert util_text.startswith("No GPUs:")
