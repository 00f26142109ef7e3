"""SkyPilot's gate: every request the team's API server asks its admin policy about, decided against the team's
policy, budgets and approvals.

A launch is priced (`pricing`), checked, and then one of: let through now (under the auto-approve amount, or
admitted by an approval), or filed as one approval request (requester `skypilot:<user>`, never an approver of its
own) and refused with a line naming the request, where it waits and which `-c NAME` to launch with once approved.
SkyPilot asks several times per launch (validate, optimize, launch): the calls find the request by its cluster
name, else by the user and a fingerprint of the resources, so one launch makes one request however often it is
asked. Only a launch call that is not a dry run uses an approval up, and only for the cluster it names: a failed
launch may retry, a managed job's recovery relaunch of its cluster passes, and another cluster is a new request.
Calls made at the client side (no user) and calls that buy no machine pass as asked; the engine's own launches
(an approved gpu-assist request's id in the cluster's name and label) pass without a second request.
What a forged call can do: file a pending request an approver sees. It cannot admit anything (only an approver's
decision does) nor use an approval up for the one who asked (a use only binds the cluster name that the approval
names, which the user's launch then still gets).
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import yaml

from ..errors import GpuAssistError, ParseError, PolicyError
from ..lifecycle import states
from ..lifecycle.approvals import Approvals
from ..lifecycle.identity import AUTO_APPROVE, SKYPILOT, actor, realm_of
from ..lifecycle.records import RequestRecord, new_request_id
from ..lifecycle.specs import LaunchSpec
from ..pricing.query_parser import parse_duration
from ..store import requests_table
from . import contract
from .enforcement import PROJECT_LABEL, REQUEST_LABEL, enforced, labelled
from .pricing import TaskShape, describe_task, price_task, task_shape

DEFAULT_TTL_S = 8 * 3600
TTL_VARIABLE = "GPU_ASSIST_SKYPILOT_TTL"  # a launch's time to live when its task sets no autostop: `8h`
# Calls that buy no machine: running on a cluster that exists, and SkyPilot's own controllers.
_AS_ASKED = (contract.CLUSTER_EXEC, contract.JOBS_LAUNCH_CONTROLLER, contract.SERVE_LAUNCH_CONTROLLER)
# Services and pools, whose replicas change what they cost: not admitted (docs/skypilot.md says so).
NOT_ADMITTED = (contract.SERVE_UP, contract.SERVE_UPDATE, contract.SERVE_LAUNCH_REPLICA, contract.JOBS_POOL_APPLY)
_USES_UP = (contract.CLUSTER_LAUNCH, contract.JOBS_LAUNCH_CLUSTER)  # the calls that bring a cluster up
_OPEN = ("pending", "approved", "admitted")
_ENGINE_STATES = ("approved", "launching", "running")


@dataclass(frozen=True)
class LetThrough:
    """The task SkyPilot may launch; `record`: the request that admits it (None: passed as asked)."""

    task: dict[str, Any]
    record: RequestRecord | None = None


@dataclass(frozen=True)
class Waiting:
    """A launch that waits for an approver: its request, and the cluster name its approval will admit."""

    record: RequestRecord
    cluster: str


@dataclass(frozen=True)
class Refused:
    """A launch the policy refuses (or the gate cannot price): `reason`, the policy's words."""

    reason: str


@dataclass(frozen=True)
class OtherCluster:
    """A launch of another cluster than the one its approval admits."""

    record: RequestRecord
    cluster: str


@dataclass(frozen=True)
class NotAdmitted:
    """A request of a kind the gate does not admit (services, pools)."""

    request_name: str


Verdict = LetThrough | Waiting | Refused | OtherCluster | NotAdmitted


def default_ttl_s(environ: dict[str, str] | None = None) -> int:
    """`GPU_ASSIST_SKYPILOT_TTL` as seconds, else 8 hours."""
    value = (os.environ if environ is None else environ).get(TTL_VARIABLE, "").strip()
    return parse_duration(value, example=f"{TTL_VARIABLE}=8h") if value else DEFAULT_TTL_S


