"""Every outcome is announced once, whoever finishes it: a launch whose approver died right after approving is
finished by the jobs leader's reconciler, and the leader's round then updates the approval card in place and tells
the requester in its thread, once, however many rounds follow.

A real `gpu-assist slack serve` with its jobs at a 1-second round on PostgreSQL, moto over HTTP, the mock Web API;
the approver is `approve_worker.py crash-approved`, SIGKILLed right after its approval is recorded.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slack_client import command_body, signed_post, start_slack_server

WORKER = Path(__file__).with_name("approve_worker.py")
ROUND = re.compile(r"jobs round (\d+) on pid")


@pytest.fixture
def leader(moto_server, aws, mock_slack, pg_store, tmp_path):
    process, info = start_slack_server(moto_server, mock_slack, tmp_path, db_url=pg_store.url, jobs=True,
                                       extra_env={"GPU_ASSIST_JOB_INTERVAL_S": "1"})
    mock_slack.clear()
    yield info
    process.terminate()
    process.wait(timeout=10)


def _rounds(info) -> int:
    return len(ROUND.findall(info["log"].read_text()))


def _wait_for_rounds(info, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while _rounds(info) < count:
        assert time.monotonic() < deadline, info["log"].read_text()[-2000:]
        time.sleep(0.1)


def test_a_launch_the_reconciler_finishes_is_announced_once_on_its_card_and_in_its_thread(leader, mock_slack,
                                                                                            pg_store):
    signed_post(leader["url"], command_body("launch 8xA100 4h region=us-east-1", user="U-CAROL",
                                            response_url=mock_slack.response_url()))
    (card,) = mock_slack.wait_for("chat.postMessage")
    request_id = next(b for b in card["params"]["blocks"] if b["type"] == "actions")["elements"][0]["value"]
    crashed = subprocess.run([sys.executable, str(WORKER), "crash-approved", pg_store.url, request_id,
                              "slack:U-BOB"], capture_output=True, text=True, timeout=120)
    assert crashed.returncode == -9  # SIGKILL, after the approval and before any launch or announcement
    (update,) = mock_slack.wait_for("chat.update", timeout=30)
    record = pg_store.get(request_id)
    assert record.state == "running" and (record.card_channel, record.card_ts) == (
        update["params"]["channel"], update["params"]["ts"])
    assert update["params"]["text"].startswith(f"{request_id}: Approved by <@U-BOB> — Running: `"
                                               f"{record.instance_ids[0]}`")
    told = mock_slack.wait_for("chat.postMessage", 2)[1]["params"]
    assert told["thread_ts"] == record.card_ts and told["text"].startswith(f"<@U-CAROL> {request_id}: Approved by")
    _wait_for_rounds(leader, _rounds(leader) + 3)  # three more rounds see it announced already
    assert len(mock_slack.calls("chat.update")) == 1 and len(mock_slack.calls("chat.postMessage")) == 2
    trail = [(e.actor, e.action) for e in pg_store.audit_trail(request_id)]
    assert ("reconciler", "take over") in trail and trail.count(("system", "announce")) == 1
