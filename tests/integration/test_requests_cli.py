"""The request lifecycle from the command line, over moto and an SQLite store, as an admin would use it."""

from __future__ import annotations

import json

import pytest

from gpu_assist.cli import main


@pytest.fixture
def cli_env(aws, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path / 'state.db'}")
    monkeypatch.setenv("GPU_ASSIST_APPROVERS", "alice,bob")
    monkeypatch.setenv("GPU_ASSIST_AMI_ID", "ami-12c6146b")


def _json(capsys, argv):
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_launch_approve_show_and_stop(cli_env, capsys):
    record = _json(capsys, ["launch", "8xA100", "4h", "region=us-east-1", "--as", "carol", "--format", "json"])
    assert record["state"] == "pending" and record["requester"] == "carol"
    assert main(["approve", record["id"], "--as", "carol"]) == 2
    assert "requesters cannot approve" in capsys.readouterr().err
    approved = _json(capsys, ["approve", record["id"], "--as", "bob", "--format", "json"])
    assert approved["state"] == "running" and len(approved["instance_ids"]) == 1
    shown = _json(capsys, ["requests", "show", record["id"], "--format", "json"])
    assert [e["action"] for e in shown["audit"]] == ["submit", "approve", "approve", "launch", "running"]
    assert main(["requests", "show", record["id"]]) == 0
    text = capsys.readouterr().out
    assert "decided by bob" in text and "carol approve refused" in text
    stop = _json(capsys, ["stop", approved["instance_ids"][0], "--as", "carol", "--format", "json"])
    assert _json(capsys, ["approve", stop["id"], "--as", "alice", "--format", "json"])["state"] == "stopped"
    listed = _json(capsys, ["requests", "--format", "json"])
    assert {r["id"]: r["state"] for r in listed} == {record["id"]: "stopped", stop["id"]: "stopped"}
    assert main(["reconcile"]) == 0 and "reconcile: 0 requests" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["stop", "i-nothex", "--as", "carol"], "'i-nothex' is not an instance id"),
    (["approve", "r-000000000000", "--as", "bob"], "no request r-000000000000"),
    (["requests", "show", "banana"], "requests takes nothing or one request id"),
    (["launch", "8xA100", "--as", "carol"], "say for how long"),
])
def test_bad_lifecycle_input_is_one_line(cli_env, capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
