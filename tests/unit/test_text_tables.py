"""Text tables within 100 columns that never cut a number: the layout itself, and every figure of random
comparisons and `list` views (1 to 100,000 GPUs, an hour to years, USD and CNY) read back whole against the
CSV and JSON figures. Widths are measured with rich's `cell_len`, not with the code under test."""

from __future__ import annotations

import csv
import io
import json
import re
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from support import TODAY

from gpu_assist.commands import Context
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.pricing.compare import COLUMNS, Comparison
from gpu_assist.render import csv as render_csv
from gpu_assist.render import json as render_json
from gpu_assist.render import operations as _operations  # noqa: F401 - they register
from gpu_assist.render import plans as _plans  # noqa: F401 - they register
from gpu_assist.render import text as render_text
from gpu_assist.render.comparison import layout
from gpu_assist.render.tables import at_width, display_width, text_table

# A figure as the text shows it: currency sign, thousands grouped by 3, optional places, optional unit.
MONEY = re.compile(r"[$¥][0-9][0-9,]*(?:\.[0-9]+)?[kM]?")
WHOLE_MONEY = re.compile(r"[$¥]\d{1,3}(?:,\d{3})*(?:\.\d+)?[kM]?")
MARKERS = re.compile(r"\d+(?:,\d+)*,?")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
UNIT = {"": Decimal(1), "k": Decimal(1000), "M": Decimal(1_000_000)}


class _Answers:
    """Answers from one Context; a short repr, as hypothesis prints a failing example's arguments."""

    def __init__(self, catalog):
        self.context = Context(catalog_loader=lambda: catalog, today=lambda: TODAY, currency="USD")

    def __call__(self, words: str):
        return run(parse_command(words, self.context.catalog.gpus), self.context)

    def __repr__(self) -> str:
        return "answers"


@pytest.fixture(scope="module")
def answers(catalog):
    return _Answers(catalog)


def _fits(text: str, columns: int = 100) -> None:
    wide = [line for line in text.splitlines() if cell_len(line) > columns]
    assert wide == [], wide
    assert "…" not in text  # names fold, never cut


def _value(figure: str) -> tuple[Decimal, Decimal]:
    """A shown figure as (amount, half the step it was rounded to)."""
    assert WHOLE_MONEY.fullmatch(figure), f"{figure!r} is cut or malformed"
    unit = UNIT[figure[-1] if figure[-1] in "kM" else ""]
    number = figure[1:].rstrip("kM").replace(",", "")
    places = len(number.partition(".")[2])
    return Decimal(number) * unit, Decimal(1).scaleb(-places) * unit / 2


def _assert_same(figure: str, exact: Decimal) -> None:
    shown, half_step = _value(figure)
    assert abs(shown - exact) <= half_step + Decimal("0.005"), (figure, exact)  # CSV/JSON are cents


def _rows(lines: list[str], start: int, count: int, names_at: int) -> tuple[list[list[str]], int]:
    """`count` table rows from lines[start:] (a row is its line and the lines folded under it, blank in the
    rank's column, before `names_at`), and the index after them."""
    rows: list[list[str]] = []
    at = start
    while at < len(lines):
        folded = rows and not lines[at][:names_at].strip()
        if not folded and len(rows) == count:
            break
        if folded:
            rows[-1].append(lines[at])
        else:
            rows.append([lines[at]])
        at += 1
    assert len(rows) == count, lines[start:at]
    return rows, at


def _column(line: str, start: int) -> str:
    """What a line shows from display column `start` on (the notes column is the last, left-aligned)."""
    width = 0
    for index, character in enumerate(line):
        if width >= start:
            return line[index:].strip()
        width += display_width(character)
    return ""


def _markers(row: list[str], notes_at: int) -> str:
    """The row's note markers, each piece checked whole: folded only after a comma."""
    pieces = [piece for line in row if (piece := _column(line, notes_at))]
    for piece in pieces[:-1]:
        assert MARKERS.fullmatch(piece) and piece.endswith(","), pieces
    assert not pieces or (MARKERS.fullmatch(pieces[-1]) and not pieces[-1].endswith(",")), pieces
    return "".join(pieces)


