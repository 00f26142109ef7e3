"""Text tables for every text medium: `table` (aligned columns) and `text_table` (the terminal's width, numbers
whole, colour on a terminal).

Widths are terminal cells (`display_width`: a CJK character takes two), so a Chinese request lines up too.
`text_table` lays its columns out itself rather than through `rich`'s table: rich folds any column, a money
figure or a footnote marker included, when a table is too wide, and a reader cannot tell `$130,733,55` from a
price. Here what must stay whole is never narrowed (ranks, money, times), names fold onto more lines in the order
the caller gives (never cut: a name cut short can be another's), and note markers fold only between markers.

The width is the medium's: 100 columns unless the face says otherwise for one answer (`at_width`; the CLI says
the terminal's). A context variable rather than a parameter, as every layout helper and every renderer of every
result type reads it, and each would otherwise pass it on.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

WIDTH = 100  # what a medium that does not say (Slack's monospaced blocks, a notebook, a pipe) is laid out in
NARROWEST = 40  # a terminal narrower than this is laid out at this, wider than it is
_WIDTH: ContextVar[int] = ContextVar("text_width", default=WIDTH)
_BREAKS = "-_./,:"  # a name folds after one of these (or at a space) where it can; else where the column ends
_WORD = re.compile(r"[^\s\-_./,:]+[\-_./,:]*|[\-_./,:]+")  # what a name folds between: `us-` `central1`


def width() -> int:
    """The columns text is laid out in now: `WIDTH`, or what `at_width` says."""
    return _WIDTH.get()


@contextmanager
def at_width(columns: int) -> Iterator[None]:
    """Text rendered inside is laid out in `columns` (at least `NARROWEST`)."""
    token = _WIDTH.set(max(NARROWEST, columns))
    try:
        yield
    finally:
        _WIDTH.reset(token)
# The escape codes rich printed for these styles on a standard-colour terminal (bold; bold green).
_BOLD, _BEST, _RESET = "\x1b[1m", "\x1b[1;32m", "\x1b[0m"


@lru_cache(maxsize=4096)  # a table measures its cells again for each layout it tries
def display_width(text: str) -> int:
    """Terminal cells `text` takes: wide and full-width East Asian characters two, combining marks none."""
    if text.isascii():
        return len(text)
    cells = len(text)
    for character in text:
        if character >= "\u0300":  # no combining mark or wide character comes before (×, ¥, é are one cell)
            if unicodedata.combining(character):
                cells -= 1
            elif unicodedata.east_asian_width(character) in "WF":
                cells += 1
    return cells


def fits(text: str, columns: int | None = None) -> bool:
    """Whether every line of `text` fits `columns` terminal cells (default: the width now)."""
    limit = width() if columns is None else columns
    return all(display_width(line) <= limit for line in text.splitlines())


def _pad(text: str, width: int, right: bool) -> str:
    space = " " * max(0, width - display_width(text))
    return space + text if right else text + space


def table(headers: list[str], rows: list[list[str]], right: frozenset[int] | set[int] = frozenset()) -> str:
    """Columns padded to their widest cell; columns in `right` aligned right."""
    widths = [max(display_width(str(cell)) for cell in column) for column in zip(headers, *rows)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(_pad(str(c), w, i in right) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], **layout: Any) -> str:
    """Rows as a borderless table, one space between columns, within the width (`width()`) where the caller
    allows it (`layout`, the keywords of `fitting_table`):

    - `whole` columns (ranks, money, times) are never narrowed, cut or folded, and headers never are;
    - `clip` maps a column to the widest it may be: longer cells fold onto more lines, at a space or after a
      dash, underscore, dot, slash, comma or colon where one falls, else where the column ends;
    - `narrow` are the steps taken, in order, while the table is wider than the width: (column, narrowest);
      a `fold` column folds its cells only after a comma (note markers `1,2,10` break between markers, never
      in one), any other as `clip` folds;
    - `sections` are more row groups, each after a heading line and laid out on its own;
    - `right` columns are aligned right; with `color`, headers are bold and cells ending in `highlight` bold
      green.

    A table still too wide after every step is printed wider: nothing is cut that the caller did not allow.
    """
    return fitting_table(headers, rows, or_wider=True, **layout) or ""


def fitting_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Collection[int] = (),
                  color: bool = False, sections: Iterable[tuple[str, Sequence[Sequence[str]]]] = (),
                  highlight: str = "", whole: Collection[int] = (), clip: Mapping[int, int] | None = None,
                  narrow: Sequence[tuple[int, int]] = (), fold: Collection[int] = (),
                  or_wider: bool = False) -> str | None:
    """`text_table`, or None where it would be wider than the width (unless `or_wider`), known from the
    column widths before any line is laid out: a caller trying layouts in turn lays out only the one that fits."""
    clip = clip or {}
    groups = [("", rows), *((heading, body) for heading, body in sections if body)]
    widths = [_widths(headers, body, whole, clip, narrow, fold) for _, body in groups]
    if not or_wider and any(sum(w) + len(w) - 1 > width() for w in widths):
        return None
    lines: list[str] = []
    for (heading, body), group_widths in zip(groups, widths):
        if heading:
            lines.append(f"{_BOLD}{heading}{_RESET}" if color else heading)
        lines += _lines(headers, body, group_widths, right, color, highlight, fold)
    return "\n".join(lines)


def _pieces(cell: str, columns: int, markers: bool) -> list[str]:
    """A cell as the lines it takes in a column `columns` cells wide: note markers folded between markers, any
    other cell at a space or after a break (`_BREAKS`) where one falls, else where the column ends."""
    if display_width(cell) <= columns:
        return [cell]
    if markers:
        parts = cell.split(",")
        pieces = [""]
        for index, part in enumerate(parts):
            token = part if index == len(parts) - 1 else part + ","
            if pieces[-1] and display_width(pieces[-1] + token) > columns:
                pieces.append("")
            pieces[-1] += token
        return pieces
    pieces, rest = [], cell
    while display_width(rest) > columns:
        head = ""
        for character in rest:
            if display_width(head + character) > columns:
                break
            head += character
        head = head or rest[0]  # a column narrower than one wide character: one a line
        # (where this piece ends, where the next starts): at a space (dropped) or after a break character
        ends = [(at, at + 1) for at, character in enumerate(head) if character == " " and at > 0] + \
               [(at + 1, at + 1) for at, character in enumerate(head) if character in _BREAKS]
        if rest[len(head):len(head) + 1] == " ":  # the piece ends right before a space
            ends.append((len(head), len(head) + 1))
        ends.sort()
        # the last end, unless it leaves a scrap (`us-east-` then `2`) and an earlier one does not
        usable = [end for end in ends if display_width(rest[end[1]:]) > 2] or ends
        end, start = usable[-1] if usable else (len(head), len(head))
        start += rest[start:start + 1] == " "  # `Oklahoma, US,` then `NA`, not ` NA`
        pieces.append(head[:end])
        rest = rest[start:]
    return [*pieces, rest] if rest else pieces


def _widths(headers: Sequence[str], body: Sequence[Sequence[str]], whole: Collection[int], clip: Mapping[int, int],
            narrow: Sequence[tuple[int, int]], fold: Collection[int]) -> list[int]:
    """Each column's width: its widest cell (clipped columns at most their limit, never below the header),
    narrowed by the `narrow` steps while the table is wider than the width, each no narrower than its header,
    its widest note marker or its longest word (then, where that is not enough, inside words)."""
    widths = [display_width(h) for h in headers]
    for row in body:
        widths = [max(w, display_width(cell)) for w, cell in zip(widths, row)]
    widths = [min(w, max(clip[i], display_width(headers[i]))) if i in clip else w for i, w in enumerate(widths)]
    excess = sum(widths) + len(widths) - 1 - width()
    for inside_words in (False, True):  # a name folds inside a word only where between words is not enough
        for column, narrowest in narrow:
            if excess <= 0:
                break
            assert column not in whole, f"column {column} is whole: it is never narrowed"
            floor = max(narrowest, display_width(headers[column]))
            if column in fold:  # no narrower than its widest marker with its comma
                floor = max([floor, *(display_width(part) + 1 for row in body for part in row[column].split(","))])
            elif not inside_words:  # nor than its longest word: a name folds between words
                floor = max([floor, *(display_width(word) for row in body for word in _WORD.findall(row[column]))])
            cut = min(excess, max(0, widths[column] - floor))
            widths[column] -= cut
            excess -= cut
    return widths


def _lines(headers: Sequence[str], body: Sequence[Sequence[str]], widths: Sequence[int], right: Collection[int],
           color: bool, highlight: str, fold: Collection[int]) -> list[str]:
    lines = []
    for number, row in enumerate([headers, *body]):
        cells = [_pieces(cell, columns, i in fold) for i, (cell, columns) in enumerate(zip(row, widths))]
        for depth in range(max(map(len, cells))):
            parts = []
            for index, (pieces, columns) in enumerate(zip(cells, widths)):
                cell = pieces[depth] if depth < len(pieces) else ""
                padded = _pad(cell, columns, index in right)
                if color and cell and (number == 0 or (highlight and cell.endswith(highlight))):
                    style = _BOLD if number == 0 else _BEST
                    padded = padded.replace(cell, f"{style}{cell}{_RESET}", 1)
                parts.append(padded)
            lines.append(" ".join(parts).rstrip())
    return lines
