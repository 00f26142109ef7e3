"""`commit` end to end: three months of launches made the way a team makes them (submit, approve, launch and stop
through boto3 against the real moto server over HTTP, an injected clock, a SQLite store), priced by a catalog whose
p4d.24xlarge terms are those `catalog refresh aws-public` computes from the recorded AWS price list file
(tests/fixtures/aws_public: on-demand 32.7726, 1-year 18, 3-year 10 per hour; format samples, not AWS prices),
then the command line's answer in text and JSON."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from support import Clock, offer, submit_launch

from gpu_assist.cli import main
from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.store import Store

pytestmark = pytest.mark.slow


@pytest.fixture
def history(aws, tmp_path, make_catalog, monkeypatch):
    directory = make_catalog(offer(on_demand_hourly="32.7726", reserved_1y_hourly="18", reserved_3y_hourly="10",
                                   source="aws-price-list", as_of="2026-12-01", reserved_source="aws-price-list",
                                   reserved_as_of="2026-12-01"), load=False)
    from gpu_assist.catalog import load_catalog

    catalog = load_catalog(directory, cache_dir=None)
    clock = Clock(dt.datetime(2026, 9, 1, 8, 0, tzinfo=dt.timezone.utc))
    policy = Policy(approvers=frozenset({"slack:U-ALICE", "slack:U-BOB"}), ami_id="ami-12c6146b",
                    max_cost=Decimal(40_000), max_ttl_s=800 * 3600)
    url = f"sqlite:///{tmp_path / 'state.db'}"
    approvals = Approvals(Store(url), policy, AwsProvisioner(policy), catalog, clock)
    for month in (9, 10, 11):  # about 500 h of one p4d each month, stopped by hand
        clock.now = dt.datetime(2026, month, 1, 8, 0, tzinfo=dt.timezone.utc)
        running = approvals.approve(submit_launch(approvals, "slack:U-CAROL", "8xA100 600h region=us-east-1").id,
                                    "slack:U-BOB")
        clock.advance(hours=500)
        stop = approvals.submit_stop("slack:U-CAROL", list(running.instance_ids))
        approvals.approve(stop.id, "slack:U-ALICE")
    monkeypatch.setenv("GPU_ASSIST_DB_URL", url)
    monkeypatch.setenv("GPU_ASSIST_CATALOG_DIR", str(directory))
    monkeypatch.setenv("GPU_ASSIST_AMI_ID", "ami-12c6146b")
    return approvals


def test_commit_recommends_one_1_year_reservation_from_the_stores_launches(history, capsys, pinned_wall_clock):
    assert main(["commit", "--format", "json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["months"] == ["2026-09-01", "2026-10-01", "2026-11-01"]
    assert [m["instance_hours"] for m in answer["usage"][0]["months"]] == [500.0, 500.0, 500.0]
    (picked,) = [c for c in answer["candidates"] if c["recommended"]]
    assert (picked["term"], picked["instances"], picked["instance_type"]) == ("reserved-1y", 1, "p4d.24xlarge")
    assert picked["saving_per_month"] == pytest.approx(500 * 32.7726 - 730 * 18)
    assert main(["commit"]) == 0
    text = capsys.readouterr().out
    assert "recommended: 1× p4d.24xlarge reserved-1y in us-east-1" in text
    assert all(len(line) <= 100 for line in text.splitlines())
    assert main(["commit", "months=0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: didn't understand 'months=0'") and "commit months=6" in err
