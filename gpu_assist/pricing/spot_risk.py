"""The interruption model a spot price is judged by, shared by `quote spot` and `recommend`. Pure.

A synchronous job on `instances` spot instances stops whenever any one of them is taken back, so the job's
interruption rate is instances × the per-instance rate (the AWS Spot Advisor's band where it gives one, else
`INTERRUPTION_RATE_PER_H`). With a checkpoint every `CHECKPOINT_INTERVAL_H`, each costs its write every interval,
and each interruption half an interval of lost work plus a restart: the expected extra time per unit of work is
`overhead`. `plan/workload.py`'s `Assumptions` start from these defaults; a user may override them there.
"""

from __future__ import annotations

INTERRUPTION_RATE_PER_H = 0.05  # per instance-hour where the Spot Advisor gives no band
CHECKPOINT_INTERVAL_H = 0.5
CHECKPOINT_WRITE_H = 2 / 60
RESTART_H = 10 / 60


def overhead(instances: int = 1, rate_per_h: float | None = None, *, interval_h: float = CHECKPOINT_INTERVAL_H,
             write_h: float = CHECKPOINT_WRITE_H, restart_h: float = RESTART_H) -> float:
    """Expected extra time per unit of work on spot with checkpoints (see the module docstring)."""
    rate = INTERRUPTION_RATE_PER_H if rate_per_h is None else rate_per_h
    return write_h / interval_h + instances * rate * (interval_h / 2 + restart_h)
