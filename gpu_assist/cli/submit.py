"""`gpu-assist launch|stop|extend … --as NAME`: requests an approver decides, submitted under the name given."""

from __future__ import annotations

import argparse

from ..commands import Context, grammar, quote_grammar
from ..commands.execute import run
from ..lifecycle.identity import chosen_name
from ..render import operations  # noqa: F401 - registers the renderers of a submitted request
from .answers import show


def answer(args: argparse.Namespace) -> int:
    """Who submits is a name the person chose (`--as`, else GPU_ASSIST_USER or the login), so it is recorded as
    unauthenticated and is never an approver's."""
    context = Context()
    command = grammar.parse_verb(args.command, quote_grammar.words_from(args.words), context.catalog.gpus)
    return show(command, run(command, context, actor=chosen_name(args.actor)), args)
