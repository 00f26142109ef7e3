"""A bare clone must build, test and run alone: no tracked file may reach outside the repository."""

from __future__ import annotations

import re
import subprocess

from support import REPO

# `../shared` spelled as a path, or the parent of the repository reached through pathlib.
OUTSIDE = re.compile(r"\.\./shared|\.parent\s*/\s*[\"']shared[\"']|\bREPO\.parent\b")
# The one place allowed to name it: the maintainer's copy step and the docs that explain it.
ALLOWED = {"Makefile", "catalogs/SOURCES.md", "README.md", "CONTRIBUTING.md", "tests/unit/test_self_contained.py"}


def _tracked() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    return [name for name in listed.stdout.split("\0") if name]


def test_no_tracked_file_reads_the_shared_folder_beside_the_clone():
    offenders = []
    for name in _tracked():
        path = REPO / name
        if name in ALLOWED or path.is_symlink() or not path.is_file() or path.suffix in {".csv", ".json", ".lock"}:
            continue
        text = path.read_text(errors="replace")
        offenders += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]
    assert offenders == []


def test_no_tracked_symlink_points_outside_the_repository():
    outside = []
    for name in _tracked():
        path = REPO / name
        if path.is_symlink() and not path.resolve().is_relative_to(REPO):
            outside.append(name)
    assert outside == []
