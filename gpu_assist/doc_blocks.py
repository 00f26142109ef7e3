"""A block of a documentation page that code writes (`make docs`): the text between two HTML comment markers, so
a table declared in code (the request states, the facts) is shown exactly as declared, and a test can tell when the
page is stale by writing it again and comparing. Pure."""

from __future__ import annotations


def with_block(document: str, begin: str, end: str, text: str) -> str:
    """`document` with the text between the `begin` and `end` markers replaced by `text`."""
    head, found, rest = document.partition(begin)
    _, ended, tail = rest.partition(end)
    if not (found and ended):
        raise ValueError(f"the document has no {begin} … {end} block")
    return f"{head}{begin}\n{text}\n{end}{tail}"