@dataclass
class Gate:
    """`on_filed` hears of each request filed and left pending (the Slack server posts its card)."""

    approvals: Approvals
    on_filed: Callable[[RequestRecord], None] = lambda record: None
    ttl_s: int = DEFAULT_TTL_S
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def decide(self, request: contract.UserRequest) -> Verdict:
        """What SkyPilot is told about `request`."""
        name = request.request_name
        if request.at_client_side or request.user is None or name in _AS_ASKED:
            return LetThrough(request.task)
        if name in NOT_ADMITTED:
            return NotAdmitted(name)
        shape = task_shape(request.task)
        if not shape.wants_gpus:
            return LetThrough(request.task)
        options = request.options
        cluster = options.cluster_name if options else None
        engine = self._engine_launch(shape, cluster)
        if engine is not None:
            return LetThrough(labelled(request.task, engine, ttl_s=self._left(engine)), self._fetch(engine))
        requester = actor(SKYPILOT, request.user.name)
        uses_up = name in _USES_UP and not (options and options.dryrun)
        with self._lock:  # one process's calls for one launch in turn; replicas agree through `_filing`
            return self._launch(request, shape, requester, cluster, uses_up)

    def _launch(self, request: contract.UserRequest, shape: TaskShape, requester: str, cluster: str | None,
                uses_up: bool) -> Verdict:
        by_name, by_shape = self._open_requests(requester, shape, cluster, request.request_name)
        record = by_name or by_shape
        if record is None:
            try:
                record = self._file(request, shape, requester, cluster)
            except (PolicyError, ParseError) as error:
                return Refused(error.message)
        if record.state != "admitted":
            return Waiting(record, _cluster(record))
        if request.request_name == contract.JOBS_LAUNCH_CLUSTER and shape.labels.get(REQUEST_LABEL) == record.id:
            # The jobs controller names the job's cluster and relaunches it under that name on recovery.
            return self._let_through(request.task, self._use(record, cluster) if uses_up and cluster else record)
        bound = record.instance_ids[0] if record.instance_ids else _cluster(record)
        if cluster is not None and cluster != bound:
            if record.launched_at is not None:  # this approval's cluster is up: another one is a new request
                return self._launch_new(request, shape, requester, cluster, uses_up)
            if record.approver != AUTO_APPROVE:  # a person approved the cluster the refusal named, only it
                return OtherCluster(record, bound)
        if uses_up and record.launched_at is None:
            record = self._use(record, cluster or bound)
        return self._let_through(request.task, record)

    def _launch_new(self, request: contract.UserRequest, shape: TaskShape, requester: str, cluster: str,
                    uses_up: bool) -> Verdict:
        try:
            record = self._file(request, shape, requester, cluster)
        except (PolicyError, ParseError) as error:
            return Refused(error.message)
        if record.state != "admitted":
            return Waiting(record, cluster)
        return self._let_through(request.task, self._use(record, cluster) if uses_up else record)

    def _let_through(self, task: dict[str, Any], record: RequestRecord) -> LetThrough:
        spec = record.spec
        assert isinstance(spec, LaunchSpec)
        zone = spec.zone if _named_zone(task) else None
        return LetThrough(enforced(task, spec, ttl_s=spec.duration_s, zone=zone), record)

    def _open_requests(self, requester: str, shape: TaskShape, cluster: str | None,
                       request_name: str) -> tuple[RequestRecord | None, RequestRecord | None]:
        """This user's open gate request for the cluster by its name, and for the same resources; a managed job's
        cluster (and its recovery relaunch) is found by the request id its task's label carries."""
        now = self.approvals.clock()
        labelled_id = shape.labels.get(REQUEST_LABEL) if request_name == contract.JOBS_LAUNCH_CLUSTER else None
        by_name = by_shape = None
        for record in self.approvals.store.list(states=_OPEN, limit=10_000):
            spec = record.spec
            if record.requester != requester or not isinstance(spec, LaunchSpec) or spec.cluster is None:
                continue
            if record.state == "admitted" and record.launched_at is None and record.expires_at <= now:
                self.approvals.store.transition(record.id, states.ADMISSION_EXPIRED, actor="system", now=now,
                                                condition=requests_table.c.launched_at.is_(None))
                continue
            if record.id == labelled_id or (cluster is not None and cluster in record.instance_ids):
                return record, None
            if cluster is not None and spec.cluster == cluster and by_name is None:
                by_name = record
            elif spec.fingerprint == shape.fingerprint and by_shape is None:
                by_shape = record
        return by_name, by_shape

    def _file(self, request: contract.UserRequest, shape: TaskShape, requester: str,
              cluster: str | None) -> RequestRecord:
        """One approval request for the launch, priced and checked (refusals audited); auto-approved, and so
        admitted, under the policy's amount; otherwise `on_filed` hears of it."""
        approvals, now = self.approvals, self.approvals.clock()
        user = request.user.name if request.user else ""
        name = cluster or suggested_cluster(user, shape.fingerprint)
        project = self._project(shape, request)
        text = describe_task(shape, name)
        try:
            spec = price_task(shape, self._ttl(request), approvals.catalog, approvals.policy,
                              request_id=new_request_id(), requester=requester, today=now.date(), project=project,
                              text=text)
        except GpuAssistError as error:
            approvals.store.audit(None, requester, f"{states.SUBMIT.action} launch", "refused", now=now,
                                  detail=f"{text}: {error.message}")
            raise
        spec = replace(spec, cluster=name, fingerprint=shape.fingerprint)
        record = approvals.submit_planned(requester, spec, spec.text, delivery=self._filing(requester, name))
        if record.state == "pending" and record.id == spec.request_id:  # filed here, not by a replica first
            self.on_filed(record)
        return record

    def _filing(self, requester: str, cluster: str) -> str:
        """What one launch's filing is known by among every replica on the database: the user, the cluster and how
        many of that cluster's requests are closed. Replicas asked about the same launch at once count the same
        (whichever files first, its request is open), so the store keeps one request (`Approvals.submit_planned`'s
        delivery); a launch after the last one closed counts one more, so it is a new request."""
        before = sum(1 for record in self.approvals.store.list(states=states.TERMINAL, limit=10_000)
                     if record.requester == requester and isinstance(record.spec, LaunchSpec)
                     and record.spec.cluster == cluster)
        return f"skypilot|{requester}|{cluster}|{before}"

    def _use(self, record: RequestRecord, cluster: str) -> RequestRecord:
        """The admission used by the launch of `cluster`: its time to live and the spend clock start now."""
        now = self.approvals.clock()
        spec = record.spec
        assert isinstance(spec, LaunchSpec)
        self.approvals.store.transition(
            record.id, states.LET_THROUGH, actor=record.requester, now=now, instance_ids=[cluster], launched_at=now,
            ends_at=now + dt.timedelta(seconds=spec.duration_s), condition=requests_table.c.launched_at.is_(None),
            detail=f"SkyPilot launches the cluster {cluster}")
        return self.approvals.store.fetch(record.id)

    def _engine_launch(self, shape: TaskShape, cluster: str | None) -> LaunchSpec | None:
        """The spec of an approved launch gpu-assist's engine carries out through SkyPilot, when the task is one:
        its label names the request, the cluster's name (where given) holds its id, and the request is approved
        and not one of the gate's own."""
        request_id = shape.labels.get(REQUEST_LABEL)
        if not request_id or (cluster is not None and request_id not in cluster):
            return None
        record = self.approvals.store.get(request_id)
        if record is None or record.state not in _ENGINE_STATES or realm_of(record.requester) == SKYPILOT \
                or not isinstance(record.spec, LaunchSpec):
            return None
        return record.spec

    def _fetch(self, spec: LaunchSpec) -> RequestRecord:
        return self.approvals.store.fetch(spec.request_id)

    def _left(self, spec: LaunchSpec) -> int:
        """What is left of an engine launch's time to live (all of it before it runs)."""
        record = self._fetch(spec)
        if record.ends_at is None:
            return spec.duration_s
        return max(60, int((record.ends_at - self.approvals.clock()).total_seconds()))

    def _ttl(self, request: contract.UserRequest) -> int:
        """The time to live to price: the autostop the user asked for, else the gate's default (within the
        policy's max_ttl, which refuses a longer ask)."""
        asked = _autostop_minutes(request)
        if asked is not None:
            return asked * 60
        cap = self.approvals.policy.max_ttl_s
        return min(self.ttl_s, cap) if cap else self.ttl_s

    def _project(self, shape: TaskShape, request: contract.UserRequest) -> str | None:
        """The project a launch is charged to: the task's gpu-assist-project label, else the SkyPilot workspace
        where the policy's budgets name it, else the policy's default."""
        if shape.labels.get(PROJECT_LABEL):
            return shape.labels[PROJECT_LABEL]
        budgets = self.approvals.policy.budgets
        workspace = _workspace(request.config_text)
        return workspace if budgets is not None and workspace in budgets.projects() else None


