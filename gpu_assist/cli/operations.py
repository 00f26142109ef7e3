"""The request lifecycle's verbs, as an operator runs them: approve/reject as an audited break-glass override,
reconcile, reap, expire."""

from __future__ import annotations

import argparse

from ..commands import Context
from ..errors import GpuAssistError
from ..lifecycle.identity import operator_override
from ..plural import plural
from ..render import operations  # noqa: F401 - registers the renderers of a request record
from .answers import renderer


def _decider(args: argparse.Namespace) -> str:
    """The CLI decides only as an audited break-glass override: no identity a shell can claim is an approver's."""
    if not args.break_glass:
        raise GpuAssistError(f"the CLI cannot {args.command}: approvers decide in Slack or through the Jupyter "
                             "server", hint="operators may override with --break-glass --reason …, audited, "
                             "when the policy has break_glass = true",
                             example=f"gpu-assist {args.command} {args.request_id} --break-glass --reason 'Slack down'")
    return operator_override()


def answer(args: argparse.Namespace) -> int:
    """approve, reject, reconcile, reap, expire: the request lifecycle's own verbs."""
    approvals = Context().approvals
    if args.command in ("approve", "reject"):
        decider = _decider(args)
        record = approvals.approve(args.request_id, decider, reason=args.reason) if args.command == "approve" \
            else approvals.reject(args.request_id, decider, args.reason)
        print(renderer(args.format)(record))
        return 0
    jobs = approvals.orchestration
    done = {"reconcile": jobs.reconcile, "reap": jobs.reap, "expire": jobs.expire_due}[args.command]()
    print(f"{args.command}: {plural(len(done), 'request')}" + (f" ({', '.join(done)})" if done else ""))
    return 0
