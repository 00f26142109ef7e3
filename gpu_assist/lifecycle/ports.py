"""Cloud provisioning, the only code that starts or stops machines: what the approval path asks of a cloud
(`Provisioner`), and `Clouds`, the one the approval path holds: it hands a launch to its spec's cloud, and the
instances of a launch record (`Launched`: cloud, region, ids) to the record's cloud. Each native cloud's answer is
`clouds.launch.launcher.Launcher` over that cloud's operations (`clouds/launch/<cloud>.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, Protocol

from ..catalog.providers import cloud_of
from ..errors import PolicyError

if TYPE_CHECKING:
    from .policy import PolicySource
    from .specs import LaunchSpec

STOP_EXAMPLE = "stop i-0123456789abcdef0"


def client_token(request_id: str, placement: str) -> str:
    """RunInstances' idempotency key for a request in one zone (or region): derived from nothing but those, so every
    process that launches it there sends the same one (EC2, CVM and ECS allow 64 ASCII characters)."""
    return f"{request_id}@{placement}"[:64]


@dataclass(frozen=True)
class Launched:
    """Instances as a launch record places them: the cloud and region it launched them in, and their ids. A stop,
    an extension, a reap and a check for duplicates route by it, never by the look of an id."""

    provider: str
    region: str
    instance_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "instance_ids", tuple(self.instance_ids))


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

    def require_managed(self, launched: Launched) -> dict[str, str]: ...

    def launch(self, spec: LaunchSpec, *, ends_at: str, still_ours: Callable[[], bool]) -> LaunchOutcome: ...

    def terminate_surplus(self, request_id: str, keep: Launched) -> str: ...

    def stop(self, launched: Launched) -> list[str]: ...

    def set_expiry(self, launched: Launched, ends_at: str) -> None: ...


class Clouds:
    """A Provisioner over several clouds: a launch goes to its spec's `provider`, and only to one of `launches`
    (the policy's allowed providers); stops, tags and lookups go to the launch record's cloud, any cloud it
    holds, so instances launched before a cloud was switched off can still be stopped and reaped."""

    def __init__(self, by_provider: Mapping[str, Provisioner], launches: tuple[str, ...] | None = None,
                 source: PolicySource | None = None):
        self.by_provider = dict(by_provider)
        self.launches = tuple(self.by_provider) if launches is None else launches
        self.source = source  # where `launches` was read from (the policy's allowed_providers), for its errors

    def __repr__(self) -> str:
        return f"Clouds({', '.join(self.by_provider)}; launches on {', '.join(self.launches)})"

    def of(self, provider: str, *, launching: bool = False) -> Provisioner:
        """The cloud's provisioner; PolicyError when it has none, or when `launching` there is off."""
        if provider not in self.by_provider or (launching and provider not in self.launches):
            raise PolicyError(f"launches on {provider} are off: the policy allows {', '.join(self.launches)}",
                              hint="an admin adds it: " + self._allowing(provider))
        return self.by_provider[provider]

    def _allowing(self, provider: str) -> str:
        from .policy import PolicySource, allow_provider  # the policy's reader, only for this error's words

        return allow_provider(self.source or PolicySource(), provider)

    def dry_run(self, spec: LaunchSpec) -> str:
        return self.of(spec.provider, launching=True).dry_run(spec)

    def quota(self, spec: LaunchSpec) -> str:
        return self.of(spec.provider, launching=True).quota(spec)

    def require_managed(self, launched: Launched) -> dict[str, str]:
        return self.of(launched.provider).require_managed(launched)

    def launch(self, spec: LaunchSpec, *, ends_at: str, still_ours: Callable[[], bool]) -> LaunchOutcome:
        return self.of(spec.provider, launching=True).launch(spec, ends_at=ends_at, still_ours=still_ours)

    def terminate_surplus(self, request_id: str, keep: Launched) -> str:
        return self.of(keep.provider).terminate_surplus(request_id, keep)

    def stop(self, launched: Launched) -> list[str]:
        return self.of(launched.provider).stop(launched)

    def set_expiry(self, launched: Launched, ends_at: str) -> None:
        self.of(launched.provider).set_expiry(launched, ends_at)


def stopping(instance_ids: list[str], provider: str | None, region: str) -> Launched:
    """The instances a person names to stop, placed: by the launch record that holds them (`provider`), else by
    the form of their ids (a fallback: only a native cloud's ids have one); PolicyError when they are not one
    cloud's."""
    clouds = {provider} if provider else {cloud_of(i) for i in instance_ids}
    if None in clouds or len(clouds) != 1:
        raise PolicyError(f"not instances of one cloud: {', '.join(instance_ids)}", example=STOP_EXAMPLE)
    return Launched(str(clouds.pop()), region, tuple(instance_ids))
