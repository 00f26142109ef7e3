"""The words of the core's facts (`gpu_assist.facts`): one function per fact type, for every medium.

Text, Slack, JSON, CSV, Markdown and the notebook's frames show a note in the same words, so one function per
type serves them all (`words`); a medium that needs other words registers its own generic over the same types.
A fact type without a function is a `TypeError` at its first render; `tests/unit/test_facts.py` checks that
every fact type has one. The functions sit by domain, as the facts do: `catalog_notes` (the catalogs' facts and
an option's notes), `quote_notes` (a quote's notices and why it is empty), `plan_notes` (a plan's reasons and
commitments); this module imports them all, so `words` knows every type once it is imported.
"""

from __future__ import annotations

from . import plan_notes, quote_notes  # noqa: F401 - they register the words of their facts on `words`
from .catalog_notes import where
from .note_words import said, words

__all__ = ["said", "where", "words"]
