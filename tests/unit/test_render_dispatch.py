"""A renderer registered for a type by name dispatches as if it had imported the type's module (#17, #21)."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from functools import singledispatch

import pytest

from gpu_assist.render.dispatch import register_by_name, register_imported


@pytest.fixture
def late_module():
    """A module that is not imported yet: its name, and a function that imports it (puts it in sys.modules)."""
    name = "gpu_assist_test_late_result"
    assert name not in sys.modules

    def load() -> type:
        module = types.ModuleType(name)

        @dataclass
        class LateResult:
            value: int

        LateResult.__module__ = name
        module.LateResult = LateResult  # type: ignore[attr-defined]
        sys.modules[name] = module
        return LateResult

    yield name, load
    sys.modules.pop(name, None)


def _renderer():
    @singledispatch
    def render(result: object) -> str:
        if register_imported(render):
            return render(result)
        raise TypeError(f"no renderer for {type(result).__name__}")

    return render


def test_a_type_named_before_its_module_is_imported_is_rendered_once_it_is(late_module):
    name, load = late_module
    render = _renderer()

    @register_by_name(render, f"{name}.LateResult")
    def _late(result) -> str:
        return f"late {result.value}"

    assert set(render.registry) == {object}  # nothing registered for it yet
    late_result = load()
    assert render(late_result(3)) == "late 3"
    assert render.dispatch(late_result) is _late  # registered for the class itself: the next call dispatches at once
    with pytest.raises(TypeError, match="no renderer for int"):
        render(3)


def test_a_type_whose_module_is_already_imported_is_registered_at_once(late_module):
    name, load = late_module
    late_result = load()
    render = _renderer()

    @register_by_name(render, f"{name}.LateResult")
    def _late(result) -> str:
        return "late"

    assert render.registry[late_result] is _late


def test_every_result_type_of_the_renderers_resolves():
    """Each by-name registration names a class that exists: a typo would otherwise only show as 'no renderer'."""
    from gpu_assist.fleet import FleetReport
    from gpu_assist.recommendation import Recommendation
    from gpu_assist.records import RequestRecord
    from gpu_assist.render import csv, json, markdown, operations, text  # noqa: F401 - operations registers on import
    from gpu_assist.spending import SpendReport
    from gpu_assist.tco import TcoResult
    from gpu_assist.nvml import Snapshot

    for generic in (text.render, json.payload):
        register_imported(generic)
        for cls in (Recommendation, TcoResult, Snapshot, FleetReport, RequestRecord, SpendReport):
            assert cls in generic.registry, (generic, cls)
    for generic in (csv.render, markdown.render):
        register_imported(generic)
        assert Recommendation in generic.registry


def test_the_first_answers_after_a_start_render_together():
    """Twenty threads render, at once, in a fresh process, results whose text functions are registered by name
    and live in a module imported on first need: each gets its text. (A thread that found the function just
    registered by another used to be told there was none: `requests: no answer` on a fresh Slack server.)"""
    import subprocess

    code = """
import threading
from gpu_assist.render.text import render
from gpu_assist.nvml import Snapshot
barrier, answers = threading.Barrier(20), []
def one(n):
    barrier.wait()
    answers.append(render(() if n % 2 else Snapshot(taken_at=0.0, reason="none here")))
threads = [threading.Thread(target=one, args=(n,)) for n in range(20)]
for t in threads: t.start()
for t in threads: t.join()
print(sorted(set(answers)), len(answers))
"""
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert done.stdout.strip() == "['no GPUs: none here', 'no requests'] 20", done.stderr[-2000:]
