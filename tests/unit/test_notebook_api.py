"""The notebook's API is the command line's twin: every function the docs name answers, for the same words, the rows
`gpu-assist VERB WORDS --format json` prints; numbers are float64 (NaN, never None) and pricing models plain
strings; what the CLI says around its table travels in `.attrs`."""

from __future__ import annotations

import datetime as dt
import enum
import json
import math
import re
from decimal import Decimal

import pandas as pd
import pytest
from support import REPO

import gpu_assist
from gpu_assist.cli import main
from gpu_assist.pricing.compare import COLUMNS

# The CLI reads today's date itself, as the notebook does: both answer on support.TODAY's.
pytestmark = pytest.mark.usefixtures("pinned_wall_clock", "own_store")
PRICING = [str(model) for model in COLUMNS]


@pytest.fixture
def own_store(monkeypatch, tmp_path):
    """A request store of this test's own, no policy or currency of the caller's."""
    for name in ("GPU_ASSIST_CONFIG", "GPU_ASSIST_CURRENCY", "GPU_ASSIST_POLICY_CURRENCY"):
        monkeypatch.delenv(name, raising=False)
    url = f"sqlite:///{tmp_path}/state.db"
    monkeypatch.setenv("GPU_ASSIST_DB_URL", url)
    return url


def _cli(capsys, *argv: str):
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _same(value, shown) -> bool:
    """A frame's float against the JSON's rounded figure (None: NaN)."""
    return _nan(value) if shown is None else not _nan(value) and abs(value - shown) < 0.006


def _plain(frame: pd.DataFrame) -> None:
    """No enum in a cell, no None in a column of numbers."""
    for name in frame.columns:
        values = frame[name].tolist()
        assert not any(isinstance(v, enum.Enum) for v in values), name
        numbers = [v for v in values if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)]
        if numbers and any(v is None for v in values):
            pytest.fail(f"column {name} mixes numbers and None")


@pytest.mark.parametrize("words", ["8xA100 72h", "8xH100 1w spot", "1xA100 8h region=cn"])
def test_quote_answers_the_rows_the_cli_ranks(capsys, words):
    frame = gpu_assist.quote(words)
    options = _cli(capsys, "quote", *words.split())
    rows = [*frame.to_dict("records"), *frame.attrs["unranked"]]
    assert {row["key"] for row in rows} == {option["group"] for option in options}  # one row per offer group
    assert list(frame["rank"]) == list(range(1, len(frame) + 1))
    assert frame["verified"].all() or not frame.attrs["unranked"]  # region=cn: nothing verified, so all ranked
    for row in rows:
        own = [o for o in options if o["group"] == row["key"] and o["instance_type"] == row["instance_type"]]
        for model in PRICING:  # each pricing column: the cheapest way to buy the row that way
            assert _same(row[model], min((o["total"] for o in own if o["pricing_model"] == model), default=None))
        spot_asked = "spot" in words.split()  # what the row ranks by: a price it can count on (compare.counts_on)
        best = min(own, key=lambda o: (not o["verified"], (o["pricing_model"] == "spot") != spot_asked,
                                       o["total"] * (1 + (o["spot_overhead"] or 0))))
        assert row["best"] == best["pricing_model"] and _same(row["total"], best["total"])
    _plain(frame)
    assert frame.attrs["title"].startswith(words.split()[0].replace("x", "×"))


