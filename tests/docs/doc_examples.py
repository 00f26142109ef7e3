"""Every fenced block of the documentation as an example: Sybil finds the blocks, this module says how each runs.

Sybil (https://sybil.readthedocs.io) lexes each page's fenced code blocks into examples with their line numbers and
evaluates Python blocks; the evaluators here run the other kinds of block the pages show:

- `$ gpu-assist …` lines (a session): each command runs in this process (`cli.main`, the clock at support.NOON,
  so a price's age is the same on every run), and the output the page shows under it is compared with what it
  printed (stdout and stderr, as a terminal shows them: not a terminal, so 100 columns and no colour). A line that
  is only `…` stands for any number of lines: the rest of the output, or up to the next line shown. Request and
  instance ids, dates and ages are normalised on both sides. A `$` line with nothing under it must exit 0.
- `gpu-assist …` lines: each runs and must exit 0; what follows `#` or two spaces is the page's description.
- `/gpu …` lines: Slack's words, through the same grammar (`commands.parse_command`), run and drawn as the
  Slack card (`slackbot.blocks.message`).
- lines that start with a verb of the grammar (`quote 8xA100 72h  …`): the words after `gpu-assist`, run so.
- ```python: run (Sybil's `PythonEvaluator`), each block on its own.
- ```toml: a `[policy]` or `[catalog]` snippet, read by `load_policy` and `load_schedule` as a GPU_ASSIST_CONFIG file.

Two comments on the line before a block (visible in the page's source, hidden in the built site) say more:

- `<!-- not run: WHY -->`: the block is left out, and the report says why (it needs a cloud account or a Slack
  token, installs or deploys something, starts a server, or is a `make` line or a diagram).
- `<!-- output: make docs -->` (or `<!-- output: make docs, first 12 lines -->`): the session's output is written by
  `make docs` (`python tests/docs/doc_examples.py`), whole or its first lines then `…`, and compared like any other.

A block that is none of these fails: every block of the documentation either runs or says why it does not.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sybil import Document, Example, Lexeme, Region, Sybil
from sybil.evaluators.python import PythonEvaluator
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

from gpu_assist.commands.grammar import _VERBS as _GRAMMAR_VERBS

REPO = Path(__file__).resolve().parents[2]
# The pages: the README, the contributor's guide (a page of the site too) and every page of docs/.
PAGES = ("README.md", "CONTRIBUTING.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md")))

NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<why>.+?)\s*-->\s*\Z", re.S)
GENERATED = re.compile(r"<!--\s*output: make docs(?:, first (?P<lines>\d+) lines)?\s*-->\s*\Z")
ELLIPSIS = "…"
# What the grammar's words start with: a line of such words runs as `gpu-assist` and the words.
VERBS = (*_GRAMMAR_VERBS, "help")
# Said as Slack's user: the actor of `/gpu` lines.
SLACK_USER = "U-DOCS"

# Parts of an answer that differ from run to run, or day to day, replaced on both sides before comparing.
_NORMALISED = (
    (re.compile(r"\br-[0-9a-f]{12}\b"), "r-<id>"),
    (re.compile(r"\bi-[0-9a-f]{8,17}\b"), "i-<id>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2}| UTC)?)?"), "<date>"),
    (re.compile(r"\b\d+(?:\.\d+)? (?:days?|h|min|s) (old|ago)\b"), r"<age> \1"),
)


@dataclass(frozen=True)
class Block:
    """One fenced block: its info string, its lines, and the comment on the line before it ('' for none)."""

    info: str
    source: Lexeme
    comment: str

    @property
    def lines(self) -> list[str]:
        return self.source.splitlines()

    @property
    def generated(self) -> re.Match[str] | None:
        return GENERATED.match(self.comment)


class Skipped(Exception):
    """A block the page marks `not run`, with its reason (the test reports it as skipped)."""


def normalise(text: str) -> list[str]:
    """The lines of `text`, trailing spaces and blank lines at the end dropped, what varies replaced."""
    lines = []
    for line in text.rstrip().splitlines():
        for pattern, replacement in _NORMALISED:
            line = pattern.sub(replacement, line)
        lines.append(line.rstrip())
    return lines


def matches(shown: list[str], actual: list[str]) -> bool:
    """Whether `actual` is what `shown` shows, a line that is only `…` standing for any number of lines."""

    @functools.lru_cache(maxsize=None)
    def from_(i: int, j: int) -> bool:
        if i == len(shown):
            return j == len(actual)
        if shown[i].strip() == ELLIPSIS:
            return any(from_(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and shown[i] == actual[j] and from_(i + 1, j + 1)

    return from_(0, 0)


def run_cli(argv: list[str]) -> tuple[int, str]:
    """`gpu-assist ARGV` in this process: its exit status and what it printed, stdout and stderr interleaved as a
    terminal shows them."""
    from gpu_assist.cli import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        status = main(argv)
    return status, printed.getvalue()


def command_words(line: str) -> list[str]:
    """A documented command line's words: what follows ` # ` or two spaces is its description."""
    command = re.split(r"\s+#|\s{2,}", line.strip(), maxsplit=1)[0]
    if re.search(r"[\[\]|]|…|<\w", command):
        raise ValueError(f"{command!r} is a synopsis, not a command: write one that runs, or mark the block "
                         "`<!-- not run: … -->`")
    return shlex.split(command)


