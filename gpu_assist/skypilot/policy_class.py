"""`admin_policy: gpu_assist.skypilot.Policy`: the gate as a policy class, for an API server that installs
gpu-assist beside SkyPilot. It hands SkyPilot's request to the same gate the URL reaches, in SkyPilot's own
encoding, so the two cannot drift apart; the gate's store, policy and catalog are the process's configured ones
(`GPU_ASSIST_DB_URL`, `GPU_ASSIST_CONFIG`), built once.
"""

from __future__ import annotations

import functools
import json

from sky import admin_policy, exceptions

from ..commands import Context
from .gate import Gate, default_ttl_s
from .lines import IN_LAB
from .server import answer


@functools.cache
def _gate() -> Gate:
    context = Context()
    return Gate(context.approvals, ttl_s=default_ttl_s())


class Policy(admin_policy.AdminPolicy):
    """gpu-assist's approvals and budgets for every request SkyPilot's server applies its policy to."""

    @classmethod
    def validate_and_mutate(cls, user_request: admin_policy.UserRequest) -> admin_policy.MutatedUserRequest:
        status, _, body = answer(_gate(), user_request.encode().encode(), IN_LAB)
        if not status.startswith("200"):
            raise exceptions.UserRequestRejectedByPolicy(body.decode())
        return admin_policy.MutatedUserRequest.decode(_inner(body), user_request)


def _inner(body: bytes) -> str:
    """The encoded mutated request inside the gate's answer (a JSON string, as the URL answers it)."""
    text: str = json.loads(body)
    return text
