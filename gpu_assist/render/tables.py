"""Text tables for every text medium: `table` (aligned columns) and `text_table` (100 columns, numbers whole,
colour on a terminal).

Widths are terminal cells (`display_width`: a CJK character takes two), so a Chinese request lines up too.
`text_table` lays its columns out itself rather than through `rich`'s table: rich folds any column, a money
figure or a footnote marker included, when a table is too wide, and a reader cannot tell `$130,733,55` from a
price. Here what must stay whole is never narrowed (ranks, money, times), names are cut with "…" in the order
the caller gives, and note markers fold only between markers.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

WIDTH = 100
# The escape codes rich printed for these styles on a standard-colour terminal (bold; bold green).
_BOLD, _BEST, _RESET = "\x1b[1m", "\x1b[1;32m", "\x1b[0m"


@lru_cache(maxsize=4096)  # a table measures its cells again for each layout it tries
def display_width(text: str) -> int:
    """Terminal cells `text` takes: wide and full-width East Asian characters two, combining marks none."""
    if text.isascii():
        return len(text)
    width = len(text)
    for character in text:
        if character >= "\u0300":  # no combining mark or wide character comes before (×, ¥, é are one cell)
            if unicodedata.combining(character):
                width -= 1
            elif unicodedata.east_asian_width(character) in "WF":
                width += 1
    return width


def fits(text: str, width: int = WIDTH) -> bool:
    """Whether every line of `text` fits `width` terminal cells."""
    return all(display_width(line) <= width for line in text.splitlines())


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
    """Rows as a borderless table, one space between columns, within 100 columns where the caller allows it
    (`layout`, the keywords of `fitting_table`):

    - `whole` columns (ranks, money, times) are never narrowed, cut or folded, and headers never are;
    - `clip` maps a column to the widest it may be: longer cells end in "…" (names a reader recognises by their
      start; JSON has them whole);
    - `narrow` are the steps taken, in order, while the table is wider than 100 columns: (column, narrowest);
      a `fold` column folds its cells after a comma (note markers `1,2,10` break between markers, never in
      one), any other is cut with "…";
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
    """`text_table`, or None where it would be wider than 100 columns (unless `or_wider`), known from the
    column widths before any line is laid out: a caller trying layouts in turn lays out only the one that fits."""
    clip = clip or {}
    groups = [("", rows), *((heading, body) for heading, body in sections if body)]
    widths = [_widths(headers, body, whole, clip, narrow, fold) for _, body in groups]
    if not or_wider and any(sum(w) + len(w) - 1 > WIDTH for w in widths):
        return None
    lines: list[str] = []
    for (heading, body), group_widths in zip(groups, widths):
        if heading:
            lines.append(f"{_BOLD}{heading}{_RESET}" if color else heading)
        lines += _lines(headers, body, group_widths, right, color, highlight, fold)
    return "\n".join(lines)


def _pieces(cell: str, width: int, folds: bool) -> list[str]:
    """A cell as the lines it takes in a column `width` cells wide."""
    if display_width(cell) <= width:
        return [cell]
    if not folds:
        kept, room = "", width - 1
        for character in cell:
            room -= display_width(character)
            if room < 0:
                break
            kept += character
        return [kept + "…"]
    parts = cell.split(",")
    pieces = [""]
    for index, part in enumerate(parts):
        token = part if index == len(parts) - 1 else part + ","
        if pieces[-1] and display_width(pieces[-1] + token) > width:
            pieces.append("")
        pieces[-1] += token
    return pieces


def _widths(headers: Sequence[str], body: Sequence[Sequence[str]], whole: Collection[int], clip: Mapping[int, int],
            narrow: Sequence[tuple[int, int]], fold: Collection[int]) -> list[int]:
    """Each column's width: its widest cell (clipped columns at most their limit, never below the header),
    narrowed by the `narrow` steps while the table is wider than 100 columns."""
    widths = [display_width(h) for h in headers]
    for row in body:
        widths = [max(w, display_width(cell)) for w, cell in zip(widths, row)]
    widths = [min(w, max(clip[i], display_width(headers[i]))) if i in clip else w for i, w in enumerate(widths)]
    excess = sum(widths) + len(widths) - 1 - WIDTH
    for column, narrowest in narrow:
        if excess <= 0:
            break
        assert column not in whole, f"column {column} is whole: it is never narrowed"
        floor = max(narrowest, display_width(headers[column]))
        if column in fold:  # no narrower than its widest marker with its comma
            floor = max([floor, *(display_width(part) + 1 for row in body for part in row[column].split(","))])
        cut = min(excess, max(0, widths[column] - floor))
        widths[column] -= cut
        excess -= cut
    return widths


def _lines(headers: Sequence[str], body: Sequence[Sequence[str]], widths: Sequence[int], right: Collection[int],
           color: bool, highlight: str, fold: Collection[int]) -> list[str]:
    lines = []
    for number, row in enumerate([headers, *body]):
        cells = [_pieces(cell, width, i in fold) for i, (cell, width) in enumerate(zip(row, widths))]
        for depth in range(max(map(len, cells))):
            parts = []
            for index, (pieces, width) in enumerate(zip(cells, widths)):
                cell = pieces[depth] if depth < len(pieces) else ""
                padded = _pad(cell, width, index in right)
                if color and cell and (number == 0 or (highlight and cell.endswith(highlight))):
                    style = _BOLD if number == 0 else _BEST
                    padded = padded.replace(cell, f"{style}{cell}{_RESET}", 1)
                parts.append(padded)
            lines.append(" ".join(parts).rstrip())
    return lines
