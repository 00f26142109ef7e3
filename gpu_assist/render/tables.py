"""Text tables for every text medium: `table` (aligned columns), `rich_table` (100 columns, folding, colour on a
terminal), with a plain-Python path that prints what rich would for the common layouts at a fraction of the cost."""

from __future__ import annotations

def table(headers: list[str], rows: list[list[str]], right: frozenset[int] | set[int] = frozenset()) -> str:
    """Columns padded to their widest cell; columns in `right` aligned right."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]

    def line(cells):
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def rich_table(headers, rows, *, right=(), color: bool = False, sections=(), highlight: str = "",
               whole=(), clip=None) -> str:
    """Rows as a borderless `rich` table no wider than 100 columns; `sections` are more row groups, each
    after a heading line. Cells ending in `highlight` are shown bold green on a colour terminal; columns in
    `whole` are never folded (when space is short, the others fold first); `clip` maps a column to the widest
    it may be, longer cells ending in "…" (names a reader recognises by their start; JSON has them whole)."""
    if not color:
        plain = _plain_table(headers, rows, right=right, clip=clip or {}, whole=whole, sections=sections)
        if plain is not None:
            return plain
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from .comparison import WIDTH

    buffer = io.StringIO()
    console = Console(file=buffer, width=WIDTH, color_system="standard" if color else None, force_terminal=color,
                      highlight=False, emoji=False, legacy_windows=False)

    def build(body) -> Table:
        table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), header_style="bold" if color
                      else "", expand=False)
        for index, header in enumerate(headers):
            clipped = (clip or {}).get(index)
            table.add_column(header, justify="right" if index in right else "left",
                             overflow="ellipsis" if clipped else "fold", no_wrap=index in whole or bool(clipped),
                             max_width=clipped)
        for row in body:
            table.add_row(*(Text(cell, style="bold green" if color and highlight and cell.endswith(highlight)
                                 else "") for cell in row))
        return table

    console.print(build(rows))
    for heading, body in sections:
        if body:
            console.print(Text(heading, style="bold" if color else ""))
            console.print(build(body))
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


# Characters one terminal cell wide, as `rich` measures them, besides printable ASCII (money, hosts, ellipsis).
_NARROW = frozenset("×…¥€£")


def _narrow(text: str) -> bool:
    return (text.isascii() and text.isprintable()) or all(c in _NARROW or (c.isascii() and c.isprintable())
                                                           for c in text)


def _plain_table(headers, rows, *, right, clip, whole, sections) -> str | None:
    """What `rich_table` prints without colour, in plain Python (a rich table costs milliseconds per quote):
    each column as wide as its widest cell (clipped columns at most their limit, longer cells ending in "…"),
    one space between columns; a table too wide for 100 columns narrows its one foldable column (the notes'
    markers), folding its cells into pieces of that width, as rich does. None where rich's layout is not
    this simple: more than one foldable column to narrow, a folded cell with spaces, a heading that would
    wrap, wide characters, or a cell that starts or ends with spaces."""
    from .comparison import WIDTH

    cells = [headers, *rows, *(r for _, body in sections for r in body)]
    if not all(_narrow(cell) and cell == cell.strip() for row in cells for cell in row):
        return None
    if any(len(h) > WIDTH for h, body in sections if body):
        return None
    foldable = [i for i in range(len(headers)) if i not in whole and i not in clip]
    lines = _plain_lines(headers, rows, right, clip, foldable, WIDTH)
    for heading, body in sections:
        if body and lines is not None:
            more = _plain_lines(headers, body, right, clip, foldable, WIDTH)
            lines = None if more is None else [*lines, heading, *more]
    return None if lines is None else "\n".join(lines)


def _plain_lines(headers, body, right, clip, foldable, limit: int) -> list[str] | None:
    widths = [min(max(map(len, column)), clip[i]) if i in clip else max(map(len, column))
              for i, column in enumerate(zip(headers, *body))]
    excess = sum(widths) + len(widths) - 1 - limit
    fold = None
    if excess > 0:
        if len(foldable) != 1 or widths[foldable[0]] - excess < 1:
            return None
        fold = foldable[0]
        widths[fold] -= excess
        if any(" " in row[fold] for row in body) or " " in headers[fold]:
            return None
    lines = []
    for number, row in enumerate((headers, *body)):
        pieces = [row[fold][at:at + widths[fold]] for at in range(0, len(row[fold]), widths[fold])] \
            if fold is not None else []
        depths = max(1, len(pieces))
        for depth in range(depths):
            # rich aligns the header row to its last line, body rows to their first
            first = depth == (depths - 1 if number == 0 else 0)
            parts = []
            for index, (cell, width) in enumerate(zip(row, widths)):
                if index == fold:
                    cell = pieces[depth] if depth < len(pieces) else ""
                elif not first:
                    cell = ""
                elif len(cell) > width:
                    cell = cell[:width - 1] + "…"
                parts.append(cell.rjust(width) if index in right else cell.ljust(width))
            lines.append(" ".join(parts).rstrip())
    return lines
