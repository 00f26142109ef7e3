"""Periodic jobs on two real replicas sharing one PostgreSQL: one leader; when it dies the other takes over.

Both are `gpu-assist slack serve` processes with jobs on and a 1-second interval; each logs the rounds it
runs. Rounds are numbered by the wall clock, so "no job runs twice in one round" is: no round number in
both logs, and none twice in one.
"""

from __future__ import annotations

import re
import signal
import time

from slack_client import start_slack_server

INTERVAL_S = 1.0
ROUND = re.compile(r"jobs round (\d+) on pid (\d+)")


def _rounds(info) -> list[int]:
    return [int(m.group(1)) for m in ROUND.finditer(info["log"].read_text())]


def _wait_for_rounds(info, count: int, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(_rounds(info)) >= count:
            return _rounds(info)
        time.sleep(0.1)
    raise AssertionError(f"expected {count} rounds, log: {info['log'].read_text()[-2000:]}")


def _wait_for_total_rounds(infos, count: int, timeout: float) -> None:
    """Until the replicas together have run `count` rounds (both start their loops as soon as they serve)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(len(_rounds(info)) for info in infos) >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"expected {count} rounds in all: {[info['log'].read_text()[-1000:] for info in infos]}")


def test_one_leader_runs_the_jobs_and_a_follower_takes_over_within_one_interval(
        moto_server, mock_slack, pg_store, tmp_path):
    env = {"GPU_ASSIST_JOB_INTERVAL_S": str(INTERVAL_S)}
    replicas = [start_slack_server(moto_server, mock_slack, tmp_path, db_url=pg_store.url, jobs=True, extra_env=env)
                for _ in range(2)]
    try:
        _wait_for_total_rounds([info for _, info in replicas], 3, timeout=10 * INTERVAL_S + 20)
        counts = [len(_rounds(info)) for _, info in replicas]
        assert sorted(counts)[0] == 0 and sorted(counts)[1] >= 2, counts  # one leader, every round
        leader, follower = (replicas if counts[0] else replicas[::-1])

        leader[0].send_signal(signal.SIGKILL)  # no goodbye: the lock goes with its connection
        killed_at = time.time()
        leader[0].wait(timeout=10)
        taken = _wait_for_rounds(follower[1], 1, timeout=2 * INTERVAL_S + 3)
        assert taken[0] * INTERVAL_S - killed_at <= INTERVAL_S + 0.5  # the next tick after the kill
        _wait_for_rounds(follower[1], len(taken) + 2, timeout=4 * INTERVAL_S + 3)  # two more rounds as leader
        everything = _rounds(leader[1]) + _rounds(follower[1])
        assert len(everything) == len(set(everything))  # no round ran twice, in one process or across both
        assert taken[0] > max(_rounds(leader[1]))
    finally:
        for process, _ in replicas:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=10)
