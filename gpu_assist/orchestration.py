"""Carrying out what was approved, exactly once: launch, stop, extend; and the periodic jobs that finish or end
requests: expire, reconcile, reap.

A request moves from `approved` to its carrying-out state (`launching`, `stopping`, `extending`) in one conditional
UPDATE, so only the caller that won it acts; a crash leaves it there, and `reconcile()` finishes it, finding
instances by their request tag before launching anything. `reap()` stops launches whose time to live is over.
The states and arrows are `gpu_assist.states`; the decisions before all this, `gpu_assist.approvals`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Any, Callable

from . import states
from .errors import GpuAssistError, PolicyError
from .provision import Provisioner
from .records import RequestRecord
from .specs import ExtendSpec, LaunchSpec, StopSpec, tag_time
from .states import Transition
from .store import Store, requests_table


@dataclass
class Orchestration:
    store: Store
    provisioner: Provisioner
    clock: Callable[[], dt.datetime]

    def carry_out(self, request_id: str, *, actor: str) -> RequestRecord:
        record = self.store.fetch(request_id)
        if isinstance(record.spec, LaunchSpec):
            self._launch(record, record.spec, actor)
        elif isinstance(record.spec, StopSpec):
            self._stop(record, record.spec, actor)
        else:
            self._extend(record, record.spec, actor)
        return self.store.fetch(request_id)

    def _carrying(self, record: RequestRecord, step: Transition, actor: str, **values: Any) -> RequestRecord | None:
        """The request when this caller carries it out: it moved it along `step` now, or a crash left it there;
        None when another caller has it, or it is done."""
        if record.state == "approved" and not self.store.transition(record.id, step, actor=actor, now=self.clock(),
                                                                    **values):
            return None
        current = self.store.fetch(record.id)
        return current if current.state == step.target else None

    def _fail(self, record: RequestRecord, step: Transition, actor: str, error: GpuAssistError) -> None:
        self.store.transition(record.id, step, actor=actor, now=self.clock(), detail=str(error), error=str(error))

    def _launch(self, record: RequestRecord, spec: LaunchSpec, actor: str) -> None:
        if self._carrying(record, states.LAUNCH, actor) is None:
            return
        ends_at = self.clock() + dt.timedelta(seconds=spec.duration_s)  # the time to live starts now
        try:
            outcome = self.provisioner.launch(spec, ends_at=tag_time(ends_at))
        except GpuAssistError as error:
            self._fail(record, states.LAUNCH_FAILED, actor, error)
            return
        detail = f"{len(outcome.instance_ids)} instances in {outcome.zone or outcome.region}" + \
            (" (found by tag, not launched again)" if outcome.reused else "") + \
            (f"; tried: {'; '.join(outcome.attempts)}" if outcome.attempts else "")
        self.store.transition(record.id, states.RUNNING, actor=actor, now=self.clock(), detail=detail,
                              instance_ids=outcome.instance_ids, ends_at=ends_at,
                              spec=replace(spec, launched_region=outcome.region, launched_zone=outcome.zone))

    def _stop(self, record: RequestRecord, spec: StopSpec, actor: str) -> None:
        if self._carrying(record, states.STOP, actor) is None:
            return
        try:
            self.provisioner.stop(list(spec.instance_ids), spec.region)
        except GpuAssistError as error:
            self._fail(record, states.STOP_FAILED, actor, error)
            return
        now = self.clock()
        self.store.transition(record.id, states.STOPPED, actor=actor, now=now)
        for launch_id in spec.launch_requests:
            self.store.transition(launch_id, states.STOPPED_BY_REQUEST, actor=actor, now=now,
                                  detail=f"by stop request {record.id}")

    def _extend(self, record: RequestRecord, spec: ExtendSpec, actor: str) -> None:
        """Move the launch's end: its instances' expires-at tag first, then its `ends_at` (which the reaper
        reads), only ever later, so a replay after a crash moves nothing twice."""
        launch = self.store.fetch(spec.launch_request)
        ends_at = (launch.ends_at or self.clock()) + dt.timedelta(seconds=spec.extra_s)
        extension = self._carrying(record, states.EXTEND, actor, ends_at=ends_at)  # this end, from now on
        if extension is None or extension.ends_at is None:
            return
        launch, new_end = self.store.fetch(launch.id), extension.ends_at
        try:
            if launch.state != "running" or launch.ends_at is None:
                raise PolicyError(f"{launch.id} is {launch.state}, no longer running")
            self.provisioner.set_expiry(list(launch.instance_ids), spec.region, tag_time(new_end))
        except GpuAssistError as error:
            self._fail(extension, states.EXTEND_FAILED, actor, error)
            return
        moved = f"time to live ends {new_end:%Y-%m-%d %H:%M} UTC (was {launch.ends_at:%Y-%m-%d %H:%M} UTC)"
        self.store.transition(launch.id, states.TTL_MOVED, actor=actor, now=self.clock(),
                              detail=f"{moved}, by extension {extension.id}", ends_at=new_end,
                              condition=requests_table.c.ends_at < new_end)
        self.store.transition(extension.id, states.EXTENDED, actor=actor, now=self.clock(), detail=moved)

    def expire_due(self) -> list[str]:
        """Pending requests whose deadline has passed, expired."""
        now = self.clock()
        return [record.id for record in self.store.due("pending", requests_table.c.expires_at, now)
                if self.store.transition(record.id, states.EXPIRE, actor="system", now=now)]

    def reconcile(self, *, actor: str = "reconciler") -> list[str]:
        """Finish what a crash interrupted; returns the ids it moved on. Runs under a job lock."""
        finished: list[str] = []
        with self.store.job_lock("reconcile") as held:
            if not held:
                return finished
            for record in self.store.list(states=states.UNFINISHED, limit=1000):
                self.carry_out(record.id, actor=actor)
                finished.append(record.id)
        return finished

    def reap(self, *, actor: str = "reaper") -> list[str]:
        """Stop running launches whose time to live is over."""
        reaped: list[str] = []
        with self.store.job_lock("reap") as held:
            if not held:
                return reaped
            now = self.clock()
            for record in self.store.due("running", requests_table.c.ends_at, now):
                if not self.store.transition(record.id, states.REAP, actor=actor, now=now,
                                             detail=f"its time to live ended {record.ends_at:%Y-%m-%d %H:%M} UTC"):
                    continue
                try:
                    self.provisioner.stop(list(record.instance_ids), _region(record))
                except GpuAssistError as error:
                    self._fail(record, states.REAP_FAILED, actor, error)
                    continue
                self.store.transition(record.id, states.REAPED, actor=actor, now=self.clock())
                reaped.append(record.id)
        return reaped


def _region(launch: RequestRecord) -> str:
    """Where a launch's instances are (a capacity fallback may have moved them from the planned region)."""
    return launch.spec.where if isinstance(launch.spec, LaunchSpec) else launch.spec.region
