"""The life of a request until it is carried out: submit (launch, stop, extend), then approve or reject.

Anyone may ask; an approver other than the requester decides (or the policy's auto-approval, or a break-glass
override the policy allows): which kind of actor may take which step is `lifecycle.states`, who is which kind is
`Policy.decider_kind`. A decision is one conditional UPDATE, so double clicks, Slack retries and replicas cannot
both win, and only the winner goes on to carry it out (`gpu_assist.lifecycle.orchestration`). Every attempt, allowed or
refused, is in the audit log; what a request would buy and cost is worked out first, by `gpu_assist.lifecycle.preview`.
An attempt a face may run more than once (a Slack click run again after its process died) names its delivery, an
opaque key: its submit or decision row carries it, and a run that finds it recorded asks or decides nothing again
and answers as it did (the request that delivery made, the decision it took).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Any, Callable, TypeVar

from ..catalog import Catalog
from ..errors import GpuAssistError, ParseError, PolicyError
from ..pricing.query import format_duration
from ..team.budgets import BudgetStatus, standing
from ..team.periods import month_start
from ..team.standing import TeamStanding, team_standing
from . import owners, states
from .identity import AUTO_APPROVE, BREAK_GLASS, realm_of
from .orchestration import Orchestration
from .policy import Policy
from ..catalog.providers import cloud_of
from .ports import Provisioner, stopping
from .preview import approval_problem, plan_extension, plan_launch
from .records import RequestRecord, new_request_id
from .specs import Checks, LaunchIntent, LaunchSpec, Spec, StopSpec
from .states import Transition
from ..store import DeliveryRecorded, Store, requests_table

T = TypeVar("T")


@dataclass
class Approvals:
    store: Store
    policy: Policy
    provisioner: Provisioner
    catalog: Catalog
    clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc)

    @property
    def orchestration(self) -> Orchestration:
        """Carrying out and the periodic jobs, over the same store, cloud and clock (built on use)."""
        return Orchestration(self.store, self.provisioner, self.clock)

    # ---- submit -----------------------------------------------------------------------------------------
    def submit_launch(self, requester: str, command: LaunchIntent, *, delivery: str | None = None) -> RequestRecord:
        """Price the launch, check policy, dry-run and quota, and store it as pending (or auto-approve it).
        `delivery`: see `_submit`."""
        record = self.made_by(delivery)
        if record is not None:
            return self._auto_approved(record)
        now, words = self.clock(), command.words()
        spec = self._audited(lambda: plan_launch(command, self.catalog, self.policy, request_id=new_request_id(),
                                                 requester=requester, today=now.date()),
                             "launch", None, requester, words, now)
        spec = replace(spec, checks=Checks(self.provisioner.dry_run(spec), self.provisioner.quota(spec)))
        return self.submit_planned(requester, spec, words, delivery=delivery)

    def submit_planned(self, requester: str, spec: LaunchSpec, words: str, *,
                       delivery: str | None = None) -> RequestRecord:
        """A launch priced and checked against the policy already (`submit_launch`, or SkyPilot's gate, which
        prices the task SkyPilot sends), stored as pending; approved at once under the policy's auto-approve
        amount unless its dry run failed or a budget stands in the way (then it waits for a person). `delivery`:
        see `_submit`."""
        record = self.made_by(delivery) or self._submit(
            requester, spec, words, self.clock(), delivery, estimated_cost=spec.estimated_total,
            hourly_price=spec.hourly * spec.instances)
        return self._auto_approved(record)

    def _auto_approved(self, record: RequestRecord) -> RequestRecord:
        """A pending launch approved under the policy's auto-approve amount, where its dry run passed (or none was
        made); as it stands otherwise."""
        planned, auto = record.spec, self.policy.auto_approve_below
        if record.state == "pending" and auto is not None and isinstance(planned, LaunchSpec) \
                and planned.estimated_total < auto and (planned.checks is None or planned.checks.dry_run == "ok"):
            try:
                return self.approve(record.id, AUTO_APPROVE)
            except PolicyError:  # over budget, or decided meanwhile: it stands as it is (a refusal is audited)
                pass
        return self.store.fetch(record.id)

    def submit_stop(self, requester: str, instance_ids: list[str], region: str | None = None, *,
                    delivery: str | None = None) -> RequestRecord:
        """A request to stop instances; refused unless every one carries gpu-assist's request tag. `delivery`: see
        `_submit`."""
        earlier = self.made_by(delivery)
        if earlier is not None:
            return earlier
        now, words = self.clock(), f"stop {' '.join(instance_ids)}"
        placed = self.store.placement_of(instance_ids[0]) if instance_ids else None
        if not instance_ids or (placed is None and not all(cloud_of(i) for i in instance_ids)):
            raise ParseError("name the instances to stop", example="stop i-0123456789abcdef0")
        cloud, recorded = placed or (None, None)
        where = region or recorded or self.policy.default_region
        launched = self._audited(lambda: stopping(instance_ids, cloud, where), "stop", None, requester, words, now)
        owners = self._audited(lambda: self.provisioner.require_managed(launched), "stop", None, requester, words,
                               now)
        spec = StopSpec(new_request_id(), tuple(instance_ids), where, tuple(sorted(set(owners.values()))),
                        provider=launched.provider)
        return self._submit(requester, spec, words, now, delivery, instance_ids=spec.instance_ids)

    def submit_extend(self, requester: str, launch_id: str, extra_s: int, *,
                      delivery: str | None = None) -> RequestRecord:
        """A request to move a running launch's time to live `extra_s` later: priced at the launch's approved
        hourly price, checked against the policy, decided like a launch. `delivery`: see `_submit`."""
        earlier = self.made_by(delivery)
        if earlier is not None:
            return earlier
        now, words = self.clock(), f"extend {launch_id} by {format_duration(extra_s)}"
        launch, waiting = self.store.get(launch_id), self.store.extensions_waiting(launch_id)
        spec = self._audited(lambda: plan_extension(launch, launch_id, extra_s, self.policy, waiting=waiting,
                                                    request_id=new_request_id()),
                             "extend", launch.id if launch else None, requester, words, now)
        return self._submit(requester, spec, words, now, delivery, estimated_cost=spec.estimated_total)

    def _audited(self, plan: Callable[[], T], kind: str, request_id: str | None, requester: str, words: str,
                 now: dt.datetime) -> T:
        """`plan()`; a refusal is written to the audit log (who asked what, and why not), then raised. `kind`:
        launch, stop or extend (`submit launch` names the action); `words`: what was asked, for the reader."""
        try:
            return plan()
        except GpuAssistError as error:
            self.store.audit(request_id, requester, f"{states.SUBMIT.action} {kind}", "refused", now=now,
                             detail=f"{words}: {error}")
            raise

    def _submit(self, requester: str, spec: Spec, words: str, now: dt.datetime, delivery: str | None,
                **values: Any) -> RequestRecord:
        """`spec`, stored as a new pending request; `values`: its estimate, approved hourly price, instances.

        `delivery` (what asked: a Slack click, which its inbox may run again) is named by the submit's audit row, so
        one delivery makes one request: a run that finds it made (`made_by`), or that loses the race to another
        run of it (the store rolls this one's request back), answers with that request."""
        try:
            self.store.insert_request(RequestRecord(
                id=spec.request_id, kind=spec.kind, requester=requester, spec=spec, state=states.SUBMIT.target,
                **{"estimated_cost": None, "currency": self.policy.currency, **values}, created_at=now,
                expires_at=now + dt.timedelta(seconds=self.policy.expiry_s)), actor=requester, detail=words,
                delivery=delivery)
        except DeliveryRecorded as recorded:
            return self.store.fetch(recorded.event.request_id or spec.request_id)
        return self.store.fetch(spec.request_id)

    def made_by(self, delivery: str | None) -> RequestRecord | None:
        """The request `delivery` made already, if it made one."""
        event = self.store.caused_by(delivery) if delivery is not None else None
        return self.store.fetch(event.request_id) if event is not None and event.request_id else None

    def budget_standing(self, record: RequestRecord) -> list[BudgetStatus]:
        """The budgets a launch or an extension counts against, with it included (none without budgets, or for a
        stop)."""
        if self.policy.budgets is None or record.kind == "stop":
            return []
        now = self.clock()
        return standing(self.policy.budgets, self.store.spend_rows(month_start(now)), now,
                        default_project=self.policy.default_project, request=record)

    def team_standing(self) -> TeamStanding:
        """Where the team stands now: spend this month and committed to TTLs, what runs at what hourly cost, the
        budgets, pending requests and idle instances. Shown beside every decision, budgets or not."""
        now = self.clock()
        records = self.store.spend_rows(month_start(now))
        running = {record.id for record in records if record.state == "running"}
        idle = sum(1 for request_id in self.store.standing_notices("idle") if request_id in running)
        return team_standing(records, self.store.list(states=("pending",), limit=10_000), now,
                             currency=self.policy.currency, default_project=self.policy.default_project,
                             budgets=self.policy.budgets, idle_instances=idle)

    # ---- decide -----------------------------------------------------------------------------------------
    def approve(self, request_id: str, approver: str, *, reason: str = "",
                on_approved: Callable[[RequestRecord], None] | None = None,
                delivery: str | None = None) -> RequestRecord:
        """Approve and carry out; only the first of concurrent approvals launches anything, as the request's owner
        (named in the same UPDATE, with a lease: the reconciler leaves it alone while this call works on it). The
        policy and the budgets are checked again now. `on_approved` hears of the decision before the (slow)
        carrying out. `delivery`: see `_once`; a delivery approved already returns the request as it is now (its
        carrying out is its owner's, or the reconciler's once that owner is gone)."""
        now, orchestration, owner = self.clock(), self.orchestration, owners.new_owner()
        decision = _Decision(states.APPROVE, approver, reason, now, delivery)

        def decide() -> None:
            record = self._decided_by(request_id, decision)
            problem = approval_problem(record, self.policy, self.budget_standing(record), approver)
            if problem:
                raise self._refuse(request_id, decision, problem)
            self._decide(request_id, decision, owner=owner, owned_until=now + orchestration.lease)

        earlier = self._once(request_id, delivery, decide)
        if earlier is not None:
            return earlier
        if on_approved is not None:
            on_approved(self.store.fetch(request_id))
        return orchestration.carry_out(request_id, actor=approver, owner=owner)

    def reject(self, request_id: str, approver: str, reason: str = "", *,
               delivery: str | None = None) -> RequestRecord:
        """Reject; `delivery`: see `_once`."""
        decision = _Decision(states.REJECT, approver, reason, self.clock(), delivery)

        def decide() -> None:
            self._decided_by(request_id, decision)
            self._decide(request_id, decision)

        return self._once(request_id, delivery, decide) or self.store.fetch(request_id)

    def _once(self, request_id: str, delivery: str | None, decide: Callable[[], None]) -> RequestRecord | None:
        """`decide()`, which records one decision row (an approval or rejection, or a refusal it raises), naming
        `delivery` (what asked for it: a Slack click, say) unless that is None; None when it decided. A delivery
        whose decision is recorded already (its first run died before its face marked it done, or another run of
        it got there first: then the store rolled this one back) decides nothing again: a recorded refusal is
        raised again, not audited again, and a recorded decision returns the request as it is now."""
        try:
            first = self.store.caused_by(delivery) if delivery is not None else None
            if first is None:
                decide()
                return None
        except DeliveryRecorded as recorded:
            first = recorded.event
        if first.outcome != "ok":
            raise PolicyError(first.detail)
        return self.store.fetch(request_id)

    def _decided_by(self, request_id: str, decision: _Decision) -> RequestRecord:
        """The request, when the decider is of a kind that may take the decision's step; refused and audited
        otherwise."""
        step, actor = decision.step, decision.actor
        record = self.store.get(request_id)
        if record is None:
            raise self._refuse(None, decision, f"no request {request_id}")
        kind, why_not = self.policy.decider_kind(actor, requester=record.requester, request_kind=record.kind,
                                                 reason=decision.reason)
        if kind not in step.actors:
            raise self._refuse(request_id, decision, why_not or f"{actor} may not {step.action}")
        return record

    def _decide(self, request_id: str, decision: _Decision, **values: Any) -> None:
        """The decision's step, once, before the request expires; a break-glass decision is audited as an
        override, with its reason. `values`: more columns the same UPDATE sets (an approval's owner)."""
        step, actor, reason, now = decision.step, decision.actor, decision.reason, decision.now
        action, detail = (f"{step.action} (override)", f"break-glass override: {reason.strip()}") \
            if realm_of(actor) == BREAK_GLASS else (step.action, reason)
        if self.store.transition(request_id, step, actor=actor, action=action, detail=detail, now=now,
                                 condition=requests_table.c.expires_at > now, approver=actor, decided_at=now,
                                 delivery=decision.delivery, **values):
            return
        record = self.store.fetch(request_id)
        if record.state == "pending" and record.expires_at <= now:
            self.store.transition(request_id, states.EXPIRE, actor="system", now=now)
            raise self._refuse(request_id, decision, f"request {request_id} has expired")
        by = f" by {record.approver}" if record.approver else ""
        raise self._refuse(request_id, decision, f"request {request_id} is already {record.state}{by}")

    def _refuse(self, request_id: str | None, decision: _Decision, message: str) -> PolicyError:
        self.store.audit(request_id, decision.actor, decision.step.action, "refused", now=decision.now,
                         detail=message, delivery=decision.delivery)
        return PolicyError(message)


@dataclass(frozen=True)
class _Decision:
    """One attempt to decide: the step (approve, reject), who asks, why (a break-glass reason), when, and the
    delivery that asked for it (None: nothing will run it again)."""

    step: Transition
    actor: str
    reason: str
    now: dt.datetime
    delivery: str | None
