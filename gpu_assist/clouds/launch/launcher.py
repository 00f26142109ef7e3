"""The one exactly-once launcher: `Launcher` answers `lifecycle.ports.Provisioner` for every native cloud, over
the small operations each cloud supplies (`CloudOperations`, in `clouds/launch/<cloud>.py`).

Exactly once, whatever the path (approval, retry, reconciler, replica):
- before any launch, the instances tagged with the request id are looked up in every candidate region
  (`find_tagged`); found ones are the launch (a crash or another owner launched them), never launched again;
- each run carries an idempotency token derived from the request and the zone alone (`ports.client_token`): on a
  cloud that keeps tokens, a retried call or a second owner's call returns the same instances;
- the caller's ownership is checked (its lease renewed) right before each run: OwnershipLost when it is gone;
- instances tagged with the request beyond the ones the store records are terminated only by the caller, once it
  has recorded which it keeps (`terminate_surplus`).
Capacity: a capacity error moves on to the next zone, then the next allowed region, never above the approved
hourly ceiling. Ownership: a stop, an extension or a reap acts only on instances carrying gpu-assist's request tag
(`require_managed`), stopping or terminating them as the policy says.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, NamedTuple, Protocol, TypeVar

from ...catalog.providers import display_name
from ...errors import GpuAssistError, PolicyError, ProvisionError
from ...lifecycle.policy import Policy
from ...lifecycle.ports import LaunchOutcome, Launched, OwnershipLost, client_token
from ...lifecycle.specs import LaunchSpec
from .. import sdk
from ..sdk import with_backoff
from ..tags import REQUEST_TAG

T = TypeVar("T")


class Found(NamedTuple):
    """A live instance tagged with a request, as the cloud lists it."""

    instance_id: str
    zone: str | None
    created: str  # the cloud's creation time, sortable as text


class CloudOperations(Protocol):
    """What one cloud does for the launcher: each a call or two of its API, raising its SDK's errors (the
    launcher explains them with `explain`)."""

    provider: str
    policy: Policy

    def dry_run(self, spec: LaunchSpec) -> str: ...

    def quota(self, spec: LaunchSpec) -> str: ...

    def find_tagged(self, region: str, request_id: str) -> list[Found]: ...

    def zones(self, region: str, zone: str | None) -> list[str | None]: ...

    def run(self, spec: LaunchSpec, region: str, zone: str | None, token: str, ends_at: str) -> tuple[list[str],
                                                                                                       str | None]: ...

    def is_capacity(self, error: Exception) -> str | None: ...

    def owners(self, region: str, instance_ids: list[str]) -> dict[str, str | None]: ...

    def terminate(self, region: str, instance_ids: list[str]) -> None: ...

    def stop(self, region: str, instance_ids: list[str]) -> None: ...

    def tag_expiry(self, region: str, instance_ids: list[str], ends_at: str) -> None: ...

    def explain(self, error: Exception, doing: str) -> ProvisionError: ...


class SdkOperations:
    """What the operations over a cloud's Python SDK share: the policy, a client per region, the SDK's adapter
    (`clouds/sdk/`: which errors are retried, how a refusal reads), the backoff's sleep, and the shape of a dry run
    and of an explained error. A cloud says how its dry run is sent (`dry_call`) and which error means it would have
    passed (`dry_run_passed`)."""

    provider: str  # also the name of the cloud's module of `clouds/sdk/`

    def __init__(self, policy: Policy, client: Callable[[str], Any] | None, sleep: Callable[[float], None]):
        self.policy = policy
        # a client per region: the adapter's (its endpoint variable or the public one), or the tests' local server
        self.client = client or (lambda region: self.adapter().default_client(region))
        self.sleep = sleep

    def adapter(self) -> Any:
        """The cloud's SDK adapter (`clouds/sdk/<provider>.py`), imported on the first call: every process builds
        the provisioners, and the China clouds' SDKs are the optional `china` extra."""
        return importlib.import_module(f"{sdk.__name__}.{self.provider}")

    def image(self, example: str) -> str:
        """The policy's image for this cloud's launches; ProvisionError naming the setting (`example` its form)
        when there is none."""
        image = self.policy.cloud(self.provider, "image_id")
        if not image:
            raise ProvisionError(f"no image configured for {display_name(self.provider)} launches",
                                 hint="set " + self.policy.source.to_set("image_id", example,
                                                                          table=f"policy.clouds.{self.provider}")
                                 + " (a GPU image of the region)")
        return image

    def retried(self, call: Callable[[], T]) -> T:
        """`call()`, retried with backoff while the cloud throttles (as its adapter tells)."""
        return with_backoff(call, self.adapter().retryable, self.sleep)

    def dry_call(self, spec: LaunchSpec) -> None:
        raise NotImplementedError

    def dry_run_passed(self, error: Exception) -> bool:
        return getattr(error, "code", None) == "DryRunOperation"

    def refused(self, error: Exception, doing: str) -> ProvisionError:
        explained: ProvisionError = self.adapter().refused(error, doing)
        return explained

    def explain(self, error: Exception, doing: str) -> ProvisionError:
        """A cloud error as one line a user can act on (never the credentials, which the SDKs do not print)."""
        if isinstance(error, GpuAssistError):
            return ProvisionError(f"{doing}: {error.message}", hint=error.hint)
        return self.refused(error, doing)

    def dry_run(self, spec: LaunchSpec) -> str:
        """'ok' when the cloud says the launch would be accepted; otherwise the reason (never raises)."""
        try:
            self.dry_call(spec)
        except Exception as error:  # noqa: BLE001 - the SDK's and the network's errors all become the reason
            if self.dry_run_passed(error):
                return "ok"
            if isinstance(error, GpuAssistError):
                return f"not checked: {error.message}"
            return f"refused: {self.explain(error, 'checking the launch (DryRun)').message}"
        return "ok"


