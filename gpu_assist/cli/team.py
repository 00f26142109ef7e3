"""`gpu-assist requests`, `spend` and `commit`: what the team has asked for, spent, and might commit to."""

from __future__ import annotations

import argparse

from ..catalog.gpus import GpuTable
from ..commands import Command, Context, grammar, quote_grammar
from ..commands.execute import run
from ..render import operations  # noqa: F401 - registers the renderers of requests, spend and commitments
from .answers import show


def answer(args: argparse.Namespace) -> int:
    context = Context()
    command = command_of(args, context.catalog.gpus)
    return show(command, run(command, context), args)


def command_of(args: argparse.Namespace, gpus: GpuTable) -> Command:
    """The words after the verb are the whole command (`requests list` and `requests show ID` as Slack's
    `requests` and `requests ID`)."""
    words = quote_grammar.words_from(args.words)
    if args.command == "requests" and words[:1] in (["list"], ["show"]):
        words = words[1:]
    return grammar.parse_verb(args.command, words, gpus)
