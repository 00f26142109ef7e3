"""`gpu-assist util`: GPU utilization, of this machine or the fleet, once or redrawn every `--interval` seconds
under `--watch` until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from typing import Any

from ..catalog.gpus import GpuTable
from ..commands import Context, Result, UtilCommand, grammar, quote_grammar
from ..commands.execute import run
from ..host.nvml import Snapshot
from ..render import operations, text  # noqa: F401 - operations registers the renderers of snapshots and fleets
from .answers import renderer, show, terminal

EXIT_NOTHING_TO_WATCH = 1


def answer(args: argparse.Namespace) -> int:
    context = Context()
    command = command_of(args, context.catalog.gpus)
    if not args.watch:
        return show(command, run(command, context), args)
    render = renderer(args.format)
    while True:
        result = run(command, context)
        if _nothing_to_watch(result):
            print(f"{text.render(result)}: nothing to watch", file=sys.stderr)
            return EXIT_NOTHING_TO_WATCH
        print("\x1b[H\x1b[2J" + render(result, **terminal(args.format)), flush=True)  # clear the screen, redraw
        time.sleep(max(0.1, args.interval))


def command_of(args: argparse.Namespace, _gpus: GpuTable) -> UtilCommand:
    """The grammar's words (`util fleet region=us-east-1 window=30m`, as `help` and Slack say them), then the
    flags, each through the grammar's parser for its value; a flag given too wins over its word."""
    command = grammar.parse_util(quote_grammar.words_from(args.words))
    values: dict[str, Any] = {}
    if args.window:
        values["window_s"] = grammar.parse_window(args.window)
    if args.threshold:
        values["threshold_pct"] = grammar.parse_threshold(args.threshold)
    ids = command.instance_ids + tuple(grammar.parse_instance_id(value) for value in args.instance)
    region = args.region.strip().lower() if args.region else command.region
    return replace(command, fleet=command.fleet or args.fleet or bool(region) or bool(ids), region=region,
                   instance_ids=ids, **values)


def _nothing_to_watch(result: Result) -> bool:
    """A machine without GPUs will not grow one while we redraw: `util --watch` says so and stops."""
    return isinstance(result, Snapshot) and not result.gpus
