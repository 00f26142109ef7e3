"""Work after the ack: a bounded pool of threads, and the memory of which Slack requests were delivered.

Slack gives an app 3 seconds to answer a request and retries one that was not answered in time
(`X-Slack-Retry-Num`). The app therefore acks at once and hands the work here. The pool has a fixed
number of threads and a fixed number of places in its queue: when both are taken, `reserve()` says so
and the user is told "busy, try again in a moment" instead of waiting behind a queue that only grows.
The server asks `shed()` before Bolt sees a command, so a full pool costs a refused command almost nothing.

Retries: a command that only reads (a quote, a plan) is remembered per process (`Deliveries`): a retry
that reaches another worker or replica computes the same answer again, which is harmless. A command
that changes something (launch, stop, anything that posts a card) is claimed in the database
(`claim_delivery`), so it runs once across every process and replica on that database.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import hashlib
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    from gpu_assist.store import Store

log = logging.getLogger("gpu_assist.slack")
DELIVERY = "slack-delivery"
DELIVERY_KEPT = dt.timedelta(days=1)


class WorkPool:
    """`threads` threads and at most `queued` more tasks waiting; a place is reserved before the ack.

    Of the threads, at most `computing` compute at once (`computing()` around the CPU-bound part): the GIL
    lets one thread of a process run Python at a time, so more computing threads do not answer sooner, they
    only make the threads that ack wait longer for their turn. The others wait on the network (an answer
    on its way to Slack, AWS, the database), which needs no turn. `taken` and `refused` (places in use,
    commands answered "busy") are what `/healthz` reports."""

    def __init__(self, threads: int, queued: int, name: str = "gpu-assist-work", computing: int = 2):
        self.capacity = threads + queued
        self.taken = self.refused = 0
        self._lock = threading.Lock()
        self._computing = threading.BoundedSemaphore(computing)
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)

    @contextlib.contextmanager
    def computing(self) -> Iterator[None]:
        """Held while a task computes; a task waiting here waits in line without taking the GIL."""
        with self._computing:
            yield

    def reserve(self) -> "Reservation | None":
        """A place in the pool, or None when it is full (never blocks: the caller is answering Slack)."""
        with self._lock:
            if self.taken >= self.capacity:
                self.refused += 1
                return None
            self.taken += 1
        return Reservation(self)

    def shed(self) -> bool:
        """True, and counted as refused, when the pool is full now: the server answers "busy" before Bolt."""
        with self._lock:
            if self.taken < self.capacity:
                return False
            self.refused += 1
            return True

    def _release(self) -> None:
        with self._lock:
            self.taken -= 1

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        except Exception:  # noqa: BLE001 - one failed task is logged; the pool keeps serving
            log.exception("background work failed")
        finally:
            self._release()

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
            self._pool._release()


class Deliveries:
    """The last `kept` requests seen by this process, so a Slack retry of one being handled is not run again.

    A slash command's `response_url` is unique per invocation (a button's `trigger_id` per click), and a
    retry carries the same body: that is the key. For commands that only read; see `claim_delivery`.
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


def claim_delivery(store: Store, key: str | None, now: dt.datetime) -> bool:
    """True for exactly one delivery of `key` among every process and replica sharing `store`'s database.

    A row in the store's `notices` table (a primary-key insert, `Store.post_once`) under a hash of the key,
    kept like the other notices: a retry, a replay within Slack's five minutes, or the same request
    reaching two replicas finds it taken. A first delivery takes it too, so a request another process
    took but never retried is not run twice either. Without a key there is nothing to claim by: it runs."""
    if not key:
        return True
    digest = hashlib.sha256(key.encode()).hexdigest()
    return store.post_once(f"{DELIVERY}:{digest}", DELIVERY, now=now)


def prune_deliveries(store: Store, now: dt.datetime) -> int:
    """Forget delivery claims older than `DELIVERY_KEPT`, so the table does not grow with every command ever
    given; how many went. Slack retries within minutes and the server refuses a request signed more than five
    minutes ago (`server.MAX_SKEW_S`), so no delivery that old can arrive again."""
    return store.forget_before(DELIVERY, now - DELIVERY_KEPT)