def session(lines: Iterable[str]) -> Iterator[tuple[str, list[str]]]:
    """`$ command` lines and, under each, the output the page shows (none: [])."""
    command: str | None = None
    shown: list[str] = []
    for line in lines:
        if line.startswith("$ "):
            if command is not None:
                yield command, shown
            command, shown = line[2:], []
        elif command is not None:
            shown.append(line)
    if command is not None:
        yield command, shown


def _cli_argv(command: str) -> list[str]:
    words = shlex.split(command)
    if not words or words[0] != "gpu-assist":
        raise ValueError(f"`$ {command}` does not run gpu-assist: mark the block `<!-- not run: … -->`")
    return words[1:]


def check_session(block: Block) -> str | None:
    """Each `$ gpu-assist …` line run, its output compared with what the page shows under it."""
    for command, shown in session(block.lines):
        status, printed = run_cli(_cli_argv(command))
        expected, actual = normalise("\n".join(shown)), normalise(printed)
        if not expected:
            if status != 0:
                return f"`$ {command}` exited {status}:\n{printed}"
            continue
        if status != 0 and not expected[0].startswith("error:"):
            return f"`$ {command}` exited {status}:\n{printed}"
        if not matches(expected, actual):
            return (f"`$ {command}` printed other lines than the page shows (a line of only … stands for any "
                    f"lines; `make docs` rewrites a block marked `output: make docs`):\n" + _diff(expected, actual))
    return None


def _diff(expected: list[str], actual: list[str]) -> str:
    import difflib

    return "\n".join(difflib.unified_diff(expected, actual, "the page", "gpu-assist", lineterm="", n=2))


def check_cli_lines(block: Block) -> str | None:
    """Each `gpu-assist …` line (or a line of the grammar's words, run as `gpu-assist WORDS`) exits 0."""
    for line in _command_lines(block):
        words = command_words(line)
        argv = words[1:] if words[0] == "gpu-assist" else words
        status, printed = run_cli(argv)
        if status != 0:
            return f"`{line.strip()}` exited {status}:\n{printed}"
    return None


def check_slack_lines(block: Block) -> str | None:
    """Each `/gpu …` line parsed by the grammar Slack uses, run, and drawn as its Slack message."""
    from gpu_assist.commands import Context, HelpCommand
    from gpu_assist.commands.execute import run
    from gpu_assist.commands.grammar import parse_command
    from gpu_assist.errors import GpuAssistError
    from gpu_assist.lifecycle.identity import SLACK, actor
    from slackbot import blocks

    context = Context()
    for line in _command_lines(block):
        text = " ".join(command_words(line.strip().removeprefix("/gpu")))
        try:
            parsed = parse_command(text, context.catalog.gpus)
            result = parsed if isinstance(parsed, HelpCommand) else \
                run(parsed, context, actor=actor(SLACK, SLACK_USER))
            _, drawn = blocks.message(result, command=parsed)
        except GpuAssistError as error:
            return f"`{line.strip()}` answered an error: {error}"
        if not drawn:
            return f"`{line.strip()}` drew an empty Slack message"
    return None


def check_policy(block: Block) -> str | None:
    """A `[policy]` (or `[catalog]`) snippet is a config gpu-assist reads."""
    from gpu_assist.errors import GpuAssistError
    from gpu_assist.lifecycle.policy import load_policy
    from gpu_assist.sources.freshness import load_schedule

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gpu-assist.toml"
        path.write_text("\n".join(block.lines) + "\n", encoding="utf-8")
        try:
            load_policy({"GPU_ASSIST_CONFIG": str(path)})
            load_schedule({"GPU_ASSIST_CONFIG": str(path)})
        except GpuAssistError as error:
            return f"the policy snippet is refused: {error}"
    return None


def _command_lines(block: Block) -> list[str]:
    """The block's lines that are commands: not blank, not a description's continuation (`  # …`)."""
    return [line for line in block.lines if line.strip() and not line.lstrip().startswith("#")]


