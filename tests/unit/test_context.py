"""`commands.Context` builds each shared object once, however many threads ask for it at the same instant."""

from __future__ import annotations

import threading
import time

from gpu_assist.commands import Context


def test_twenty_threads_asking_at_once_build_each_shared_object_once():
    built = {"catalog": 0, "approvals": 0, "sampler": 0}

    def slow(name, value):
        def build(*_):
            built[name] += 1
            time.sleep(0.05)  # long enough for every thread to arrive while the first is building
            return value
        return build

    context = Context(catalog_loader=slow("catalog", "catalog"), approvals_factory=slow("approvals", "approvals"),
                      sampler_factory=slow("sampler", "sampler"))
    gate = threading.Barrier(20)
    seen = []

    def ask():
        gate.wait()
        seen.append((context.approvals, context.catalog, context.sampler))

    threads = [threading.Thread(target=ask) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert built == {"catalog": 1, "approvals": 1, "sampler": 1}
    assert set(seen) == {("approvals", "catalog", "sampler")}


def test_prepare_builds_the_catalog_and_the_approvals_before_anyone_asks():
    calls = []
    context = Context(catalog_loader=lambda: calls.append("catalog") or "catalog",
                      approvals_factory=lambda ctx: calls.append("approvals") or "approvals")
    assert context.prepare() is context and calls == ["catalog", "approvals"]
    context.approvals, context.catalog  # noqa: B018 - already built: nothing more is called
    assert calls == ["catalog", "approvals"]
