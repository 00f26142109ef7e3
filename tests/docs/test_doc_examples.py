"""Every fenced block of README.md, CONTRIBUTING.md and docs/*.md runs as the page shows it, or the page says why
not (`tests/docs/doc_examples.py`): commands with the output shown compared, Python run, policy snippets read."""

from __future__ import annotations

import pytest
from doc_examples import Skipped, examples

# What the pages show is what a user gets on support.TODAY: every command reads the date as a user's run does.
pytestmark = pytest.mark.usefixtures("pinned_wall_clock", "documented_environment")

EXAMPLES = examples()


@pytest.fixture
def documented_environment(monkeypatch, tmp_path):
    """A user's shell with no gpu-assist settings: no currency, policy, user or store of the caller's; the request
    store a fresh SQLite file."""
    import os

    for name in [n for n in os.environ if n.startswith("GPU_ASSIST_") and not n.startswith("GPU_ASSIST_TEST_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path}/state.db")
    monkeypatch.delenv("COLUMNS", raising=False)  # the pages show answers as a pipe gets them: 100 columns
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("example", [e for _, e in EXAMPLES], ids=[name for name, _ in EXAMPLES])
def test_the_example_runs_as_the_page_shows(example):
    try:
        example.evaluate()
    except Skipped as why:
        pytest.skip(f"not run: {why}")