def kind(block: Block) -> str:
    """What the block is, by its info string and its first line: python, toml, session, cli, slack or grammar."""
    first = next((line.strip() for line in block.lines if line.strip()), "")
    if block.info in ("python", "toml"):
        return block.info
    if first.startswith("$ "):
        return "session"
    if first.startswith("gpu-assist "):
        return "cli"
    if first.startswith("/gpu"):
        return "slack"
    if first.split(" ", 1)[0] in VERBS:
        return "grammar"
    return "unknown"


_CHECKS: dict[str, Callable[[Block], str | None]] = {
    "session": check_session, "cli": check_cli_lines, "grammar": check_cli_lines, "slack": check_slack_lines,
    "toml": check_policy}
_PYTHON = PythonEvaluator()


def evaluate(example: Example) -> str | None:
    """Sybil's evaluator for every block: None when it runs as the page says, else what differs."""
    block: Block = example.parsed
    found = NOT_RUN.match(block.comment)
    if found:
        raise Skipped(" ".join(found["why"].split()))
    what = kind(block)
    if what == "python":
        example.namespace.clear()  # each block on its own, as a reader pastes it into a fresh kernel
        try:
            _PYTHON(Example(example.document, example.line, example.column,
                            Region(example.start, example.end, parsed=block.source), example.namespace))
        finally:
            _stop_live_panels()
        return None
    if what == "unknown":
        return ("a block that neither runs nor says why not: write commands (`gpu-assist …`, `$ gpu-assist …`, "
                "`/gpu …`), Python, or a [policy] snippet, or put `<!-- not run: WHY -->` on the line before it")
    return _CHECKS[what](block)


def _stop_live_panels() -> None:
    """A notebook keeps a utilization panel's poller running until the kernel ends; a page's block ends here, so
    its panels stop with it (they would read the clock in the tests after it). Every live widget is in ipywidgets'
    registry, whether or not the block kept a name for it."""
    from ipywidgets.widgets.widget import _instances

    from gpu_assist.jupyter.utilization_panel import UtilizationPanel

    for widget in list(_instances.values()):
        if isinstance(widget, UtilizationPanel):
            widget.stop()


class Blocks:
    """Sybil's parser: every fenced block of a page, whatever its info string, with the comment before it."""

    lexer = RawFencedCodeBlockLexer(info_pattern=re.compile(r"(?P<info>[^\n]*)$\n", re.MULTILINE),
                                    mapping={"info": "info", "source": "source"})

    def __call__(self, document: Document) -> Iterable[Region]:
        for region in self.lexer(document):
            source = region.lexemes["source"]
            before = document.text[:region.start].rstrip()
            comment = before[before.rfind("<!--"):] if before.endswith("-->") else ""  # on the lines just before
            region.parsed = Block(info=region.lexemes["info"].strip(), source=source, comment=comment)
            region.evaluator = evaluate
            yield region


SYBIL = Sybil(parsers=[Blocks()], path=str(REPO))


def examples() -> list[tuple[str, Example]]:
    """(page:line, example) for every fenced block of every page."""
    return [(f"{page}:{example.line}", example) for page in PAGES
            for example in SYBIL.parse(REPO / page).examples()]


# --- `make docs`: the outputs the pages mark `output: make docs`, written from the tool -----------------------

def generated(block: Block) -> list[str]:
    """The lines a generated session block should hold: each `$` line, then its output (or its first lines, `…`)."""
    first = block.generated
    assert first is not None
    keep = int(first["lines"]) if first["lines"] else None
    lines: list[str] = []
    for command, _ in session(block.lines):
        _, printed = run_cli(_cli_argv(command))
        output = printed.rstrip("\n").splitlines()
        lines += [f"$ {command}", *(output if keep is None or len(output) <= keep else [*output[:keep], ELLIPSIS])]
    return lines


def write_generated(page: Path) -> bool:
    """Rewrite the page's `output: make docs` blocks from the tool; True when the page changed."""
    text = page.read_text(encoding="utf-8")
    document = SYBIL.parse(page)
    pieces, at = [], 0
    for example in document.examples():
        block: Block = example.parsed
        if not block.generated:
            continue
        source = example.region.lexemes["source"]
        start = example.start + source.offset  # the line after the opening fence
        pieces += [text[at:start], "\n".join(generated(block)) + "\n"]
        at = start + len(source)
    new = "".join(pieces) + text[at:]
    if new != text:
        page.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":  # `make docs`
    sys.path.insert(0, str(REPO / "tests"))
    import time_machine
    from support import NOON

    os.environ.pop("GPU_ASSIST_CURRENCY", None)
    os.environ.pop("COLUMNS", None)  # the pages show answers as a pipe gets them: 100 columns
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="gpu-assist-docs-")  # never the user's request store
    with time_machine.travel(NOON):
        for name in PAGES:
            if write_generated(REPO / name):
                print(f"wrote {name}")
