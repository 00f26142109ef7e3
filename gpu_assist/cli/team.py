"""`gpu-assist requests`, `spend` and `commit`: what the team has asked for, spent, and might commit to."""

from __future__ import annotations

import argparse
from typing import Callable

from ..commands import Context, quote_grammar, team_grammar, team_verbs
from ..render import operations  # noqa: F401 - registers the renderers of requests, spend and commitments
from .answers import show

# The verbs' parsers: none reads the GPU table, so the words are read without loading the catalog.
_PARSERS: dict[str, Callable[[list[str]], team_verbs.StoreCommand]] = {
    "requests": team_grammar.parse_requests, "spend": team_grammar.parse_spend, "commit": team_grammar.parse_commit}


def answer(args: argparse.Namespace) -> int:
    command = command_of(args)
    return show(command, team_verbs.answer(command, Context()), args)


def command_of(args: argparse.Namespace) -> team_verbs.StoreCommand:
    """The words after the verb are the whole command (`requests list` and `requests show ID` as Slack's
    `requests` and `requests ID`)."""
    words = quote_grammar.words_from(args.words)
    if args.command == "requests" and words[:1] in (["list"], ["show"]):
        words = words[1:]
    return _PARSERS[args.command](words)