def suggested_cluster(user: str, fingerprint: str) -> str:
    """The cluster name an approval admits when the launch named none yet: the user and the resources'
    fingerprint, in the characters SkyPilot's cluster names take."""
    cleaned = "".join(c if c.isascii() and (c.isalnum() or c == "-") else "-" for c in user.lower()).strip("-")
    return f"{cleaned if cleaned[:1].isalpha() else 'sky-' + cleaned}-{fingerprint}"


def _cluster(record: RequestRecord) -> str:
    spec = record.spec
    return (spec.cluster if isinstance(spec, LaunchSpec) else None) or ""


def _named_zone(task: dict[str, Any]) -> bool:
    resources = task.get("resources") or {}
    infra = resources.get("infra") if isinstance(resources, dict) else None
    return bool(isinstance(infra, str) and infra.count("/") >= 2 or isinstance(resources, dict) and
                resources.get("zone"))


def _autostop_minutes(request: contract.UserRequest) -> int | None:
    """The idle minutes the user's task or launch asked for, if any: SkyPilot copies the task's into the request
    options of a launch, and the task carries it on the other calls."""
    if request.options is not None and request.options.idle_minutes_to_autostop is not None:
        return max(1, request.options.idle_minutes_to_autostop)
    resources = request.task.get("resources")
    autostop = resources.get("autostop") if isinstance(resources, dict) else None
    if isinstance(autostop, dict):
        autostop = autostop.get("idle_minutes")
    return max(1, autostop) if type(autostop) is int else None


def _workspace(config_text: str) -> str | None:
    try:
        config = yaml.safe_load(config_text)
    except yaml.YAMLError:
        return None
    workspace = config.get("active_workspace") if isinstance(config, dict) else None
    return workspace if isinstance(workspace, str) else None