def _check_comparison(result: Comparison, text: str, columns: int = 100) -> None:
    """Every rank, total and marker of the text is whole and the CSV's, in the CSV's order."""
    _fits(text, columns)
    lines = text.splitlines()
    figures = list(csv.DictReader(io.StringIO(render_csv.render(result))))
    expected = layout(result)
    at, number = next(i for i, line in enumerate(lines) if line.startswith("#")), 0  # after the title's lines
    for section, rank_of in ((expected.rows, str), (expected.untrusted, lambda _: "-")):
        if not section:
            continue
        if section is expected.untrusted:
            assert lines[at].startswith("not ranked")
            at += 1
        header = lines[at]
        notes_at = display_width(header[:header.rindex("notes")])
        rows, at = _rows(lines, at + 1, len(section), header.index("provider"))
        for index, (row, cells) in enumerate(zip(rows, section), 1):
            line = ANSI.sub("", row[0])
            assert line.split()[0] == rank_of(index)
            shown = MONEY.findall(line)
            exact = [Decimal(figures[number][m]) for m in COLUMNS if figures[number][m]]
            assert len(shown) == len(exact), (line, exact)
            for figure, amount in zip(shown, exact):
                _assert_same(figure, amount)
            assert _markers(row, notes_at) == cells[-1]
            number += 1
    assert number == len(figures)


def _check_list(result, text: str) -> None:
    """Every rank, hourly price, total and per-GPU-hour price of `list` is whole and the JSON's."""
    _fits(text)
    lines = text.splitlines()
    options = json.loads(render_json.render(result))
    if not options:
        return
    first = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#"))  # after the title's lines
    header = lines[first]
    notes_at = display_width(header[:header.rindex("notes")])
    rows, _ = _rows(lines, first + 1, len(options), header.index("provider"))
    legend = {line.split()[0] for line in lines if re.match(r"\d+ ", line)}
    for rank, (row, option) in enumerate(zip(rows, options), 1):
        assert row[0].split()[0] == str(rank)
        hourly, total, per_gpu = MONEY.findall(row[0])
        _assert_same(hourly, Decimal(str(option["hourly"])))
        _assert_same(total, Decimal(str(option["total"])))
        _assert_same(per_gpu, Decimal(str(option["per_gpu_hour"])))
        marks = _markers(row, notes_at)
        assert not marks or set(marks.split(",")) <= legend


_GPUS = ("A100", "A100-80GB", "H100", "H200", "B200", "L4", "T4", "V100", "RTX4090", "MI300X")
_WORDS = ("", "spot", "monthly", "pricing=reserved-1y,reserved-3y,monthly", "include-unverified",
          "all-regions top=40", "region=cn", "include-flagged")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(1, 100_000), hours=st.integers(1, 5 * 8760), gpu=st.sampled_from(_GPUS),
       currency=st.sampled_from(("USD", "CNY")), words=st.sampled_from(_WORDS))
def test_every_figure_of_a_comparison_is_whole_within_100_columns(answers, count, hours, gpu, currency, words):
    result = answers(f"quote {count}x{gpu} {hours}h currency={currency} top=all {words}")
    text = render_text.render(result)
    if result.rows or result.untrusted:
        _check_comparison(result, text)
    _fits(text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(1, 100_000), hours=st.integers(1, 5 * 8760), gpu=st.sampled_from(_GPUS),
       currency=st.sampled_from(("USD", "CNY")), words=st.sampled_from(_WORDS))
def test_every_figure_of_the_list_is_whole_within_100_columns(answers, count, hours, gpu, currency, words):
    result = answers(f"quote {count}x{gpu} {hours}h currency={currency} list {words}")
    _check_list(result, render_text.render(result))


@pytest.mark.parametrize("words", ["quote 1024xH100 1mo", "quote 256xH100 2mo currency=CNY",
                                   "quote 100000xA100 72h top=all", "quote 100000xA100 72h currency=CNY top=all",
                                   "quote 100000xH100 5mo pricing=reserved-1y,reserved-3y,monthly currency=CNY"])
def test_the_newcomers_large_totals_are_whole(answers, words):
    """The cases of the report: $130,733,559 showed as `$130,733,55`, ranks 10-12 as `1`, markers lost."""
    result = answers(words)
    _check_comparison(result, render_text.render(result))
    _check_comparison(result, ANSI.sub("", render_text.render(result, color=True)))
    with at_width(80):
        _check_comparison(result, render_text.render(result), columns=80)


