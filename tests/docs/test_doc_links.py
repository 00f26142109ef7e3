"""Every relative link of the pages reaches a file on disk (GitHub and a clone read them there), and the site built
from them has no broken link or anchor (`mkdocs build --strict`, the build `make lint` runs, here into a temporary
folder)."""

from __future__ import annotations

import re

from doc_examples import PAGES, REPO

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.S | re.M)


def _relative_links(text: str) -> list[str]:
    """Link targets outside code blocks that point into the repository (not a URL, a mail address or an anchor)."""
    return [target.split("#")[0] for target in LINK.findall(FENCED.sub("", text))
            if "://" not in target and not target.startswith(("mailto:", "#"))]


def test_every_link_of_every_page_reaches_a_file_on_disk():
    missing = [f"{page}: {target}" for page in PAGES
               for target in _relative_links((REPO / page).read_text(encoding="utf-8"))
               if not (REPO / page).parent.joinpath(target).exists()]
    assert missing == []


def test_the_links_finder_sees_a_broken_link():
    assert _relative_links("see [x](gone.md#a), [y](https://example.com), [z](#here)\n```\n[w](code.md)\n```") \
        == ["gone.md"]


def test_the_site_builds_with_every_link_and_anchor_reached(tmp_path):
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    config = load_config(config_file=str(REPO / "mkdocs.yml"), strict=True, site_dir=str(tmp_path / "site"))
    build(config)  # strict: a link to a missing page or anchor aborts the build
    assert (tmp_path / "site" / "contributing" / "index.html").is_file()
    quickstart = (tmp_path / "site" / "quickstart" / "index.html").read_text(encoding="utf-8")
    assert 'href="../contributing/"' in quickstart  # ../CONTRIBUTING.md on disk is the site's page
