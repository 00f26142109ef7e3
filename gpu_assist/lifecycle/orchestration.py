"""Carrying out what was approved, exactly once: launch, stop, extend; and the periodic jobs that finish or end
requests: expire, reconcile, reap.

A request moves from `approved` to its carrying-out state (`launching`, `stopping`, `extending`) in one conditional
UPDATE, so only the caller that won it acts. One owner per carrying-out: the decision names its owner
(`lifecycle.owners`: host, process, start, and which carrying-out) with a lease, every later step is conditional
on that owner, and the owner renews the lease before each step on the cloud (`_still_ours`). A crash leaves the
request with an owner that no longer renews: `reconcile()` takes over only a request whose owner's lease is over
or whose process is known gone (audited, "take over"), never one a live owner works on, and finds instances by
their request tag before launching anything. An owner that was taken over stops before its next cloud step
(`OwnershipLost`, audited "give up"); instances tagged with a launch that the store does not record are
terminated once it records some (`_terminate_untracked`), never the recorded ones. `reap()` stops launches
whose time to live is over. A launch asked through SkyPilot's gate (its requester of the `skypilot` realm) is
admitted, not launched: SkyPilot launches it, and the gate records the cluster it let through.
The states and arrows are `lifecycle.states`; the decisions before all this, `lifecycle.approvals`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

from ..catalog.providers import GATE_CLUSTERS
from ..errors import GpuAssistError, PolicyError
from ..store import Store, requests_table
from . import owners, states
from .identity import SKYPILOT, realm_of
from .ports import Launched, OwnershipLost, Provisioner
from .records import RequestRecord
from .specs import ExtendSpec, LaunchSpec, StopSpec, tag_time
from .states import Transition

if TYPE_CHECKING:
    from sqlalchemy.sql.elements import ColumnElement

LEASE = dt.timedelta(minutes=5)  # an owner renews it at every step; a crashed one's work is free after it
STARTS = {"launch": states.LAUNCH, "stop": states.STOP, "extend": states.EXTEND}  # approved → carrying out, by kind


@dataclass
class Orchestration:
    """`owner_gone` tells an owner whose process is known ended (`owners.gone`), so the reconciler need not wait
    for its lease to end."""

    store: Store
    provisioner: Provisioner
    clock: Callable[[], dt.datetime]
    lease: dt.timedelta = LEASE
    owner_gone: Callable[[str], bool] = owners.gone

    def carry_out(self, request_id: str, *, actor: str, owner: str) -> RequestRecord:
        """Carry out the request as `owner` (who decided it, or the reconciler that took it over): nothing
        happens unless the store names `owner` as its owner."""
        record = self.store.fetch(request_id)
        try:
            if isinstance(record.spec, LaunchSpec) and realm_of(record.requester) == SKYPILOT:
                self._admit(record, actor, owner)
            elif isinstance(record.spec, LaunchSpec):
                self._launch(record, record.spec, actor, owner)
            elif isinstance(record.spec, StopSpec):
                self._stop(record, record.spec, actor, owner)
            else:
                self._extend(record, record.spec, actor, owner)
        except OwnershipLost as lost:
            self.store.audit(request_id, actor, "give up", "ok", now=self.clock(), detail=str(lost))
        return self.store.fetch(request_id)

    def _admit(self, record: RequestRecord, actor: str, owner: str) -> None:
        """A launch through SkyPilot's gate, admitted: valid as long as the request could wait for its approval."""
        now = self.clock()
        self.store.transition(record.id, states.ADMIT, actor=actor, now=now, condition=_owned_by(owner), owner=None,
                              owned_until=None, expires_at=now + (record.expires_at - record.created_at),
                              detail="for SkyPilot to launch; gpu-assist launches nothing")

    def _carrying(self, record: RequestRecord, step: Transition, actor: str, owner: str,
                  **values: Any) -> RequestRecord | None:
        """The request when `owner` carries it out: it moved it along `step` now, or owns it there already
        (a takeover); None when another owner has it, or it is done."""
        now = self.clock()
        if record.state == "approved" and not self.store.transition(
                record.id, step, actor=actor, now=now, condition=_owned_by(owner),
                owned_until=now + self.lease, **values):
            return None
        current = self.store.fetch(record.id)
        return current if current.state == step.target and current.owner == owner else None

    def _still_ours(self, request_id: str, owner: str) -> bool:
        """Renew `owner`'s lease before a step on the cloud; False when the request is no longer its to act on."""
        return self.store.renew(request_id, owner, self.clock() + self.lease)

    def _hold(self, request_id: str, owner: str) -> None:
        """Raise OwnershipLost unless `owner` still carries the request out (its lease renewed)."""
        if not self._still_ours(request_id, owner):
            raise OwnershipLost(f"{request_id} was taken over by another process; {owner} stopped before acting")

    def _fail(self, record: RequestRecord, step: Transition, actor: str, owner: str, error: GpuAssistError) -> None:
        self.store.transition(record.id, step, actor=actor, now=self.clock(), detail=str(error), error=str(error),
                              condition=_owned_by(owner))

    def _launch(self, record: RequestRecord, spec: LaunchSpec, actor: str, owner: str) -> None:
        if self._carrying(record, states.LAUNCH, actor, owner) is None:
            return
        ends_at = self.clock() + dt.timedelta(seconds=spec.duration_s)  # the time to live starts now
        try:
            outcome = self.provisioner.launch(spec, ends_at=tag_time(ends_at),
                                              still_ours=lambda: self._still_ours(record.id, owner))
        except GpuAssistError as error:
            self._fail(record, states.LAUNCH_FAILED, actor, owner, error)
            return
        detail = f"{len(outcome.instance_ids)} instances in {outcome.zone or outcome.region}" + \
            (" (found by tag, not launched again)" if outcome.reused else "") + \
            (f"; tried: {'; '.join(outcome.attempts)}" if outcome.attempts else "")
        if not self.store.transition(record.id, states.RUNNING, actor=actor, now=self.clock(), detail=detail,
                                     instance_ids=outcome.instance_ids, ends_at=ends_at, condition=_owned_by(owner),
                                     spec=replace(spec, launched_region=outcome.region, launched_zone=outcome.zone)):
            self.store.audit(record.id, actor, "give up", "ok", now=self.clock(),
                             detail=f"taken over while launching: {', '.join(outcome.instance_ids)} kept only if "
                                    "the store records them")
        self._terminate_untracked(record.id, actor)

    def _terminate_untracked(self, request_id: str, actor: str) -> None:
        """Terminate the instances tagged with a launch that the store does not record: a retried RunInstances's
        duplicate, or a launch by an owner that lost the request. Only once the store records the launch's
        instances, and never those."""
        launch = self.store.fetch(request_id)
        if launch.state != "running" or not launch.instance_ids:
            return
        surplus = self.provisioner.terminate_surplus(request_id, _launched(launch))
        if surplus:
            self.store.audit(request_id, actor, "terminate duplicates", "ok", now=self.clock(), detail=surplus)

    def _stop(self, record: RequestRecord, spec: StopSpec, actor: str, owner: str) -> None:
        if self._carrying(record, states.STOP, actor, owner) is None:
            return
        try:
            self._hold(record.id, owner)
            self.provisioner.stop(Launched(spec.provider, spec.region, spec.instance_ids))
        except GpuAssistError as error:
            self._fail(record, states.STOP_FAILED, actor, owner, error)
            return
        now = self.clock()
        if not self.store.transition(record.id, states.STOPPED, actor=actor, now=now, condition=_owned_by(owner)):
            return
        for launch_id in spec.launch_requests:
            self.store.transition(launch_id, states.STOPPED_BY_REQUEST, actor=actor, now=now,
                                  detail=f"by stop request {record.id}")

    def _extend(self, record: RequestRecord, spec: ExtendSpec, actor: str, owner: str) -> None:
        """Move the launch's end: its instances' expires-at tag first, then its `ends_at` (which the reaper
        reads), only ever later, so a replay after a crash moves nothing twice."""
        launch = self.store.fetch(spec.launch_request)
        ends_at = (launch.ends_at or self.clock()) + dt.timedelta(seconds=spec.extra_s)
        extension = self._carrying(record, states.EXTEND, actor, owner, ends_at=ends_at)  # this end, from now on
        if extension is None or extension.ends_at is None:
            return
        launch, new_end = self.store.fetch(launch.id), extension.ends_at
        try:
            if launch.state != "running" or launch.ends_at is None:
                raise PolicyError(f"{launch.id} is {launch.state}, no longer running")
            self._hold(record.id, owner)
            self.provisioner.set_expiry(_launched(launch), tag_time(new_end))
        except GpuAssistError as error:
            self._fail(extension, states.EXTEND_FAILED, actor, owner, error)
            return
        moved = f"time to live ends {new_end:%Y-%m-%d %H:%M} UTC (was {launch.ends_at:%Y-%m-%d %H:%M} UTC)"
        self.store.transition(launch.id, states.TTL_MOVED, actor=actor, now=self.clock(),
                              detail=f"{moved}, by extension {extension.id}", ends_at=new_end,
                              condition=requests_table.c.ends_at < new_end)
        self.store.transition(extension.id, states.EXTENDED, actor=actor, now=self.clock(), detail=moved,
                              condition=_owned_by(owner))

    def expire_due(self) -> list[str]:
        """Pending requests whose deadline has passed, and admissions no launch used before theirs, expired."""
        now = self.clock()
        return [record.id for record in self.store.due("pending", requests_table.c.expires_at, now)
                if self.store.transition(record.id, states.EXPIRE, actor="system", now=now)] + \
            [record.id for record in self.store.due("admitted", requests_table.c.expires_at, now)
             if record.launched_at is None
             and self.store.transition(record.id, states.ADMISSION_EXPIRED, actor="system", now=now,
                                       condition=requests_table.c.launched_at.is_(None))]

    def reconcile(self, *, actor: str = "reconciler") -> list[str]:
        """Finish what a crash interrupted; returns the ids it took over and carried on. Runs under a job lock,
        and takes over only a request no live owner is working on (`_take_over`)."""
        finished: list[str] = []
        with self.store.job_lock("reconcile") as held:
            if not held:
                return finished
            for record in self.store.list(states=states.UNFINISHED, limit=1000):
                owner = self._take_over(record, actor)
                if owner is not None:
                    self.carry_out(record.id, actor=actor, owner=owner)
                    finished.append(record.id)
        return finished

    def _take_over(self, record: RequestRecord, actor: str) -> str | None:
        """A new owner id for `record` when it is free to carry out (no owner, a lease over, or an owner whose
        process is gone), audited with the reason; None while its owner works on it, or for a state the
        reconciler does not finish (a reap's `stopping`)."""
        if record.state not in ("approved", STARTS[record.kind].target):
            return None
        now, previous = self.clock(), record.owner
        gone = previous is not None and self.owner_gone(previous)
        if previous is not None and not gone and record.owned_until is not None and record.owned_until > now:
            return None
        why = "no owner recorded" if previous is None else f"its owner {previous} is gone" if gone else \
            f"its owner {previous}'s lease ended {record.owned_until or now:%Y-%m-%d %H:%M:%S} UTC"
        owner = owners.new_owner()
        if not self.store.take_over(record, owner=owner, until=now + self.lease, now=now, actor=actor, why=why,
                                    gone=gone):
            return None
        return owner

    def reap(self, *, actor: str = "reaper") -> list[str]:
        """Stop running launches whose time to live is over."""
        reaped: list[str] = []
        with self.store.job_lock("reap") as held:
            if not held:
                return reaped
            now = self.clock()
            for record in self.store.due("running", requests_table.c.ends_at, now):
                owner = owners.new_owner()
                if not self.store.transition(record.id, states.REAP, actor=actor, now=now, owner=owner,
                                             owned_until=now + self.lease,
                                             detail=f"its time to live ended {record.ends_at:%Y-%m-%d %H:%M} UTC"):
                    continue
                try:
                    self.provisioner.stop(_launched(record))
                except GpuAssistError as error:
                    self._fail(record, states.REAP_FAILED, actor, owner, error)
                    continue
                self.store.transition(record.id, states.REAPED, actor=actor, now=self.clock(),
                                      condition=_owned_by(owner))
                reaped.append(record.id)
            for record in self.store.due("admitted", requests_table.c.ends_at, now):
                if self.store.transition(record.id, states.ADMISSION_ENDED, actor=actor, now=now,
                                         stopped_at=record.ends_at, detail=self._end_admitted(record)):
                    reaped.append(record.id)
        return reaped

    def _end_admitted(self, record: RequestRecord) -> str:
        """Bring down the cluster SkyPilot's gate let through, at its time to live, when it carries this request's
        label (`sky autostop --cancel` takes a cluster's autodown off, and SkyPilot asks no policy about that);
        what happened, in the audit row's words. Without the engine's API server, or with the cluster gone or not
        this request's, SkyPilot's autodown is what ends it."""
        if not record.instance_ids or record.launched_at is None:
            return "its time to live ended unused"
        where = record.spec.region if isinstance(record.spec, LaunchSpec) else ""
        launched = Launched(GATE_CLUSTERS, where, record.instance_ids)
        try:
            if set(self.provisioner.require_managed(launched).values()) != {record.id}:
                return "its time to live ended: the cluster is not this request's; SkyPilot's autodown ends it"
            self.provisioner.stop(launched)
        except GpuAssistError as error:
            return f"its time to live ended: SkyPilot's autodown takes the cluster down ({error.message})"
        return f"its time to live ended: the cluster {', '.join(record.instance_ids)} was brought down"


def _owned_by(owner: str) -> ColumnElement[bool]:
    """The condition of a step only `owner` may take."""
    return requests_table.c.owner == owner


def _launched(launch: RequestRecord) -> Launched:
    """A launch's instances where its record places them: its cloud, and the region they are in (a capacity
    fallback may have moved them from the planned one)."""
    where = launch.spec.where if isinstance(launch.spec, LaunchSpec) else launch.spec.region
    return Launched(launch.spec.provider, where, launch.instance_ids)
