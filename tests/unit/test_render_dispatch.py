"""Every result a verb gives has a renderer in each medium that takes it, registered with plain
`functools.singledispatch` by the module that holds it: quotes in each medium's own module, plans in
`render/plans.py`, what runs and what it costs in `render/operations.py`. A face imports those two with the verbs
that need them; a quote imports neither (tests/unit/test_cold_path.py)."""

from __future__ import annotations

import pytest

from gpu_assist.clouds.fleet import FleetReport
from gpu_assist.commands.objects import HelpCommand, RequestDetail
from gpu_assist.errors import GpuAssistError
from gpu_assist.host.nvml import Snapshot
from gpu_assist.lifecycle.records import RequestRecord
from gpu_assist.plan.recommendation import Recommendation
from gpu_assist.plan.tco import TcoResult
from gpu_assist.pricing.compare import Comparison
from gpu_assist.pricing.quote import Quote
from gpu_assist.render import csv, json, markdown, operations, plans, text  # noqa: F401 - they register
from gpu_assist.team.budgets import BudgetStatus  # noqa: F401 - a type the spend report's JSON carries
from gpu_assist.team.commitments import CommitmentAdvice
from gpu_assist.team.spending import SpendReport

RESULTS = (Quote, Comparison, HelpCommand, Recommendation, TcoResult, Snapshot, FleetReport, RequestRecord,
           RequestDetail, SpendReport, CommitmentAdvice, tuple)


@pytest.mark.parametrize("generic", [text.render, json.payload], ids=["text", "json"])
def test_every_result_type_has_a_text_and_a_json_renderer(generic):
    missing = [cls.__name__ for cls in RESULTS if generic.dispatch(cls) is generic.registry[object]]
    assert not missing


@pytest.mark.parametrize("medium", [csv, markdown], ids=["csv", "markdown"])
def test_tables_take_quotes_and_plans_and_refuse_the_rest_clearly(medium):
    for cls in (Quote, Comparison, Recommendation):
        assert medium.render.dispatch(cls) is not medium.render.registry[object], cls
    with pytest.raises(GpuAssistError, match="is for quote and recommend"):
        medium.render(Snapshot(taken_at=0.0, reason="none here"))


def test_a_type_no_module_registered_is_refused_by_name():
    class Unknown:
        pass

    with pytest.raises(TypeError, match="no text renderer for Unknown"):
        text.render(Unknown())
    with pytest.raises(TypeError, match="no JSON renderer for Unknown"):
        json.payload(Unknown())


_FACE_CHECK = """
import sys
from gpu_assist.render import json, text
__import__(sys.argv[1])
from gpu_assist.team.commitments import CommitmentAdvice
from gpu_assist.clouds.fleet import FleetReport
from gpu_assist.host.nvml import Snapshot
from gpu_assist.plan.recommendation import Recommendation
from gpu_assist.lifecycle.records import RequestRecord
from gpu_assist.team.spending import SpendReport
from gpu_assist.plan.tco import TcoResult
generic = {"text": text.render, "json": json.payload}[sys.argv[2]]
types = (Recommendation, TcoResult, Snapshot, FleetReport, RequestRecord, SpendReport, CommitmentAdvice)
print(sorted(t.__name__ for t in types if generic.dispatch(t) is generic.registry[object]))
"""


@pytest.mark.slow  # a fresh process per face
@pytest.mark.parametrize("face, medium", [("slackbot.blocks", "text"), ("gpu_assist.jupyter.routes", "json"),
                                          ("gpu_assist.jupyter.panels", "text")])
def test_a_face_that_shows_every_verb_registers_every_renderer_it_needs(face, medium):
    """A face answers any verb, so the module that renders for it imports `render.plans` and
    `render.operations` itself: in a fresh process that imports only it, no result lacks a renderer (Slack's
    `/gpu tco` is the TCO's text)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FACE_CHECK, face, medium], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "[]", done.stderr[-2000:]
