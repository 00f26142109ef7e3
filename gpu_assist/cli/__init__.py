"""`gpu-assist …`: the command-line face. Errors exit 2 with one line, never a traceback.

`parser.py` is the argparse tree. Each verb is answered by the module `ANSWERED_BY` names, imported only when that
verb is chosen, so nothing heavy is imported before a verb needs it: `answers.py` (quote, help, and the printing
every grammar verb shares), `plans.py` (recommend, tco), `team.py` (requests, spend, commit), `submit.py`
(launch, stop, extend), `util.py`; the operator's `operations.py` (the request lifecycle), `db.py`, `slack.py`,
`metrics.py`, `spot.py`; the catalog maintainer's `catalog.py`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import textwrap
from collections.abc import Callable

from ..errors import GpuAssistError, apart_from, shorten_echoes
from ..render.tables import WIDTH, at_width, fits, width
from .parser import build_parser, parse_args

EXIT_USER_ERROR = 2
# Killed by SIGPIPE (signal 13), as a shell reports it for `yes | head -1`; a number, as importing `signal` for
# it would cost every start more than the rest of this module.
EXIT_BROKEN_PIPE = 128 + 13

# The module under `gpu_assist.cli` whose `answer(args)` answers each verb. It is imported only when its verb is
# chosen, so a quote loads neither the request store, nor the catalog importers, nor Slack.
ANSWERED_BY = {
    "quote": "answers", "help": "answers", "recommend": "plans", "tco": "plans", "util": "util",
    "launch": "submit", "stop": "submit", "extend": "submit", "spend": "team", "commit": "team", "requests": "team",
    "approve": "operations", "reject": "operations", "reconcile": "operations", "reap": "operations",
    "expire": "operations", "db": "db", "slack": "slack", "metrics": "metrics", "spot": "spot", "catalog": "catalog"}


def _dispatch(args: argparse.Namespace) -> int:
    answer: Callable[[argparse.Namespace], int] = importlib.import_module(
        f".{ANSWERED_BY[args.command]}", __name__).answer
    return answer(args)


def _reader_went_away() -> int:
    """The program reading our output stopped (`gpu-assist quote … | head -1`): stop quietly, as Unix tools do.
    stdout now points at /dev/null, so that Python's own flush at exit has nothing to complain about."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (tests capture it)
        pass
    return EXIT_BROKEN_PIPE


def _error_text(error: Exception) -> str:
    """`error: …` on one line when it fits the width; else what was wrong, the hint and the example each start
    a line of their own, folded between words, continuation lines indented. A word is never broken (an echo of
    the user's words is cut to 80 characters, a path is copied whole)."""
    line = f"error: {error}"
    if fits(line):
        return line
    parts = [error.message, error.hint, error.example and f"example: {error.example}"] \
        if isinstance(error, GpuAssistError) else [str(error)]
    lines: list[str] = []
    for part in filter(None, parts):
        lines += textwrap.wrap(shorten_echoes(part), width(), initial_indent="  " if lines else "error: ",
                               subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines)


def terminal_width() -> int:
    """The columns text is laid out in: `COLUMNS` where set (as shells and `stty` tools set it), else the
    terminal's when stdout is one, else `WIDTH`: a pipe or a file gets the same text on every machine."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError, AttributeError):  # stdout closed, or not a real file (tests capture it)
        pass
    return WIDTH


def main(argv: list[str] | None = None) -> int:
    with at_width(terminal_width()):
        return _main(sys.argv[1:] if argv is None else argv)


def _main(words: list[str]) -> int:
    try:
        status = _dispatch(parse_args(build_parser(words[0] if words else None), words))
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below, not at interpreter exit
        return status
    except BrokenPipeError:
        return _reader_went_away()
    except (GpuAssistError, ValueError) as error:  # ValueError: e.g. a malformed --as-of date
        if isinstance(error, GpuAssistError):  # its example is never the words that just failed
            apart_from(error, " ".join(word for word in words if not word.startswith("--")))
        print(_error_text(error), file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # noqa: BLE001 - the last line of defence against tracebacks
        if os.environ.get("GPU_ASSIST_DEBUG"):
            raise
        print(f"internal error: {type(error).__name__}: {error} (set GPU_ASSIST_DEBUG=1 for details)",
              file=sys.stderr)
        return 1
