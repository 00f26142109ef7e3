"""The checks `test_doc_examples.py` runs: a page whose shown output differs from the tool's fails, `…` stands for
lines left out, what varies from run to run is normalised, and a block that neither runs nor says why fails."""

from __future__ import annotations

import pytest
from doc_examples import REPO, SYBIL, Skipped, matches, normalise
from sybil import Document
from sybil.example import SybilFailure

pytestmark = pytest.mark.usefixtures("pinned_wall_clock")


def _examples(text: str) -> list:
    document = Document(text, str(REPO / "page.md"))
    for parser in SYBIL.parsers:
        for region in parser(document):
            document.add(region)
    return list(document.examples())


def test_a_line_of_only_an_ellipsis_stands_for_any_lines():
    assert matches(["a", "…"], ["a", "b", "c"]) and matches(["a", "…"], ["a"])
    assert matches(["a", "  …", "d"], ["a", "b", "c", "d"]) and not matches(["a", "…", "d"], ["a", "b"])
    assert not matches(["a", "b"], ["a", "b", "c"])  # without one, every line is shown
    assert not matches(["a 1…"], ["a 1 2"])  # a name the tool cut with … is compared as it is


def test_ids_dates_and_ages_are_normalised():
    assert normalise("r-0123456789ab at 2026-12-02T12:00:03Z, i-0abc12345678 (176 days old)  \n\n") == \
        ["r-<id> at <date>, i-<id> (<age> old)"]


def test_a_changed_figure_in_a_pages_output_fails_it():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    figure = "$806.40*"  # a total the README's shown quote prints (make docs writes it from the tool)
    assert figure in readme
    shown = [e for e in _examples(readme) if e.parsed.lines[:1] == ["$ gpu-assist quote 8xA100 72h"]]
    assert len(shown) == 1
    shown[0].evaluate()  # as the page is: it runs
    broken = [e for e in _examples(readme.replace(figure, "$806.41*"))
              if e.parsed.lines[:1] == ["$ gpu-assist quote 8xA100 72h"]]
    with pytest.raises(SybilFailure, match=r"(?s)-2 .*\$806\.41\*.*\+2 .*\$806\.40\*"):
        broken[0].evaluate()


def test_a_command_that_fails_fails_its_page(monkeypatch):
    monkeypatch.delenv("GPU_ASSIST_CURRENCY", raising=False)
    (bad,) = _examples("```\ngpu-assist quote 8xA1000 72h   a typo\n```\n")
    with pytest.raises(SybilFailure, match="(?s)exited 2.*unknown GPU .A1000."):
        bad.evaluate()
    (slack,) = _examples("```\n/gpu quote 8xA100 72h regoin=eu\n```\n")
    with pytest.raises(SybilFailure, match="answered an error"):
        slack.evaluate()


def test_a_block_that_neither_runs_nor_says_why_fails_and_one_that_says_is_skipped():
    unmarked, marked = _examples("```\nsome text\n```\n\n<!-- not run: needs a Slack token -->\n```\nmake x\n```\n")
    with pytest.raises(SybilFailure, match="neither runs nor says why"):
        unmarked.evaluate()
    with pytest.raises(Skipped, match="needs a Slack token"):
        marked.evaluate()


def test_a_synopsis_is_not_taken_for_a_command():
    (synopsis,) = _examples("```\ngpu-assist util [--watch]\n```\n")
    with pytest.raises(ValueError, match="a synopsis, not a command"):
        synopsis.evaluate()
