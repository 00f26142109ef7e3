"""Fresh prices on a team's server, as an operator meets them: the team's `[catalog]` table asks the jobs leader to
refresh Azure every 6 hours; the leader's rounds (`slackbot.jobs.run_round`, an injected clock) refresh it from the
Azure Retail Prices API, here a local server answering the recorded real-format pages (tests/fixtures/azure,
API version 2023-01-01-preview, as `sources.public` asks), into the deployment's shared catalog directory. Another
replica's context, built before, quotes the new price without a restart, and the CLI of the deployment (another
process) and `/gpu catalog` list the refresh; a refresh that fails keeps the last good file; `/metrics` has the
age; the approval channel (tests/mock_slack.py) hears once that the source is too old."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys

import pytest
from slack_sdk import WebClient
from support import CATALOGS, FIXTURES, Clock, offer, serving

from gpu_assist.catalog import load_catalog
from gpu_assist.commands import Context
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.lifecycle.ports import Clouds
from gpu_assist.metrics import metrics_application
from gpu_assist.sources import freshness, public, scheduled
from gpu_assist.store import Store
from slackbot import blocks
from slackbot.catalog_watch import stale_round
from slackbot.jobs import run_round

pytestmark = pytest.mark.clock  # the rounds run on an injected clock; /metrics and the CLI read the wall clock

CONFIG = '[catalog]\nrefresh = ["azure"]\nevery = "6h"\nmax_age = "3d"\n'


def _recorded(path: str, query: str, base: str) -> bytes | None:
    if path == "/api/retail/prices":
        name = "retail_prices_page2.json" if "skip=3" in query else "retail_prices_page1.json"
        return (FIXTURES / "azure" / name).read_text().replace("{base}", base).encode()
    return None


@pytest.fixture
def azure():
    with serving(_recorded) as recorded:
        yield recorded


@pytest.fixture
def deployment(make_catalog, tmp_path, monkeypatch, azure):
    """The shared catalog directory (an Azure row observed 2026-11-01 at $4.00), the team's config naming Azure,
    and the Azure refresher pointed at the local server."""
    directory = make_catalog(offer(provider="azure", region="eastus", instance_type="Standard_NC24ads_A100_v4",
                                   gpu="A100-80GB", gpu_count="1", gpu_memory_gib="80", vcpus="24", memory_gib="220",
                                   interconnect="pcie", on_demand_hourly="4.0", billing_granularity_s="60",
                                   source="skypilot-azure", as_of="2026-11-01"), load=False)
    (directory / "SOURCES.md").write_bytes((CATALOGS / "SOURCES.md").read_bytes())
    config = tmp_path / "gpu-assist.toml"
    config.write_text(CONFIG, encoding="utf-8")
    for name, value in (("GPU_ASSIST_CATALOG_DIR", directory), ("GPU_ASSIST_CONFIG", config),
                        ("GPU_ASSIST_CACHE_DIR", tmp_path / "cache")):
        monkeypatch.setenv(name, str(value))
    monkeypatch.setitem(scheduled.REFRESHERS, "azure", lambda folder, today: public.AzureRetailSource(
        folder, today, http=public.session(retries=1, backoff_s=0), url=f"{azure.base}/api/retail/prices"))
    return directory


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def leader(deployment, tmp_path, clock):
    """The jobs leader's lifecycle: its store, and the clock its rounds read."""
    return Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), Policy(), Clouds({}),
                     load_catalog(deployment, cache_dir=None), clock)


def _eastus(context: Context) -> float:
    offers = context.catalog.offers
    return float(offers[(offers.provider == "azure") & (offers.region == "eastus")].on_demand_hourly.iloc[0])


def test_every_refresher_a_config_may_name_is_one_the_leader_runs():
    assert set(scheduled.REFRESHERS) == set(freshness.REFRESHER_NAMES)


