"""The request lifecycle from the command line, over moto and an SQLite store, as an operator would use it.

The CLI may quote, submit and list; it never approves as anyone: `--as` and GPU_ASSIST_USER name an
unauthenticated requester, and the only decision from a shell is the audited break-glass override."""

from __future__ import annotations

import getpass
import json
import re

import pytest

from gpu_assist.cli import main

pytestmark = pytest.mark.clock  # `gpu-assist request …` dates its requests by the wall clock


@pytest.fixture
def cli_env(aws, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path / 'state.db'}")
    monkeypatch.setenv("GPU_ASSIST_APPROVERS", "slack:U-ALICE,jupyter:bob")
    monkeypatch.setenv("GPU_ASSIST_AMI_ID", "ami-12c6146b")
    monkeypatch.delenv("GPU_ASSIST_USER", raising=False)
    return tmp_path


def _break_glass_on(tmp_path, monkeypatch):
    config = tmp_path / "policy.toml"
    config.write_text("[policy]\nbreak_glass = true\n", encoding="utf-8")
    monkeypatch.setenv("GPU_ASSIST_CONFIG", str(config))


def _json(capsys, argv):
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_launch_is_recorded_unauthenticated_and_the_cli_cannot_approve_as_anyone(cli_env, capsys, monkeypatch):
    record = _json(capsys, ["launch", "8xA100", "4h", "region=us-east-1", "--as", "carol", "--format", "json"])
    assert record["state"] == "pending" and record["requester"] == "unauthenticated:carol"
    # Every way a shell can claim an approver's name: none is a decision.
    assert main(["approve", record["id"], "--as", "bob"]) == 2
    assert "unrecognized arguments: --as bob" in capsys.readouterr().err
    monkeypatch.setenv("GPU_ASSIST_USER", "bob")
    assert main(["approve", record["id"]]) == 2
    assert "the CLI cannot approve" in capsys.readouterr().err
    bob = _json(capsys, ["launch", "8xA100", "4h", "region=us-east-1", "--format", "json"])
    assert bob["requester"] == "unauthenticated:bob"  # GPU_ASSIST_USER names a requester, nothing more
    assert main(["approve", record["id"], "--break-glass", "--reason", "Slack is down"]) == 2
    assert "break-glass overrides are off in the policy" in capsys.readouterr().err
    shown = _json(capsys, ["requests", "show", record["id"], "--format", "json"])
    assert shown["state"] == "pending" and shown["approver"] is None
    refused = [e for e in shown["audit"] if e["outcome"] == "refused"]
    assert [e["actor"] for e in refused] == [f"break-glass:{getpass.getuser()}"]


def test_break_glass_is_an_audited_override_when_the_policy_allows_it(cli_env, capsys, monkeypatch):
    _break_glass_on(cli_env, monkeypatch)
    record = _json(capsys, ["launch", "8xA100", "4h", "region=us-east-1", "--as", "carol", "--format", "json"])
    assert main(["approve", record["id"], "--break-glass"]) == 2
    assert "needs a reason" in capsys.readouterr().err
    approved = _json(capsys, ["approve", record["id"], "--break-glass", "--reason", "Slack outage, INC-42",
                              "--format", "json"])
    operator = f"break-glass:{getpass.getuser()}"
    assert approved["state"] == "running" and approved["approver"] == operator
    shown = _json(capsys, ["requests", "show", record["id"], "--format", "json"])
    override = next(e for e in shown["audit"] if e["action"] == "approve (override)")
    assert override["actor"] == operator and override["detail"] == "break-glass override: Slack outage, INC-42"
    assert main(["requests", "show", record["id"]]) == 0
    shown = capsys.readouterr().out
    assert f"decided by {operator}" in shown
    per_instance = r"^  \$[0-9,]+\.\d\d/h per instance \(ceiling \$[0-9,]+\.\d\d/h\), price from "
    assert re.search(per_instance, shown, re.M), shown
    stop = _json(capsys, ["stop", approved["instance_ids"][0], "--as", "carol", "--format", "json"])
    stopped = _json(capsys, ["approve", stop["id"], "--break-glass", "--reason", "INC-42", "--format", "json"])
    assert stopped["state"] == "stopped"
    listed = _json(capsys, ["requests", "--format", "json"])
    assert {r["id"]: r["state"] for r in listed} == {record["id"]: "stopped", stop["id"]: "stopped"}
    assert main(["reconcile"]) == 0 and "reconcile: 0 requests" in capsys.readouterr().out


def test_an_extension_from_the_cli_is_recorded_and_decided_like_a_launch(cli_env, capsys, monkeypatch):
    _break_glass_on(cli_env, monkeypatch)
    record = _json(capsys, ["launch", "8xA100", "4h", "region=us-east-1", "--as", "carol", "--format", "json"])
    _json(capsys, ["approve", record["id"], "--break-glass", "--reason", "INC-7", "--format", "json"])
    extension = _json(capsys, ["extend", record["id"], "1d", "--as", "carol", "--format", "json"])
    assert (extension["kind"], extension["state"], extension["requester"]) == ("extend", "pending",
                                                                               "unauthenticated:carol")
    assert main(["requests", "show", extension["id"]]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"{extension['id']} [pending] extend {record['id']} by 24h, est. ") and "audit:" in shown
    assert re.search(r"was to stop \S+ \S+ UTC; \$[0-9,]+\.\d\d/h for all its instances", shown), shown
    done = _json(capsys, ["approve", extension["id"], "--break-glass", "--reason", "INC-7", "--format", "json"])
    assert done["state"] == "extended"


def test_break_glass_never_approves_ones_own_request(cli_env, capsys, monkeypatch):
    _break_glass_on(cli_env, monkeypatch)
    mine = _json(capsys, ["launch", "8xA100", "4h", "region=us-east-1", "--format", "json"])
    assert mine["requester"] == f"unauthenticated:{getpass.getuser()}"
    assert main(["approve", mine["id"], "--break-glass", "--reason", "mine"]) == 2
    assert "requesters cannot approve" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["stop", "i-nothex", "--as", "carol"], "'i-nothex' is not an instance id"),
    (["approve", "r-000000000000"], "the CLI cannot approve"),
    (["reject", "r-000000000000", "--break-glass", "--reason", "x"], "no request r-000000000000"),
    (["requests", "show", "banana"], "'banana' is not a request id"),
    (["launch", "8xA100", "--as", "carol"], "say for how long"),
    (["launch", "8xA100", "2h", "project=a;b", "--as", "carol"], "project 'a;b' must be one word of letters"),
    (["extend", "r-000000000000", "24h", "--as", "carol"], "no launch request r-000000000000"),
    (["extend", "r-000000000000", "-24h", "--as", "carol"], "'-24h': an extension is positive"),
    (["extend", "r-000000000000", "--as", "carol"], "say which launch request and how much longer"),
    (["extend", "r-1", "24h", "--as", "carol"], "'r-1' is not a request id"),
])
def test_bad_lifecycle_input_is_one_line(cli_env, capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
