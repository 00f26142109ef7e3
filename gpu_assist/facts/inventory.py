"""The list of every fact, by domain, that docs/ARCHITECTURE.md shows (`make docs`): written from the classes
themselves, so the page cannot drift from the code (`tests/unit/test_facts.py` writes it again and compares). Pure.

Run as `python -m gpu_assist.facts.inventory docs/ARCHITECTURE.md`."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from types import ModuleType

from ..doc_blocks import with_block
from . import catalog, commitment, empty_quote, notice, option, plan
from .fact import Fact

DOMAINS = (catalog, option, notice, empty_quote, plan, commitment)  # in the order the page lists them
BEGIN = "<!-- facts: from gpu_assist/facts/ (make docs) -->"
END = "<!-- end of the facts -->"
_TRAITS = ("untrusting", "about_trust", "of_model")


def _first_sentence(doc: str | None) -> str:
    """A docstring's first sentence, on one line, with its table pipes escaped."""
    text = " ".join((doc or "").split())
    return text.split(". ")[0].rstrip(".").replace("|", "\\|")


def declared(domain: ModuleType) -> list[type]:
    """The fact classes and enums a domain module declares, in the order it declares them."""
    return [value for value in vars(domain).values() if isinstance(value, type) and value.__module__ == domain.__name__
            and (issubclass(value, (Fact, Enum)))]


def _traits(kind: type) -> str:
    if not issubclass(kind, Fact):
        return "enum"
    return ", ".join(trait for trait in _TRAITS if getattr(kind, f"_{trait}"))


def markdown() -> str:
    """One table per domain: each fact, what it says, and the traits the core decides by."""
    parts = []
    for domain in DOMAINS:
        name = domain.__name__.rpartition(".")[2]
        parts += [f"**`facts/{name}.py`**: {_first_sentence(domain.__doc__)}.", "",
                  "| fact | says | traits |", "|---|---|---|"]
        parts += [f"| `{kind.__name__}` | {_first_sentence(kind.__doc__)} | {_traits(kind)} |"
                  for kind in declared(domain)]
        parts.append("")
    return "\n".join(parts).rstrip("\n")


def with_inventory(document: str) -> str:
    """`document` with the text between the markers replaced by `markdown()`."""
    return with_block(document, BEGIN, END, markdown())


if __name__ == "__main__":  # `make docs`: python -m gpu_assist.facts.inventory docs/ARCHITECTURE.md
    path = Path(sys.argv[1])
    path.write_text(with_inventory(path.read_text(encoding="utf-8")), encoding="utf-8")
