"""`gpu-assist spot watch [--on-warning CMD] -- JOB…`: run a job on a spot instance and act on EC2's warning."""

from __future__ import annotations

import argparse

from ..errors import GpuAssistError
from ..host.spot_watch import run_job


def answer(args: argparse.Namespace) -> int:
    """The job's exit status."""
    job = args.job[1:] if args.job[:1] == ["--"] else args.job
    if not job or args.interval <= 0:
        raise GpuAssistError("spot watch needs a job to run after --, and --interval above 0",
                             example="gpu-assist spot watch --on-warning 'python save.py' -- python train.py")
    return run_job(job, on_warning=args.on_warning, interval_s=args.interval)
