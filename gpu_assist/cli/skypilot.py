"""`gpu-assist skypilot serve`: SkyPilot's gate alone (`POST /skypilot/policy`), for a team that points its API
server's `admin_policy` at it without running the Slack server. It binds to loopback unless told otherwise: the
URL holds no secret, so only the API server should reach it (docs/skypilot.md)."""

from __future__ import annotations

import argparse
import functools

from ..commands import Context
from ..errors import GpuAssistError
from ..skypilot.gate import Gate, default_ttl_s
from ..skypilot.lines import IN_LAB
from ..skypilot.server import serve


def answer(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise GpuAssistError("--port must be 1-65535", example="gpu-assist skypilot serve --port 8765")
    context = Context()
    ttl_s = default_ttl_s()
    gate = functools.cache(lambda: Gate(context.approvals, ttl_s=ttl_s))
    serve(args.host, args.port, gate, IN_LAB,
          listening=lambda url: print(f"SkyPilot's admin policy on {url}", flush=True))
    return 0
