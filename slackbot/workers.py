"""Work after the ack: a bounded pool of threads, and the memory of which Slack requests were delivered.

Slack gives an app 3 seconds to answer a request and retries one that was not answered in time
(`X-Slack-Retry-Num`). The app therefore acks at once and hands the work here. The pool has a fixed
number of threads and a fixed number of places in its queue: when both are taken, `reserve()` says so
and the user is told "busy, try again in a moment" instead of waiting behind a queue that only grows.
"""

from __future__ import annotations

import collections
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

log = logging.getLogger("gpu_assist.slack")


class WorkPool:
    """`threads` threads and at most `queued` more tasks waiting; a place is reserved before the ack."""

    def __init__(self, threads: int, queued: int, name: str = "gpu-assist-work"):
        self.capacity = threads + queued
        self._places = threading.BoundedSemaphore(self.capacity)
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)

    def reserve(self) -> "Reservation | None":
        """A place in the pool, or None when it is full (never blocks: the caller is answering Slack)."""
        return Reservation(self) if self._places.acquire(blocking=False) else None

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        except Exception:  # noqa: BLE001 - one failed task is logged; the pool keeps serving
            log.exception("background work failed")
        finally:
            self._places.release()

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=False)


class Reservation:
    """One reserved place: `start(work)` uses it, `cancel()` gives it back unused."""

    def __init__(self, pool: WorkPool):
        self._pool, self._used = pool, False

    def start(self, work: Callable[[], None]) -> None:
        assert not self._used, "a reservation runs one task"
        self._used = True
        self._pool._executor.submit(self._pool._run, work)

    def cancel(self) -> None:
        if not self._used:
            self._used = True
            self._pool._places.release()


class Deliveries:
    """The last `kept` requests seen, so a Slack retry of one already being handled is not run again.

    A slash command's `response_url` is unique per invocation (a button's `trigger_id` per click), and a
    retry carries the same body: that is the key. Memory is per process; see README for several workers.
    """

    def __init__(self, kept: int = 10_000):
        self._seen: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._kept = kept
        self._lock = threading.Lock()

    def first(self, key: str | None, retry_num: str | None) -> bool:
        """Record `key`; False only for a retry (`retry_num` set) of a key already recorded."""
        if not key:
            return True
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return not retry_num
            self._seen[key] = None
            while len(self._seen) > self._kept:
                self._seen.popitem(last=False)
            return True
