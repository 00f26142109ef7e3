"""mkdocs hooks: pages of the site that live outside docs/, read where they are, so nothing is copied twice; and
lists written as GitHub reads them.

CONTRIBUTING.md (at the repository's root, where GitHub shows it) becomes contributing.md, its links to
docs/… made relative to the site; catalogs/SOURCES.md (next to the data it describes, and rewritten by
`gpu-assist catalog refresh`) becomes catalog-sources.md. A page links to either as the file on disk
(`../CONTRIBUTING.md`), so the link works on GitHub and in a clone too; `on_page_markdown` points it at the page.

GitHub starts a list right after a paragraph's line ("Four modules, one job each:" then "- `states.py`…");
Python-Markdown needs a blank line first, or the items run into the paragraph. `on_page_markdown` adds it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

# site page ← file in the repository, and the prefix its links carry that the site has not
ITEM = re.compile(r"(?:[-*]|\d+\.) ")
PAGES = {"contributing.md": ("CONTRIBUTING.md", "](docs/"), "catalog-sources.md": ("catalogs/SOURCES.md", None)}
# a page's link to such a file, as written in docs/ (relative to the file on disk) → the page of the site
ON_DISK = {f"](../{source}": f"]({page}" for page, (source, _) in PAGES.items()}


def on_files(files: Files, config: Any) -> Files:
    root = Path(config["config_file_path"]).parent
    for page, (source, prefix) in PAGES.items():
        text = (root / source).read_text(encoding="utf-8")
        if prefix:
            text = text.replace(prefix, "](")
        files.append(File.generated(config, page, content=text))
    return files


def on_page_markdown(markdown: str, **_: Any) -> str:
    for on_disk, page in ON_DISK.items():
        markdown = markdown.replace(on_disk, page)
    lines: list[str] = []
    in_code = in_list = False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code:
            if ITEM.match(line) and not in_list and lines and lines[-1].strip():
                lines.append("")
            in_list = bool(line.strip()) and (in_list or bool(ITEM.match(line)))
        lines.append(line)
    return "\n".join(lines)
