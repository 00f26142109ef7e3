"""Cloud provisioning, the only code that starts or stops machines: what the approval path asks of a cloud
(`Provisioner`), and AWS's answer (`provision.aws`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    from ..specs import LaunchSpec


@dataclass
class LaunchOutcome:
    instance_ids: list[str]
    region: str
    zone: str | None
    reused: bool = False  # found by the request's tag after a crash, not launched again
    attempts: list[str] = field(default_factory=list)


class OwnershipLost(Exception):
    """The caller no longer carries the request out (another process took it over after its lease ran out): it
    stops before acting on the cloud. Not a user's error: the orchestration audits it and moves on."""


class Provisioner(Protocol):
    """Checks before a decision, and the carrying out of one; every method raises GpuAssistError subclasses
    with a message a user can act on (or, for the checks, returns it)."""

    def dry_run(self, spec: LaunchSpec) -> str: ...

    def quota(self, spec: LaunchSpec) -> str: ...

    def require_managed(self, instance_ids: list[str], region: str) -> dict[str, str]: ...

    def launch(self, spec: LaunchSpec, *, ends_at: str, still_ours: Callable[[], bool]) -> LaunchOutcome: ...

    def terminate_surplus(self, request_id: str, region: str, keep: list[str]) -> str: ...

    def stop(self, instance_ids: list[str], region: str) -> list[str]: ...

    def set_expiry(self, instance_ids: list[str], region: str, ends_at: str) -> None: ...
