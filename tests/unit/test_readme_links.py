"""The README is the short front door (at most ~150 lines) and every relative link in it reaches a file of the
repository (GitHub shows it; `mkdocs build --strict`, in `make lint`, checks the links between the site's pages)."""

from __future__ import annotations

import re

from support import REPO

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def _relative_links(text: str) -> list[str]:
    return [target for target in LINK.findall(text) if "://" not in target and not target.startswith("mailto:")]


def test_the_readme_is_short():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 150


def test_every_link_of_the_readme_reaches_a_file():
    missing = [target for target in _relative_links((REPO / "README.md").read_text(encoding="utf-8"))
               if not (REPO / target).is_file()]
    assert missing == []