def test_the_leader_refreshes_on_schedule_and_another_replica_quotes_the_new_price(deployment, leader, clock, azure):
    replica = Context(now=clock)  # serving already, from the shared directory
    assert _eastus(replica) == 4.0
    run_round(leader, 1)
    assert len(azure.hits) == 2  # page 1, then NextPageLink
    (azure_state,) = freshness.read_ledger(deployment).values()
    assert (azure_state.observed, azure_state.refreshed_at, azure_state.error) == (clock().date(), clock(), "")
    assert _eastus(replica) == 3.673  # picked up, no restart
    clock.advance(hours=5)
    run_round(leader, 2)
    assert len(azure.hits) == 2  # not due for another hour
    clock.advance(hours=1)
    run_round(leader, 3)
    assert len(azure.hits) == 4
    status = subprocess.run([sys.executable, "-m", "gpu_assist", "catalog", "status"], capture_output=True,
                            text=True, timeout=120, env=os.environ.copy())
    assert status.returncode == 0, status.stderr
    listed = status.stdout.split("refreshed by the jobs leader:\n", 1)[1].splitlines()
    assert listed[0].split() == ["source", "observed", "age", "last", "refresh", "last", "attempt"]
    assert listed[1].split()[:2] == ["azure", clock().date().isoformat()] and listed[1].endswith(" ok")
    assert f"{clock():%Y-%m-%d %H:%M} UTC" in listed[1]
    _, shown = blocks.message(run(parse_command("catalog", replica.catalog.gpus), replica))  # `/gpu catalog`
    card = shown[0]["text"]["text"].strip("`")
    assert "refreshed by the jobs leader:" in card
    (line,) = [x for x in card.splitlines() if x.startswith("azure")]
    assert line.split()[:4] == ["azure", clock().date().isoformat(), "18", "hours"] and line.endswith(" ok")


def test_slack_says_when_no_source_is_refreshed(deployment, tmp_path, monkeypatch):
    monkeypatch.delenv("GPU_ASSIST_CONFIG")
    _, shown = blocks.message(run(parse_command("catalog", Context().catalog.gpus), Context()))
    assert "No price source is refreshed on this server" in shown[0]["text"]["text"]


def test_a_refresh_that_fails_keeps_the_last_good_catalog_and_says_so(deployment, leader, clock, azure):
    run_round(leader, 1)
    good, refreshed_at = (deployment / "azure.csv").read_bytes(), clock()
    clock.advance(hours=6)
    azure.broken.add("skip=3")  # the second page fails: nothing is written
    run_round(leader, 2)
    assert (deployment / "azure.csv").read_bytes() == good
    state = freshness.read_ledger(deployment)["azure"]
    assert (state.observed, state.refreshed_at, state.attempted_at) == (refreshed_at.date(), refreshed_at, clock())
    assert "catalog is unchanged" in state.error
    assert _eastus(Context(now=clock)) == 3.673


def test_metrics_give_each_refreshed_sources_age(deployment, leader, clock):
    run_round(leader, 1)
    answered: list[str] = []
    body = b"".join(metrics_application(lambda: [], None)(
        {"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics"}, lambda status, headers: answered.append(status)))
    assert answered == ["200 OK"]
    (line,) = [x for x in body.decode().splitlines() if x.startswith('gpu_assist_catalog_age_seconds{source="azure"}')]
    observed = dt.datetime.combine(clock().date(), dt.time(), dt.timezone.utc)
    expected = (dt.datetime.now(dt.timezone.utc) - observed).total_seconds()
    assert abs(float(line.split()[-1]) - expected) < 60


def test_the_approval_channel_hears_once_when_a_source_is_too_old(deployment, leader, clock, azure, mock_slack):
    context = Context(now=clock, approvals_factory=lambda _c: leader)
    client = WebClient(token="xoxb-test", base_url=mock_slack.api_url)
    mock_slack.clear()  # the mock is the session's: only what this test posts counts
    run_round(leader, 1)
    azure.broken.add("/api/retail/prices")  # Azure away from now on
    for _ in range(20):  # five days of rounds, every 6 hours: too old after three
        clock.advance(hours=6)
        run_round(leader, 2)
        stale_round(context, client, "C-APPROVALS")
    (notice,) = mock_slack.calls("chat.postMessage")
    assert notice["params"]["channel"] == "C-APPROVALS"
    observed = freshness.read_ledger(deployment)["azure"].observed
    assert notice["params"]["text"].startswith(f":warning: azure prices were observed {observed} (")
    assert "Its last refresh failed" in notice["params"]["text"]
    azure.broken.clear()  # back: the next refresh is a new observation, and its own stale spell a new notice
    clock.advance(hours=6)
    run_round(leader, 3)
    clock.advance(days=4)
    stale_round(context, client, "C-APPROVALS")
    stale_round(context, client, "C-APPROVALS")
    assert len(mock_slack.calls("chat.postMessage")) == 2