def test_quote_ranks_in_the_order_the_terminal_shows(capsys):
    frame = gpu_assist.quote("8xA100 72h")
    capsys.readouterr()
    assert main(["quote", "8xA100", "72h"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == frame.attrs["title"]
    rows = [line for line in table[2:] if not line.startswith(" ")]  # a long name folds onto the lines below
    for rank, provider in zip(frame["rank"], frame["provider"]):
        assert re.match(rf"{rank}\s+{provider}\s", rows[rank - 1])
    unranked = pd.DataFrame(frame.attrs["unranked"])
    assert not unranked.empty and not unranked["verified"].any() and set(unranked["provider"]) == {"tencent"}


def test_the_flat_list_is_one_argument_away(capsys):
    frame = gpu_assist.quote("8xA100 72h", list=True)
    options = _cli(capsys, "quote", "8xA100", "72h", "list")
    assert len(frame) == len(options) > len(gpu_assist.quote("8xA100 72h"))
    for row, option in zip(frame.to_dict("records"), options):
        assert [row[k] for k in ("provider", "region", "zone", "instance_type", "pricing_model", "verified")] == \
            [option[k] for k in ("provider", "region", "zone", "instance_type", "pricing_model", "verified")]
        assert _same(row["total"], option["total"]) and _same(row["hourly"], option["hourly"])
    _plain(frame)
    assert len(gpu_assist.quote("8xA100 72h", list=True, top=5)) == 5  # keywords are the grammar's words


@pytest.mark.parametrize("words", ["finetune 70B lora", "train 7B tokens=20B deadline=7d"])
def test_recommend_answers_the_cli_plans_and_its_reasoning(capsys, words):
    frame = gpu_assist.recommend(words)
    answer = _cli(capsys, "recommend", *words.split())
    assert len(frame) == len(answer["plans"]) > 0
    for row, plan in zip(frame.to_dict("records"), answer["plans"]):
        assert [row[k] for k in ("gpu", "provider", "instance_type", "pricing_model", "strategy")] == \
            [plan[k] for k in ("gpu", "provider", "instance_type", "pricing_model", "strategy")]
        assert _same(row["hourly"], plan["hourly"]) and _same(row["total"], plan["total"])
        assert _same(row["hours"], plan["hours"])
    for key in ("reasoning", "assumptions", "not_planned"):
        assert frame.attrs[key] == answer[key]
    assert [r["instance_type"] for r in frame.attrs["rejected"]] == [r["instance_type"] for r in answer["rejected"]]
    # what the text folds into a line or names beside the plans, whole
    assert frame.attrs["left_out"] == {item["gpu"]: item["why"] for item in answer["left_out"]}
    assert frame.attrs["feasible"] == answer["feasible"] and frame.attrs["dataset"] == answer["dataset"]
    assert [r["instance_type"] for r in frame.attrs["beside"]] == [r["instance_type"] for r in answer["beside"]]
    _plain(frame)
    assert frame["total"].dtype == "float64" and frame["hours"].dtype == "float64"


def test_tco_answers_the_clis_figures(capsys):
    frame = gpu_assist.tco("1xA100 hardware=15k usage=200h/mo")
    answer = _cli(capsys, "tco", "1xA100", "hardware=15k", "usage=200h/mo")
    assert len(frame) == 1
    row = frame.iloc[0]
    for key in ("own_first_year", "own_per_year", "cloud_rate_per_gpu_hour", "cloud_per_year",
                "break_even_hours_per_month", "break_even_utilisation"):
        assert _same(float(row[key]), answer[key]), key
    assert row["cheaper"] == answer["cheaper"] and frame.attrs["cloud_rate_source"] == answer["cloud_rate_source"]
    assert row["hardware_per_gpu"] == answer["inputs"]["hardware_per_gpu"] and row["currency"] == "USD"
    _plain(frame)


def _launches(url: str) -> None:
    """Two launches of p4d.24xlarge that ran in November: submitted, then stopped (as `reap` would leave them)."""
    from sqlalchemy import update

    from gpu_assist.lifecycle.records import RequestRecord
    from gpu_assist.lifecycle.specs import Candidate, LaunchSpec
    from gpu_assist.store import Store, requests_table

    store = Store(url)
    store.upgrade()
    for n, (day, hours, project) in enumerate([(3, 100, "vision"), (17, 250, "llm")], 1):
        start = dt.datetime(2026, 11, day, tzinfo=dt.timezone.utc)
        hourly = Decimal("32.7726")
        spec = LaunchSpec(
            request_id=f"r-00000000000{n}", requester="slack:U-CAROL", text="launch 8xA100 100h", gpu="A100",
            gpus=8, instance_type="p4d.24xlarge", instances=1, vcpus=96, region="us-east-1", zone="",
            pricing_model="on-demand", duration_s=hours * 3600, hourly=hourly, ceiling_hourly=hourly,
            estimated_total=hourly * hours, currency="USD", candidates=(Candidate("us-east-1", None, hourly),),
            price_source="aws 2026-11-01",
            project=project)
        store.insert_request(RequestRecord(
            id=spec.request_id, kind="launch", requester=spec.requester, spec=spec, estimated_cost=hourly * hours,
            currency="USD", state="pending", created_at=start, expires_at=start + dt.timedelta(days=1),
            approver=None, decided_at=None, instance_ids=(), ends_at=None, error=None, version=0), actor="test")
        with store.engine.begin() as connection:  # what approving, launching and stopping it would have written
            connection.execute(update(requests_table).where(requests_table.c.id == spec.request_id).values(
                state="stopped", approver="slack:U-BOB", decided_at=start, instance_ids=[f"i-{n:017x}"],
                ends_at=start + dt.timedelta(hours=hours), hourly_price=hourly, launched_at=start,
                stopped_at=start + dt.timedelta(hours=hours)))


def test_spend_answers_the_clis_launches(capsys, own_store):
    _launches(own_store)
    frame = gpu_assist.spend("2026-11 by=project")
    answer = _cli(capsys, "spend", "2026-11", "by=project")
    assert list(frame["request_id"]) == [launch["request_id"] for launch in answer["launches"]] and len(frame) == 2
    for row, launch in zip(frame.to_dict("records"), answer["launches"]):
        assert _same(row["cost"], launch["cost"]) and _same(row["hours"], launch["hours"])
        assert row["project"] == launch["project"]
    assert frame.attrs["groups"] == answer["groups"] and frame.attrs["total"] == answer["total"] > 0
    _plain(frame)


def test_commit_answers_the_clis_candidates(capsys, own_store):
    _launches(own_store)
    frame = gpu_assist.commit("months=3", chart=False)
    answer = _cli(capsys, "commit", "months=3")
    assert frame.to_dict("records") == answer["candidates"] and len(frame) > 0
    assert frame.attrs["notices"] == answer["notices"]
    assert gpu_assist.commit(3, chart=False).equals(frame)
    _plain(frame)


def test_utilization_answers_what_util_reads(capsys):
    frame = gpu_assist.utilization()
    answer = _cli(capsys, "util")
    assert len(frame) == len(answer["gpus"]) and frame.attrs["reason"] == answer["reason"]


def test_every_function_the_docs_name_is_the_apis_and_tested_here():
    """`gpu_assist.NAME(…)` in README.md or a page of docs/ is a function of the API, compared above with the CLI."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    named = {name for page in pages for name in re.findall(r"\bgpu_assist\.(\w+)\(", page.read_text("utf-8"))}
    tested = {"quote", "recommend", "tco", "spend", "commit", "utilization"}
    assert named <= tested and tested == set(gpu_assist.NOTEBOOK_API)
    assert all(callable(getattr(gpu_assist, name)) for name in tested)


def test_keywords_become_the_grammars_words():
    words = gpu_assist.quote("8xA100 72h top=3 include-unverified")
    keywords = gpu_assist.quote("8xA100 72h", top=3, include_unverified=True)
    assert words.equals(keywords) and len(words) == 3
    with pytest.raises(gpu_assist.ParseError, match="unknown GPU"):
        gpu_assist.quote("8xA1000 72h")