class Launcher:
    """A Provisioner on one native cloud: the exactly-once launch, failover, surplus, ownership and stops, over
    `cloud`'s operations."""

    def __init__(self, cloud: CloudOperations):
        self.cloud = cloud

    @property
    def policy(self) -> Policy:
        """The policy the cloud's operations launch under (image, network, tags, stop or terminate)."""
        return self.cloud.policy

    @policy.setter
    def policy(self, policy: Policy) -> None:
        self.cloud.policy = policy

    def __repr__(self) -> str:
        return f"{type(self).__name__}(account={self.policy.cloud(self.cloud.provider, 'account')!r})"

    def _explained(self, doing: str, call: Callable[[], Any]) -> Any:
        """`call()`, its cloud's errors as one ProvisionError a user can act on; ours pass through."""
        try:
            return call()
        except (GpuAssistError, OwnershipLost):
            raise
        except Exception as error:  # noqa: BLE001 - the SDK's and the network's errors all become the reason
            raise self.cloud.explain(error, doing) from None

    # ---- checks before approval -------------------------------------------------------------------------
    def dry_run(self, spec: LaunchSpec) -> str:
        """'ok' when the cloud says the launch would succeed; otherwise the reason (never raises)."""
        return self.cloud.dry_run(spec)

    def quota(self, spec: LaunchSpec) -> str:
        """Whether the account's quota covers the request; 'quota unknown …' when the cloud does not say."""
        return self.cloud.quota(spec)

    # ---- launch -----------------------------------------------------------------------------------------
    def find(self, request_id: str, regions: list[str]) -> tuple[str, list[Found]]:
        """(region, live instances) carrying the request's tag, in the first region that has any."""
        for region in regions:
            found = self.cloud.find_tagged(region, request_id)
            if found:
                return region, found
        return "", []

    def launch(self, spec: LaunchSpec, *, ends_at: str, still_ours: Callable[[], bool]) -> LaunchOutcome:
        """Start the request's instances once, tagged to end at `ends_at`: the ones tagged with it when there are,
        else a run per candidate zone until one has capacity. `still_ours()` is asked right before each run:
        OwnershipLost when it says no. ProvisionError when no candidate has capacity."""
        regions = list(dict.fromkeys(c.region for c in spec.candidates)) or [spec.region]
        region, existing = self._explained("looking for the request's instances", lambda: self.find(spec.request_id,
                                                                                                      regions))
        if existing:
            existing = sorted(existing, key=lambda i: (i.created, i.instance_id))
            return LaunchOutcome([i.instance_id for i in existing[:spec.instances]], region, existing[0].zone,
                                 reused=True)
        attempts: list[str] = []
        for candidate in spec.candidates:
            if candidate.hourly > spec.ceiling_hourly:
                attempts.append(f"{candidate.region}: {candidate.hourly}/h is above the ceiling, skipped")
                continue
            try:
                zones = self.cloud.zones(candidate.region, candidate.zone)
            except GpuAssistError:
                raise
            except Exception as error:  # noqa: BLE001 - a region that does not answer is one more attempt
                attempts.append(f"{candidate.region}: {self.cloud.explain(error, 'listing zones').message}")
                continue
            for zone in zones:
                outcome = self._run(spec, candidate.region, zone, ends_at, still_ours, attempts)
                if outcome is not None:
                    return outcome
        raise ProvisionError(f"no capacity for {spec.instances}x{spec.instance_type} within "
                             f"{spec.ceiling_hourly}/h: " + "; ".join(attempts))

    def _run(self, spec: LaunchSpec, region: str, zone: str | None, ends_at: str, still_ours: Callable[[], bool],
             attempts: list[str]) -> LaunchOutcome | None:
        """One run in `zone` with the request's token; None (the reason in `attempts`) when it has no capacity."""
        if not still_ours():
            raise OwnershipLost(f"{spec.request_id} was taken over by another process before it launched")
        token = client_token(spec.request_id, zone or region)
        try:
            ids, placed = self.cloud.run(spec, region, zone, token, ends_at)
        except (GpuAssistError, OwnershipLost):
            raise
        except Exception as error:  # noqa: BLE001
            capacity = self.cloud.is_capacity(error)
            if capacity:
                attempts.append(f"{zone or region}: {capacity}")
                return None
            raise self.cloud.explain(error, f"launching {spec.instance_type} in {region}") from None
        return LaunchOutcome(ids, region, placed or zone, attempts=attempts)

    def terminate_surplus(self, request_id: str, keep: Launched) -> str:
        """Terminate instances tagged with this request beyond `keep` (the ones the store records). What it did,
        in words ("" for nothing)."""
        try:
            live = self.cloud.find_tagged(keep.region, request_id)
            surplus = [i.instance_id for i in live if i.instance_id not in keep.instance_ids]
            if surplus:
                self.cloud.terminate(keep.region, surplus)
        except Exception as error:  # noqa: BLE001
            return f"could not check for duplicate instances: {self.cloud.explain(error, 'checking').message}"
        return f"terminated {len(surplus)} duplicate instance(s), keeping {', '.join(keep.instance_ids)}: " \
               f"{', '.join(surplus)}" if surplus else ""

    # ---- ownership, stop, extend ------------------------------------------------------------------------
    def require_managed(self, launched: Launched) -> dict[str, str]:
        """instance id → gpu-assist request id; PolicyError naming any instance gpu-assist did not launch."""
        ids = list(launched.instance_ids)
        owners = self._explained("looking up the instances", lambda: self.cloud.owners(launched.region, ids))
        foreign = [i for i in ids if not owners.get(i)]
        if foreign:
            raise PolicyError(f"not launched by gpu-assist: {', '.join(foreign)}",
                              hint=f"gpu-assist acts only on instances carrying its {REQUEST_TAG} tag")
        return {i: str(owners[i]) for i in ids}

    def stop(self, launched: Launched) -> list[str]:
        """Stop (no charging while stopped) or terminate, per policy, only instances gpu-assist launched."""
        self.require_managed(launched)
        ids = list(launched.instance_ids)
        act = self.cloud.stop if self.policy.stop_action == "stop" else self.cloud.terminate
        self._explained(f"stopping {', '.join(ids)}", lambda: act(launched.region, ids))
        return ids

    def set_expiry(self, launched: Launched, ends_at: str) -> None:
        """Move the `gpu-assist:expires-at` tag of instances gpu-assist launched (an approved extension); a cloud
        whose API writes no tags after launch leaves it, and the store's end (which the reaper reads) moves."""
        self.require_managed(launched)
        ids = list(launched.instance_ids)
        self._explained(f"tagging {', '.join(ids)}", lambda: self.cloud.tag_expiry(launched.region, ids, ends_at))
