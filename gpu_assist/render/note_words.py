"""The generic every fact's words are registered on (`words`), and the facts whose words never change. The words
of the other facts sit in `catalog_notes`, `quote_notes` and `plan_notes`; `render/notes.py` imports them all."""

from __future__ import annotations

from collections.abc import Iterable
from functools import singledispatch

from .. import facts as f


@singledispatch
def words(fact: object) -> str:
    """The sentence a reader sees for `fact`."""
    raise TypeError(f"no words for {type(fact).__name__}")


# Facts without fields: always the same words.
_CONSTANT = {
    f.DateUnknown: "price date unknown",
    f.PcieOnly: "GPUs linked over PCIe only (no NVLink)",
    f.SpotInterruption: "spot: may be interrupted; checkpoint your job",
    f.MonthlyBilling: "monthly subscription: billed per whole month (730 h)",
    f.Fastest: "the fastest plan",
    f.OwnHardware: "own hardware: marginal cost 0 (power and operations not counted; see `tco`)",
    f.Hybrid: "hybrid: develop here, burst to the cloud plans below for deadlines",
}
for _type in _CONSTANT:
    words.register(_type, lambda fact: _CONSTANT[type(fact)])


def said(notes: Iterable[object]) -> list[str]:
    """The words of each fact, in order."""
    return [words(note) for note in notes]
