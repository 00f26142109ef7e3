"""Counted nouns as people write them: "1 option", "2 options"."""

from __future__ import annotations


def plural(count: int, noun: str, plural_noun: str | None = None) -> str:
    """`count` and `noun`, the noun in the plural unless the count is exactly one (`0 options`, `1 option`)."""
    return f"{count:,} {noun if count == 1 else plural_noun or noun + 's'}"
