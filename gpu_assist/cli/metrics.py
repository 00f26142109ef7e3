"""`gpu-assist metrics serve`: the Prometheus exposition on --host:--port until interrupted; the team's series
where a store is configured."""

from __future__ import annotations

import argparse

from ..commands import Context
from ..errors import GpuAssistError
from ..metrics import serve
from ..store import configured


def answer(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536 or args.interval <= 0 or args.window < args.interval:
        raise GpuAssistError("--port must be 1-65535, --interval above 0 and --window at least --interval",
                             example="gpu-assist metrics serve --port 9400 --interval 5 --window 600")
    context = Context()
    team = (lambda: context.approvals.team_standing()) if configured() else None
    serve(args.host, args.port, context.sampler, team, interval_s=args.interval, window_s=args.window,
          listening=lambda url: print(f"serving Prometheus metrics on {url}", flush=True))
    return 0
