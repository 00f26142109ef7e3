"""Golden output: the exact words, numbers and Block Kit a user sees, pinned before a refactor.

`make golden` (GPU_ASSIST_GOLDEN_UPDATE=1) rewrites the files in expected/; a commit that does so must say why
the output changed. Without it a difference fails with a unified diff.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

EXPECTED = Path(__file__).parent / "expected"


@pytest.fixture
def golden():
    def check(name: str, actual: str) -> None:
        path = EXPECTED / name
        if os.environ.get("GPU_ASSIST_GOLDEN_UPDATE") == "1":
            path.write_text(actual, encoding="utf-8")
            return
        assert path.exists(), f"no golden file {path.name}: run `make golden` and commit it"
        expected = path.read_text(encoding="utf-8")
        if actual != expected:
            diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                                f"expected/{name}", "actual", n=2))
            pytest.fail(f"output of {name} changed (run `make golden` if intended):\n{diff[:6000]}")
    return check
