"""SkyPilot as the launch engine: the operations the one launcher (`launcher.Launcher`) needs, over SkyPilot's
Python SDK (0.14) talking to the team's API server, for every catalog cloud with no provisioner of gpu-assist's own
that SkyPilot launches on (`catalog.providers.ENGINE_PROVIDERS`).

Exactly once: a launch request is one SkyPilot cluster, named after the request (`records.engine_cluster`). The name
is the idempotency key on the API server: the launcher's lookup before a launch is `sky.status` by that name, so a
second approval, the reconciler or a retry finds the cluster and never launches again, and a launch racing another
owner's gets the same cluster (the server holds one cluster per name). The approved price is the ceiling: the task
pins the approved cloud, region (and zone when the catalog names one) and instance type, spot only if approved, and
its autostop is `{idle_minutes: <time to live>, down: true, wait_for: none}` (SkyPilot counts idle minutes unless
`wait_for` is none), with the labels `gpu-assist-request-id` and `gpu-assist-project`, so a gate on the server
recognises gpu-assist's own launches. `sky.down` serves a stop, the reaper and a relaunch's stop; `sky.autostop`
moves the autodown when an extension is approved; a capacity error (`ResourcesUnavailableError`) moves on to the
next candidate region under the ceiling.
The API server is `SKYPILOT_API_SERVER_ENDPOINT`, required: the SDK would otherwise start a local server behind the
user's back, which `SKYPILOT_DISABLE_LOCAL_API_SERVER` forbids here. Credentials are SkyPilot's own (its service
account token, `SKYPILOT_SERVICE_ACCOUNT_TOKEN`, sent as a bearer token by the SDK; the clouds' keys stay on the
API server); none is stored, and errors are cut to their first line with any password in a URL taken out.
SkyPilot is the optional extra `gpu-assist[skypilot]`, imported on the first call: no quote or gate imports it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import hashlib
import os
import re
import sys
import threading
from typing import Any, Callable, Iterator

from ...errors import GpuAssistError, ProvisionError
from ...facts import PricingModel
from ...lifecycle.policy import Policy
from ...lifecycle.records import engine_cluster, engine_request
from ...lifecycle.specs import LaunchSpec
from .launcher import Found, Launcher

ENDPOINT_VARIABLE = "SKYPILOT_API_SERVER_ENDPOINT"
REQUEST_LABEL, PROJECT_LABEL = "gpu-assist-request-id", "gpu-assist-project"
_NO_LOCAL_SERVER = "SKYPILOT_DISABLE_LOCAL_API_SERVER"
_TOKEN_VARIABLE = "SKYPILOT_SERVICE_ACCOUNT_TOKEN"
_ASKED: dict[str, tuple[str, str]] = {}  # the endpoint and the token's digest the SDK's caches were filled for
_CAPACITY = ("ResourcesUnavailableError",)  # SkyPilot tried the pinned region's zones and found none free
_GONE = ("ClusterDoesNotExist",)             # already down: a stop or a reap has nothing left to do
_LABEL_VALUE = re.compile(r"[^a-z0-9_-]")    # what every cloud SkyPilot labels takes in a label's value
_PRINTING = threading.Lock()


def sdk() -> Any:
    """SkyPilot's SDK (`sky`), pointed at the team's API server; ProvisionError when no endpoint is set or the
    extra is not installed. Starting a local API server is turned off for this process first."""
    endpoint = os.environ.get(ENDPOINT_VARIABLE, "").strip().rstrip("/")
    if not endpoint:
        raise ProvisionError(f"{ENDPOINT_VARIABLE} is not set: launches through SkyPilot go to the team's API server",
                             hint=f"set {ENDPOINT_VARIABLE}=https://skypilot.example.com (gpu-assist never starts "
                                  "a local one)")
    os.environ[_NO_LOCAL_SERVER] = "1"
    try:
        import sky  # the optional extra, only where a launch goes through the engine
    except ImportError:
        raise ProvisionError("SkyPilot is not installed", hint="pip install 'gpu-assist[skypilot]'") from None
    common = sky.server.common
    # The SDK keeps the first endpoint it read and the server's answer to its first health check (a refusal of a
    # token included) for the process: a new endpoint or token is asked afresh.
    credentials = (endpoint, hashlib.sha256(os.environ.get(_TOKEN_VARIABLE, "").encode()).hexdigest())
    if _ASKED.get("credentials") != credentials or common.get_server_url() != endpoint:
        for cached in (common.get_server_url, common.is_api_server_local, common.get_api_server_status_response):
            cached.cache_clear()
        _ASKED["credentials"] = credentials
    return sky


def _said(error: Exception) -> str:
    """An SDK error's first line, without colour codes or a password in a URL."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip().splitlines()
    return re.sub(r"//[^/@\s]+@", "//", text[0] if text else type(error).__name__)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """What the SDK prints while it sends a call ("Running on cluster: …", its warnings) goes to stderr, never into
    a face's answer on stdout; one thread at a time, so that every thread finds stdout as it was."""
    with _PRINTING, contextlib.redirect_stdout(sys.stderr):
        yield


