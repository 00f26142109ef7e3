"""`gpu-assist slack serve` (HTTP, waitress or gunicorn) or `slack socket` (Socket Mode): the Slack app."""

from __future__ import annotations

import argparse

from slackbot import server

from ..errors import GpuAssistError


def answer(args: argparse.Namespace) -> int:
    if args.slack_command == "serve":
        if args.workers < 1 or args.threads < 1:
            raise GpuAssistError("--workers and --threads must be at least 1",
                                 hint="e.g. gpu-assist slack serve --workers 2")
        server.serve(args.host, args.port, threads=args.threads, jobs=not args.no_jobs, workers=args.workers)
    else:
        server.socket_mode()
    return 0
