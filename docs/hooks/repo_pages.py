"""mkdocs hook: pages of the site that live outside docs/, read where they are, so nothing is copied twice.

CONTRIBUTING.md (at the repository's root, where GitHub shows it) becomes contributing.md, its links to
docs/… made relative to the site; catalogs/SOURCES.md (next to the data it describes, and rewritten by
`gpu-assist catalog refresh`) becomes catalog-sources.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

# site page ← file in the repository, and the prefix its links carry that the site has not
PAGES = {"contributing.md": ("CONTRIBUTING.md", "](docs/"), "catalog-sources.md": ("catalogs/SOURCES.md", None)}


def on_files(files: Files, config: Any) -> Files:
    root = Path(config["config_file_path"]).parent
    for page, (source, prefix) in PAGES.items():
        text = (root / source).read_text(encoding="utf-8")
        if prefix:
            text = text.replace(prefix, "](")
        files.append(File.generated(config, page, content=text))
    return files
