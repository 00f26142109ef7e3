"""`gpu-assist recommend …` and `tco …`: a workload's plans, and buying against renting."""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..catalog.gpus import GpuTable
from ..commands import Command, Context, grammar, quote_grammar
from ..commands.execute import run
from ..render import plans  # noqa: F401 - registers the renderers of plans and tco results
from .answers import show


def answer(args: argparse.Namespace) -> int:
    context = Context()
    command = command_of(args, context.catalog.gpus)
    return show(command, run(command, context), args)


def command_of(args: argparse.Namespace, gpus: GpuTable) -> Command:
    """`recommend`'s words and its `--top`, `--sort` and `--explain`; `tco`'s words."""
    words = quote_grammar.words_from(args.words)
    if args.command == "tco":
        return grammar.parse_verb("tco", words, gpus)
    top = None if args.top is None else quote_grammar.parse_top(args.top)  # a bad flag is named before the words
    sort = None if args.sort is None else grammar.parse_plan_sort(args.sort)
    command = grammar.parse_recommend(words, gpus)
    return replace(command, explain=command.explain or args.explain, top=command.top if args.top is None else top,
                   sort=sort or command.sort)