def _kind(error: Exception) -> str:
    return type(error).__name__


class SkyPilotOperations:
    """The launcher's operations on one cloud through SkyPilot: `sdk()` gives the `sky` module (tests point it at
    a local API server through the endpoint variable), `now` the clock an extension's new autodown is counted
    from."""

    def __init__(self, provider: str, policy: Policy, sdk: Callable[[], Any] = sdk,
                 now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc)):
        self.provider = provider
        self.policy = policy
        self.sdk = sdk
        self.now = now

    def explain(self, error: Exception, doing: str) -> ProvisionError:
        if isinstance(error, GpuAssistError):
            return ProvisionError(f"{doing}: {error.message}", hint=error.hint)
        refused = "Authentication" in _kind(error) or "PermissionDenied" in _kind(error) or \
            any(code in _said(error) for code in ("401 Client Error", "403 Client Error"))
        hint = "check SKYPILOT_SERVICE_ACCOUNT_TOKEN (an API server token) or run `sky api login`" if refused else None
        return ProvisionError(f"SkyPilot refused {doing}: {_kind(error)}: {_said(error)}", hint=hint)

    def _call(self, start: Callable[[Any], Any]) -> Any:
        """`start(sky)` (an SDK call that answers a request id), waited for on the API server."""
        sky = self.sdk()
        with _quiet():
            request = start(sky)
        return sky.get(request)

    # ---- the task -----------------------------------------------------------------------------------------
    def task(self, spec: LaunchSpec, region: str, zone: str | None) -> Any:
        """The `sky.Task` of a launch: the approved cloud, region, zone, type and pricing model, autodown at the
        time to live, and gpu-assist's labels (a project as a label value every cloud takes)."""
        sky = self.sdk()
        labels = {REQUEST_LABEL: spec.request_id}
        project = spec.project or self.policy.default_project
        if project:
            labels[PROJECT_LABEL] = _LABEL_VALUE.sub("-", project.lower())[:63]
        infra = "/".join(part for part in (self.provider, region, zone) if part)
        resources = sky.Resources(infra=infra, instance_type=spec.instance_type,
                                  use_spot=spec.pricing_model == PricingModel.SPOT, labels=labels,
                                  autostop={"idle_minutes": max(1, math.ceil(spec.duration_s / 60)), "down": True,
                                            "wait_for": "none"})
        task = sky.Task(name=engine_cluster(spec.request_id), num_nodes=spec.instances)
        task.set_resources(resources)
        return task

    # ---- checks before approval -------------------------------------------------------------------------
    def dry_run(self, spec: LaunchSpec) -> str:
        """'ok' when SkyPilot's client takes the task and the API server validates it (its admin policy too);
        otherwise the reason (never raises)."""
        try:
            sky = self.sdk()
            task = self.task(spec, spec.region, spec.zone or None)
            with _quiet():
                sky.client.sdk.validate(sky.utils.dag_utils.convert_entrypoint_to_dag(task))
        except GpuAssistError as error:
            return f"not checked: {error.message}"
        except Exception as error:  # noqa: BLE001 - the SDK's and the network's errors all become the reason
            return f"refused: {self.explain(error, 'checking the launch').message}"
        return "ok"

    def quota(self, spec: LaunchSpec) -> str:
        return "quota unknown (SkyPilot does not report quotas: the cloud answers at launch)"

    # ---- launch -----------------------------------------------------------------------------------------
    def _clusters(self, names: list[str]) -> list[Any]:
        """The API server's records of these clusters (every user's: the name is the key, whoever launched it)."""
        return list(self._call(lambda sky: sky.status(cluster_names=names, all_users=True)))

    def find_tagged(self, region: str, request_id: str) -> list[Found]:
        """The request's cluster when it is in `region` (a launch pins its region, so it is in no other)."""
        return [Found(str(c["name"]), None, str(c.get("launched_at") or ""))
                for c in self._clusters([engine_cluster(request_id)]) if c.get("region") in (region, None)]

    def zones(self, region: str, zone: str | None) -> list[str | None]:
        """The offer's zone when the catalog names one; else the region alone (SkyPilot tries its zones)."""
        return [zone or None]

    def run(self, spec: LaunchSpec, region: str, zone: str | None, token: str, ends_at: str
            ) -> tuple[list[str], str | None]:
        """`sky.launch` of the request's cluster (its name is the token: the server holds one cluster per name),
        waited for until it is up."""
        name, task = engine_cluster(spec.request_id), self.task(spec, region, zone)
        result = self._call(lambda sky: sky.launch(task, cluster_name=name, retry_until_up=False))
        handle = result[1] if isinstance(result, tuple) and len(result) > 1 else None
        placed = getattr(getattr(handle, "launched_resources", None), "zone", None)
        return [name], placed or zone

    def is_capacity(self, error: Exception) -> str | None:
        return f"{_kind(error)}: {_said(error)}" if _kind(error) in _CAPACITY else None

    # ---- ownership, stop, extend ------------------------------------------------------------------------
    def owners(self, region: str, instance_ids: list[str]) -> dict[str, str | None]:
        """Each cluster's request label; a cluster of gpu-assist's name that the server no longer holds is its
        request's, already down (its autodown at the time to live comes before the reaper)."""
        labels = {str(c["name"]): dict(c.get("labels") or {}) for c in self._clusters(instance_ids)}
        return {name: labels[name].get(REQUEST_LABEL) if name in labels else engine_request(name)
                for name in instance_ids}

    def _down(self, names: list[str]) -> None:
        for name in names:
            self._down_one(name)

    def _down_one(self, name: str) -> None:
        try:
            self._call(lambda sky: sky.down(name))
        except Exception as error:  # noqa: BLE001 - one already gone is down
            if _kind(error) not in _GONE:
                raise

    def terminate(self, region: str, instance_ids: list[str]) -> None:
        self._down(instance_ids)

    def stop(self, region: str, instance_ids: list[str]) -> None:
        """Down, as a terminate: many of the engine's clouds cannot stop a machine, and a stopped cluster's disks
        still bill."""
        self._down(instance_ids)

    def tag_expiry(self, region: str, instance_ids: list[str], ends_at: str) -> None:
        """Move the clusters' autodown to the new end (`sky.autostop`, counted from now, waiting for nothing)."""
        end = dt.datetime.strptime(ends_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
        minutes = max(1, math.ceil((end - self.now()).total_seconds() / 60))
        for name in instance_ids:
            self._autodown(name, minutes)

    def _autodown(self, name: str, minutes: int) -> None:
        self._call(lambda sky: sky.autostop(name, idle_minutes=minutes, down=True,
                                            wait_for=sky.skylet.autostop_lib.AutostopWaitFor.NONE))


class SkyPilotProvisioner(Launcher):
    """The launcher on one of the engine's clouds, through SkyPilot."""

    def __init__(self, provider: str, policy: Policy, sdk: Callable[[], Any] = sdk,
                 now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc)):
        super().__init__(SkyPilotOperations(provider, policy, sdk, now))


def engine(provider: str) -> Callable[[Policy], SkyPilotProvisioner]:
    """The provisioner factory of one engine cloud, as `commands.lifecycle.PROVISIONERS` holds them."""
    return lambda policy: SkyPilotProvisioner(provider, policy)
