"""`gpu-assist quote` and `help`, and what every grammar verb's answer shares: the Namespace becomes the same
command object Slack and Jupyter build (the words after the verb through the grammar, each flag through the
grammar's parser for its value, never back through text), then `quoting.quote_view`, then the renderer `--format`
names. The other grammar verbs build their commands in `plans.py`, `team.py`, `submit.py` and `util.py` and run
them through `execute.run`, each importing the core and the renderers its verb needs, so that a quote imports
none of them."""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import replace
from typing import Any, Callable

from ..catalog.gpus import GpuTable
from ..commands import Command, Context, HelpCommand, QuoteCommand, RecommendCommand, Result, quote_grammar
from ..commands.quoting import quote_view
from ..pricing.query_parser import parse_currency, parse_pricing_models, parse_providers, parse_regions
from ..render import notes

DEFAULT_TOP = 15  # a terminal's worth of comparison rows; JSON gives every option


def answer(args: argparse.Namespace) -> int:
    """`quote …` or `help`: answer it (`quoting.quote_view`, as `run` answers a quote in every face) and print it."""
    context = Context()
    command = command_of(args, context.catalog.gpus)
    result: Result = command if isinstance(command, HelpCommand) else \
        quote_view(command, context.catalog, today=context.today(), currency=context.currency)
    return show(command, result, args)


def command_of(args: argparse.Namespace, gpus: GpuTable) -> QuoteCommand | HelpCommand:
    """`quote`'s or `help`'s arguments as a command object."""
    return _quote(args, gpus) if args.command == "quote" else HelpCommand()


def _quote(args: argparse.Namespace, gpus: GpuTable) -> QuoteCommand:
    """Flags first (a bad one is named before the words are read), then the words, then the request's filters."""
    grammar = quote_grammar
    options: dict[str, Any] = {name: parse(value) for name, parse, value in (
        ("top", grammar.parse_top, args.top), ("sort", grammar.parse_sort, args.sort),
        ("min_gpu_memory_gib", grammar.parse_min_gpu_memory, args.min_gpu_memory)) if value is not None}
    if args.max_price is not None:
        options["max_price"], options["max_price_currency"] = grammar.parse_max_price(args.max_price)
    flat_list = args.format == "json"  # JSON is the flat list of options (each names its comparison row)
    command = grammar.parse_quote(grammar.words_from(args.words), gpus, top=None if flat_list else DEFAULT_TOP)
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
                   explain=command.explain or args.explain, **options)


def show(command: Command, result: Result, args: argparse.Namespace) -> int:
    """Print a command's answer in the `--format` named."""
    output = getattr(args, "format", "text")  # `help` has no --format
    explain = isinstance(command, (RecommendCommand, QuoteCommand)) and command.explain
    print(renderer(output)(result, explain=explain, **terminal(output)))
    _say_why_empty(result, output)
    return 0


def renderer(output: str) -> Callable[..., str]:
    """The `render` of the renderer `--format` names (`gpu_assist.render.<format>`); only that one is imported."""
    render: Callable[..., str] = importlib.import_module(f".{output}", "gpu_assist.render").render
    return render


def terminal(output: str) -> dict[str, bool]:
    """The text renderer's options for this terminal: colour when stdout is one."""
    return {"color": sys.stdout.isatty()} if output == "text" else {}


def _say_why_empty(result: Result, output: str) -> None:
    """A machine-readable answer with no options still tells the person why, on stderr (the text view says it)."""
    quote = getattr(result, "quote", result)
    reason = getattr(quote, "empty_reason", None)
    if output != "text" and reason and not getattr(quote, "options", ()):
        print(f"no options: {notes.words(reason)}", file=sys.stderr)
