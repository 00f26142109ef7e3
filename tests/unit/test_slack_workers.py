"""The pool's bound, the retry memory and the SQLite leader lease, in process (the servers are tested in
tests/integration/test_slack_serving.py and test_jobs_lease.py)."""

from __future__ import annotations

import subprocess
import sys
import threading

from slackbot.jobs import FileLease
from slackbot.workers import Deliveries, WorkPool


def test_the_pool_refuses_past_threads_plus_queue_and_frees_places_when_done():
    pool, release, done = WorkPool(threads=1, queued=1), threading.Event(), []
    first, second = pool.reserve(), pool.reserve()
    assert first and second and pool.reserve() is None
    first.start(lambda: release.wait(10))
    second.start(lambda: done.append("second"))
    assert pool.reserve() is None
    release.set()
    pool.shutdown()
    assert done == ["second"] and pool.reserve() is not None


def test_a_cancelled_reservation_gives_its_place_back():
    pool = WorkPool(threads=1, queued=0)
    place = pool.reserve()
    assert pool.reserve() is None
    place.cancel()
    assert pool.reserve() is not None


def test_a_failing_task_frees_its_place():
    pool = WorkPool(threads=1, queued=0)
    pool.reserve().start(lambda: 1 / 0)
    pool.shutdown()
    assert pool.reserve() is not None


def test_only_a_retry_of_a_key_already_seen_is_refused():
    deliveries = Deliveries(kept=2)
    assert deliveries.first("a", None) and not deliveries.first("a", "1") and not deliveries.first("a", "2")
    assert deliveries.first("a", None)  # a first delivery is never refused, whatever its key
    assert deliveries.first("b", "1")  # a retry of something this process never saw runs
    deliveries.first("c", None)
    deliveries.first("d", None)
    assert deliveries.first("a", "1")  # forgotten after `kept` newer keys
    assert deliveries.first(None, "1")


def test_the_file_lease_has_one_holder_and_is_freed_when_its_process_dies(tmp_path):
    path = str(tmp_path / "state.db.jobs-leader")
    holder = subprocess.Popen([sys.executable, "-c", f"from slackbot.jobs import FileLease; import sys, time\n"
                               f"assert FileLease({path!r}).held(); print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    lease = FileLease(path)
    assert not lease.held()
    holder.kill()
    holder.wait(timeout=10)
    assert lease.held() and lease.held()
    lease.release()
