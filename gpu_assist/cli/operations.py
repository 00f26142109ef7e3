"""What an operator runs: approve/reject as an audited break-glass override, reconcile, reap, expire, the
store's schema (`db`) and the Slack server."""

from __future__ import annotations

import argparse

from ..errors import GpuAssistError
from ..plural import plural


def _decider(args: argparse.Namespace) -> str:
    """The CLI decides only as an audited break-glass override: no identity a shell can claim is an approver's."""
    from ..identity import operator_override

    if not args.break_glass:
        raise GpuAssistError(f"the CLI cannot {args.command}: approvers decide in Slack or through the Jupyter "
                             "server", hint="operators may override with --break-glass --reason …, audited, "
                             "when the policy has break_glass = true",
                             example=f"gpu-assist {args.command} {args.request_id} --break-glass --reason 'Slack down'")
    return operator_override()


def lifecycle(args: argparse.Namespace) -> int:
    """approve, reject, reconcile, reap, expire: the request lifecycle's own verbs."""
    from ..commands import Context
    from ..render import json as render_json, operations, text as render_text  # noqa: F401 - operations registers

    approvals = Context().approvals
    if args.command in ("approve", "reject"):
        decider = _decider(args)
        record = approvals.approve(args.request_id, decider, reason=args.reason) if args.command == "approve" \
            else approvals.reject(args.request_id, decider, args.reason)
        renderer = render_json if args.format == "json" else render_text
        print(renderer.render(record))
        return 0
    jobs = approvals.orchestration
    done = {"reconcile": jobs.reconcile, "reap": jobs.reap, "expire": jobs.expire_due}[args.command]()
    print(f"{args.command}: {plural(len(done), 'request')}" + (f" ({', '.join(done)})" if done else ""))
    return 0


def db(args: argparse.Namespace) -> int:
    """`db upgrade`: what every server does at start, for a deploy step; `db current`: where the store is."""
    from .. import schema
    from ..store import Store

    store = Store(upgrade=False)
    if args.db_command == "upgrade":
        print(f"{store!r}: schema at {store.upgrade()} (newest)")
    else:
        print(f"{store!r}: schema at {store.revision() or 'none'}, newest {schema.head()}")
    return 0


def metrics(args: argparse.Namespace) -> int:
    """`metrics serve`: the Prometheus exposition on --host:--port until interrupted."""
    from ..metrics import serve

    if not 0 < args.port < 65536 or args.interval <= 0 or args.window < args.interval:
        raise GpuAssistError("--port must be 1-65535, --interval above 0 and --window at least --interval",
                             example="gpu-assist metrics serve --port 9400 --interval 5 --window 600")
    serve(args.host, args.port, interval_s=args.interval, window_s=args.window)
    return 0


def spot(args: argparse.Namespace) -> int:
    """`spot watch [--on-warning CMD] -- JOB…`: the job's exit status."""
    from ..spot import run_job

    job = args.job[1:] if args.job[:1] == ["--"] else args.job
    if not job or args.interval <= 0:
        raise GpuAssistError("spot watch needs a job to run after --, and --interval above 0",
                             example="gpu-assist spot watch --on-warning 'python save.py' -- python train.py")
    return run_job(job, on_warning=args.on_warning, interval_s=args.interval)


def slack(args: argparse.Namespace) -> int:
    """`slack serve` (HTTP) or `slack socket` (Socket Mode)."""
    from slackbot import server

    if args.slack_command == "serve":
        if args.workers < 1 or args.threads < 1:
            raise GpuAssistError("--workers and --threads must be at least 1",
                                 hint="e.g. gpu-assist slack serve --workers 2")
        server.serve(args.host, args.port, threads=args.threads, jobs=not args.no_jobs, workers=args.workers)
    else:
        server.socket_mode()
    return 0
