"""The pool's bound, the retry memory, the delivery claim, the encoded answers and the SQLite leader lease,
in process (the servers are tested in tests/integration/test_slack_serving.py, test_slack_replicas.py and
test_jobs_lease.py)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import threading
import time

from slack_bolt.context.respond.internals import _build_message

from gpu_assist.store import Store
from slackbot.jobs import FileLease
from slackbot.response_url import EncodedAnswers, message
from slackbot.workers import DELIVERY_KEPT, Deliveries, WorkPool, claim_delivery, prune_deliveries

NOW = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.timezone.utc)


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


def test_shedding_refuses_only_a_full_pool_and_counts_what_it_refused():
    pool = WorkPool(threads=1, queued=0)
    assert not pool.shed() and pool.refused == 0
    place = pool.reserve()
    assert pool.shed() and pool.reserve() is None and pool.refused == 2 and pool.taken == 1
    place.cancel()
    assert not pool.shed() and pool.taken == 0


def test_at_most_computing_tasks_compute_at_once():
    pool, entered, done, release = WorkPool(threads=4, queued=0, computing=2), [], [], threading.Event()

    def task(number: int) -> None:
        with pool.computing():
            entered.append(number)
            release.wait(10)
        done.append(number)

    for number in range(4):
        pool.reserve().start(lambda number=number: task(number))
    deadline = time.monotonic() + 10
    while len(entered) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(entered) == 2  # the other two wait for a turn, holding threads but not the GIL
    release.set()
    pool.shutdown()
    assert sorted(done) == [0, 1, 2, 3]


def test_a_delivery_is_claimed_once_across_processes_sharing_the_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'state.db'}"
    one, other = Store(url), Store(url)  # two processes' stores on one database
    key = "https://hooks.slack.com/commands/T1/1/abc"
    assert claim_delivery(one, key, NOW)
    assert not claim_delivery(other, key, NOW) and not claim_delivery(one, key, NOW)
    assert claim_delivery(other, key + "d", NOW)
    assert claim_delivery(one, None, NOW) and claim_delivery(one, None, NOW)  # nothing to claim by: it runs


def test_delivery_claims_are_forgotten_a_day_on_and_no_other_notice_is(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'state.db'}")
    assert claim_delivery(store, "https://hooks.slack.test/old", NOW)
    assert store.post_once("budget:team:2026-12:80", "budget", now=NOW)  # guards a crossing all month: kept
    later = NOW + DELIVERY_KEPT - dt.timedelta(minutes=1)
    assert claim_delivery(store, "https://hooks.slack.test/recent", later)
    assert prune_deliveries(store, NOW + DELIVERY_KEPT + dt.timedelta(minutes=1)) == 1
    assert claim_delivery(store, "https://hooks.slack.test/old", NOW + DELIVERY_KEPT)  # gone: claimable again
    assert not claim_delivery(store, "https://hooks.slack.test/recent", later)
    assert not store.post_once("budget:team:2026-12:80", "budget", now=NOW + DELIVERY_KEPT)


def test_the_message_is_what_bolts_respond_sends():
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*8 offers*"}}]
    for text, given, flags in (("8 offers", blocks, {"response_type": "ephemeral", "replace_original": False}),
                               ("error", None, {"response_type": "ephemeral", "replace_original": True})):
        assert json.loads(message(text, given, **flags)) == _build_message(text=text, blocks=given, **flags)


def test_an_answer_asked_again_is_rendered_once():
    answers, rendered = EncodedAnswers(kept=2), []
    first, equal = {"rows": [1]}, {"rows": [1]}

    def render(result):
        rendered.append(result)
        return "fallback", [{"type": "section", "text": {"type": "plain_text", "text": str(result)}}]

    body = answers.message(first, "quote 8xA100", False, lambda: render(first))
    assert answers.message(first, "quote 8xA100", False, lambda: render(first)) == body and len(rendered) == 1
    answers.message(equal, "quote 8xA100", False, lambda: render(equal))  # another object: rendered itself
    answers.message(first, "quote 8xA100", True, lambda: render(first))  # replacing "Working on…": its own
    assert len(rendered) == 3 and json.loads(body)["replace_original"] is False


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
