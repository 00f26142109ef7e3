"""SkyPilot's gate: approvals and budgets for every launch a team's SkyPilot API server is asked for.

`gate` decides (priced by `pricing`, enforced by `enforcement`), `contract` reads and writes SkyPilot's admin-policy
request without importing SkyPilot, `server` answers it over HTTP (`POST /skypilot/policy`), and `lines` holds the
words a refused user reads. `Policy` is the same gate as a policy class, for an API server that installs
gpu-assist (`admin_policy: gpu_assist.skypilot.Policy`): it alone imports SkyPilot, and only when SkyPilot asks
for it, so the Slack server and a quote never do.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "Policy":  # SkyPilot's server imports this package and takes the class by name
        from .policy_class import Policy

        return Policy
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
