"""The grammar's verbs on the command line: the Namespace becomes the same command objects Slack and Jupyter
build (the words after the verb through the grammar, each flag through the grammar's parser for its value, never
back through text), then `commands.run`, then the renderer `--format` names."""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..commands import Command, QuoteCommand, RecommendCommand, UtilCommand
    from ..gpus import GpuTable

EXIT_NOTHING_TO_WATCH = 1
DEFAULT_TOP = 15  # a terminal's worth of comparison rows; JSON gives every option


def command_of(args: argparse.Namespace, gpus: GpuTable) -> Command:
    """The CLI's arguments as a command object."""
    return _BUILDERS.get(args.command, _words_only)(args, gpus)


def _quote(args: argparse.Namespace, gpus: GpuTable) -> QuoteCommand:
    """Flags first (a bad one is named before the words are read), then the words, then the request's filters."""
    from ..commands import grammar
    from ..request import parse_currency, parse_pricing_models, parse_providers, parse_regions

    options: dict[str, Any] = {name: parse(value) for name, parse, value in (
        ("top", grammar.parse_top, args.top), ("sort", grammar.parse_sort, args.sort),
        ("min_gpu_memory_gib", grammar.parse_min_gpu_memory, args.min_gpu_memory)) if value is not None}
    if args.max_price is not None:
        options["max_price"], options["max_price_currency"] = grammar.parse_max_price(args.max_price)
    flat_list = args.format == "json"  # JSON is the flat list of options (each names its comparison row)
    command = grammar.parse_quote(grammar.words_of(" ".join(args.words)), gpus,
                                  top=None if flat_list else DEFAULT_TOP)
    request = command.request.narrowed(
        providers=[name for value in args.provider for name in parse_providers(value)],
        regions=[name for value in args.region for name in parse_regions(value)],
        pricing_models=parse_pricing_models(args.pricing) if args.pricing is not None else (),
        currency=None if args.currency is None else parse_currency(args.currency, example="8xA100 72h currency=CNY"))
    return replace(command, request=request, all_regions=command.all_regions or args.all_regions,
                   include_flagged=command.include_flagged or args.include_flagged,
                   verified_only=command.verified_only or args.verified_only,
                   include_unverified=command.include_unverified or args.include_unverified,
                   view="list" if args.list or flat_list else command.view,
                   explain=command.explain or getattr(args, "explain", False), **options)


def _recommend(args: argparse.Namespace, gpus: GpuTable) -> RecommendCommand:
    from ..commands import grammar

    top = None if args.top is None else grammar.parse_top(args.top)
    command = grammar.parse_recommend(grammar.words_of(" ".join(args.words)), gpus)
    return replace(command, explain=command.explain or args.explain, top=command.top if args.top is None else top)


def _util(args: argparse.Namespace, _gpus: GpuTable) -> UtilCommand:
    """The grammar's words (`util fleet region=us-east-1 window=30m`, as `help` and Slack say them), then the
    flags, each through the grammar's parser for its value; a flag given too wins over its word."""
    from ..commands import grammar

    command = grammar.parse_util(grammar.words_of(" ".join(args.words)))
    values: dict[str, Any] = {}
    if args.window:
        values["window_s"] = grammar.parse_window(args.window)
    if args.threshold:
        values["threshold_pct"] = grammar.parse_threshold(args.threshold)
    ids = command.instance_ids + tuple(grammar.parse_instance_id(value) for value in args.instance)
    region = args.region.strip().lower() if args.region else command.region
    return replace(command, fleet=command.fleet or args.fleet or bool(region) or bool(ids), region=region,
                   instance_ids=ids, **values)


def _words_only(args: argparse.Namespace, gpus: GpuTable) -> Command:
    """tco, launch, stop, spend, requests: the words after the verb are the whole command."""
    from ..commands import grammar

    words = grammar.words_of(" ".join(args.words))
    if args.command == "requests" and words[:1] in (["list"], ["show"]):
        words = words[1:]
    return grammar.parse_verb(args.command, words, gpus)


def _help(args: argparse.Namespace, gpus: GpuTable) -> Command:
    from ..commands import HelpCommand

    return HelpCommand()


_BUILDERS: dict[str, Callable[[argparse.Namespace, GpuTable], Command]] = {
    "quote": _quote, "recommend": _recommend, "util": _util, "help": _help}


# The module that registers the renderers of a verb's result, for the verbs other than quote and help.
_RESULT_RENDERERS = {"recommend": "gpu_assist.render.plans", "tco": "gpu_assist.render.plans"} | dict.fromkeys(
    ("util", "requests", "spend", "commit", "launch", "stop", "extend"), "gpu_assist.render.operations")


def answer(args: argparse.Namespace) -> int:
    """Run the command and print its answer; `util --watch` redraws it until interrupted."""
    from ..commands import Context, QuoteCommand, RecommendCommand, run

    context = Context()
    command = command_of(args, context.catalog.gpus)
    output = getattr(args, "format", "text")
    explain = isinstance(command, (RecommendCommand, QuoteCommand)) and command.explain
    renderer: Any = importlib.import_module(f".{output}", "gpu_assist.render")  # only the one --format names
    if args.command in _RESULT_RENDERERS:  # the renderers of the verb's result, which a quote does not need
        importlib.import_module(_RESULT_RENDERERS[args.command])
    options = {"color": sys.stdout.isatty()} if output == "text" else {}
    actor = _actor(args)
    while True:
        result = run(command, context, actor=actor)
        if not getattr(args, "watch", False):
            print(renderer.render(result, explain=explain, **options))
            _say_why_empty(result, output)
            return 0
        if _nothing_to_watch(result):
            from ..render import text as render_text

            print(f"{render_text.render(result)}: nothing to watch", file=sys.stderr)
            return EXIT_NOTHING_TO_WATCH
        print("\x1b[H\x1b[2J" + renderer.render(result, **options), flush=True)  # clear the screen, redraw
        time.sleep(max(0.1, args.interval))


def _say_why_empty(result: object, output: str) -> None:
    """A machine-readable answer with no options still tells the person why, on stderr (the text view says it)."""
    quote = getattr(result, "quote", result)
    reason = getattr(quote, "empty_reason", None)
    if output != "text" and reason and not getattr(quote, "options", ()):
        from ..render.notes import words

        print(f"no options: {words(reason)}", file=sys.stderr)


def _nothing_to_watch(result: object) -> bool:
    """A machine without GPUs will not grow one while we redraw: `util --watch` says so and stops."""
    from ..nvml import Snapshot

    return isinstance(result, Snapshot) and not result.gpus


def _actor(args: argparse.Namespace) -> str | None:
    """Who submits, for the verbs that take `--as` (launch, stop, extend): a name the person chose, so recorded as
    unauthenticated and never an approver. The others record no one, and need not look up the login."""
    if not hasattr(args, "actor"):
        return None
    from ..identity import chosen_name

    return chosen_name(args.actor)