def test_a_large_table_says_its_unit_and_a_small_one_stays_exact(answers):
    big = render_text.render(answers("quote 100000xA100 72h currency=CNY"))
    assert re.search(r"¥[\d,]+k\*? ", big) and "k: thousands of CNY, rounded to fit 100 columns" in big
    small = render_text.render(answers("quote 8xA100 72h"))
    assert "$1,581* " in small and "thousands" not in small and "$434.69 " in small


def test_a_note_every_ranked_row_carries_is_said_once(answers):
    """In CNY every verified row is converted from USD: one line at the head of the legend, no marker."""
    text = render_text.render(answers("quote 8卡A100 72小时 currency=CNY"))
    legend = [line for line in text.splitlines() if "converted from USD" in line]
    assert len(legend) == 1 and legend[0].startswith("ranked rows: converted from USD at ")
    assert "$" not in text  # the upfront payment and the sources' rates too are in yuan


def test_markers_fold_between_markers_and_headers_never_fold():
    rows = [["1", "a" * 80, "$1,234,567", "9,1,10,11,12,13"], ["2", "b", "$1.00", "7"]]
    out = text_table(["#", "name", "total", "notes"], rows, right={2}, whole={0, 2}, fold={3}, narrow=[(3, 0)])
    pad = " " * (1 + 1 + 80 + 1 + 10 + 1)
    assert out.splitlines() == [
        "# " + "name".ljust(80) + "      total notes",
        "1 " + "a" * 80 + " $1,234,567 9,1,",
        pad + "10,11,",
        pad + "12,13",
        "2 " + "b".ljust(80) + "      $1.00 7",
    ]


def test_names_fold_between_words_and_numbers_never():
    rows = [["1", "primeintellect", "datacrunch__8xA100_40GB__176__960", "$" + "9" * 3 + ",999,999,999", "1,2"],
            ["2", "shadeform", "8× paperspace_A100", "$1.00", ""]]
    out = text_table(["#", "provider", "instance", "total", "notes"], rows, right={3}, whole={0, 3},
                     clip={1: 14, 2: 22}, fold={4}, narrow=[(2, 10), (1, 6)])
    assert out.splitlines() == [
        "# provider       instance                          total notes",
        "1 primeintellect datacrunch__8xA100_    $999,999,999,999 1,2",
        "                 40GB__176__960",
        "2 shadeform      8× paperspace_A100                $1.00",
    ]
    assert "…" not in out
    with at_width(55):  # narrower: the instance folds at its longest word, the provider's name stays whole
        narrow = text_table(["#", "provider", "instance", "total", "notes"], rows, right={3}, whole={0, 3},
                            clip={1: 14, 2: 22}, fold={4}, narrow=[(2, 10), (1, 6)])
    lines = narrow.splitlines()
    assert lines[1].split()[1] == "primeintellect" and "…" not in narrow and max(map(cell_len, lines)) <= 55
    folded = [lines[1].split()[2], *(line.strip() for line in lines[2:] if not line.startswith("2 "))][:3]
    assert "".join(folded) == "datacrunch__8xA100_40GB__176__960"
    wide = text_table(["#", "total"], [["1", "$" + "1" * 120]], whole={0, 1})
    assert "1" * 120 in wide  # too wide for 100 columns, and printed whole rather than cut


def test_widths_count_terminal_cells():
    assert display_width("8卡A100 72小时") == cell_len("8卡A100 72小时") == 14
    out = text_table(["what", "n"], [["8卡A100", "1"], ["8xA100", "2"]], right={1})
    assert [cell_len(line) for line in out.splitlines()] == [9, 9, 9]


def test_colour_paints_what_the_plain_table_lays_out():
    rows = [["1", "$1.00*", "x"], ["2", "$2.00", "y"]]
    plain = text_table(["#", "total", "notes"], rows, right={1}, highlight="*")
    coloured = text_table(["#", "total", "notes"], rows, right={1}, highlight="*", color=True)
    assert ANSI.sub("", coloured) == plain
    assert "\x1b[1;32m$1.00*\x1b[0m" in coloured and "\x1b[1mtotal\x1b[0m" in coloured


def test_a_recommendations_headers_stay_whole(answers):
    """`budget` and `notes` wrapped to `budg`/`et` and `note`/`s` when the plans were wide (a plan's notes are a
    line of their own under it now)."""
    result = answers("recommend train 7B tokens=1T budget=50000")
    text = render_text.render(result)
    _fits(text)
    header = next(line for line in text.splitlines() if line.startswith("#"))
    assert header.split()[-2:] == ["total", "budget"]
