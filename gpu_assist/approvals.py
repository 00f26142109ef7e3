"""The life of a request until it is carried out: submit (launch, stop, extend), decide, expire.

Anyone may ask; an approver other than the requester decides (or the policy's auto-approval, or a break-glass
override the policy allows): which kind of actor may take which step is `gpu_assist.states`, who is which kind
`Policy.decider_kind`. A decision is one conditional UPDATE (`Store.transition`), so double clicks, Slack retries
and replicas cannot both win, and only the winner goes on to `Orchestration.carry_out`. Every attempt, allowed or
refused, is in the audit log with who, when, what and the outcome. What a request would buy and cost is worked
out before it is stored, by `gpu_assist.planning`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, TypeVar

from . import states
from .aws import INSTANCE_ID
from .budgets import BudgetStatus, standing
from .catalog import Catalog
from .errors import GpuAssistError, ParseError, PolicyError
from .identity import AUTO_APPROVE, BREAK_GLASS, realm_of
from .orchestration import Orchestration
from .planning import approval_problem, plan_extension, plan_launch
from .policy import Policy
from .provision import Provisioner
from .request import format_duration
from .spending import month_start
from .states import Transition
from .store import RequestRecord, Store, requests_table

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
        """Carrying out, over the same store, cloud and clock (built on use, so a swapped provisioner counts)."""
        return Orchestration(self.store, self.provisioner, self.clock)

    # ---- submit -----------------------------------------------------------------------------------------
    def submit_launch(self, requester: str, text: str) -> RequestRecord:
        """Price the launch, check policy, dry-run and quota, and store it as pending (or auto-approve it)."""
        now = self.clock()
        spec = self._audited(lambda: plan_launch(text, self.catalog, self.policy, request_id=self.store.new_id(),
                                                 requester=requester, today=now.date()),
                             None, requester, "submit launch", text, now)
        spec["checks"] = {"dry_run": self.provisioner.dry_run(spec), "quota": self.provisioner.quota(spec)}
        estimate, auto = Decimal(spec["estimated_total"]), self.policy.auto_approve_below
        record = self._submit("launch", requester, spec, estimate, spec["currency"], [], text, now)
        if auto is not None and estimate < auto and spec["checks"]["dry_run"] == "ok":
            try:
                return self.approve(record.id, AUTO_APPROVE)
            except PolicyError:  # over budget: it waits for a person (the refusal is audited)
                pass
        return self.store.fetch(record.id)

    def submit_stop(self, requester: str, instance_ids: list[str], region: str | None = None) -> RequestRecord:
        """A request to stop instances; refused unless every one carries gpu-assist's request tag."""
        now = self.clock()
        if not instance_ids or not all(INSTANCE_ID.match(i) for i in instance_ids):
            raise ParseError("name the instances to stop", example="stop i-0123456789abcdef0")
        where = region or self.store.region_of(instance_ids[0]) or self.policy.default_region
        owners = self._audited(lambda: self.provisioner.require_managed(instance_ids, where), None, requester,
                               "submit stop", " ".join(instance_ids), now)
        spec = {"request_id": self.store.new_id(), "instance_ids": list(instance_ids), "region": where,
                "launch_requests": sorted(set(owners.values()))}
        return self._submit("stop", requester, spec, None, self.policy.currency, list(instance_ids),
                            f"stop {' '.join(instance_ids)}", now)

    def submit_extend(self, requester: str, launch_id: str, extra_s: int) -> RequestRecord:
        """A request to move a running launch's time to live `extra_s` later: priced at the launch's approved
        hourly price, checked against the policy, decided like a launch."""
        now = self.clock()
        launch = self.store.get(launch_id)
        waiting = self.store.extensions_waiting(launch_id)
        spec, estimate = self._audited(lambda: plan_extension(launch, launch_id, extra_s, self.policy, waiting=waiting,
                                                              request_id=self.store.new_id()),
                                       launch.id if launch else None, requester, "submit extend",
                                       format_duration(extra_s), now)
        return self._submit("extend", requester, spec, estimate, self.policy.currency, [],
                            f"extend {launch_id} by {format_duration(extra_s)}", now)

    def _audited(self, plan: Callable[[], T], request_id: str | None, requester: str, action: str, words: str,
                 now: dt.datetime) -> T:
        """`plan()`; a refusal is written to the audit log (who asked what, and why not), then raised."""
        try:
            return plan()
        except GpuAssistError as error:
            self.store.audit(request_id, requester, action, "refused", now=now, detail=f"{words}: {error}")
            raise

    def _submit(self, kind: str, requester: str, spec: dict[str, Any], estimate: Decimal | None, currency: str,
                instance_ids: list[str], detail: str, now: dt.datetime) -> RequestRecord:
        self.store.insert_request({
            "id": spec["request_id"], "kind": kind, "requester": requester, "spec": spec, "estimated_cost": estimate,
            "currency": currency, "state": states.SUBMIT.target, "created_at": now,
            "expires_at": now + dt.timedelta(seconds=self.policy.expiry_s), "instance_ids": instance_ids,
        }, actor=requester, detail=detail)
        return self.store.fetch(spec["request_id"])

    def budget_standing(self, record: RequestRecord) -> list[BudgetStatus]:
        """The budgets a launch or an extension counts against, with it included (none without budgets, or for a
        stop)."""
        if self.policy.budgets is None or record.kind == "stop":
            return []
        now = self.clock()
        return standing(self.policy.budgets, self.store.spend_rows(month_start(now)), now,
                        default_project=self.policy.default_project, request=record)

    # ---- decide -----------------------------------------------------------------------------------------
    def approve(self, request_id: str, approver: str, *, reason: str = "",
                on_approved: Callable[[RequestRecord], None] | None = None) -> RequestRecord:
        """Approve and carry out; only the first of concurrent approvals launches anything. The policy and the
        budgets are checked again now. `on_approved` hears of the decision before the (slow) carrying out."""
        now = self.clock()
        record = self._decided_by(request_id, states.APPROVE, approver, reason, now)
        problem = approval_problem(record, self.policy, self.budget_standing(record), approver)
        if problem:
            raise self._refuse(request_id, approver, states.APPROVE.action, problem, now)
        self._decide(request_id, states.APPROVE, approver, reason, now)
        if on_approved is not None:
            on_approved(self.store.fetch(request_id))
        return self.orchestration.carry_out(request_id, actor=approver)

    def reject(self, request_id: str, approver: str, reason: str = "") -> RequestRecord:
        now = self.clock()
        self._decided_by(request_id, states.REJECT, approver, reason, now)
        self._decide(request_id, states.REJECT, approver, reason, now)
        return self.store.fetch(request_id)

    def _decided_by(self, request_id: str, step: Transition, actor: str, reason: str, now: dt.datetime
                    ) -> RequestRecord:
        """The request, when `actor` is of a kind that may take `step`; refused and audited otherwise."""
        record = self.store.get(request_id)
        if record is None:
            raise self._refuse(None, actor, step.action, f"no request {request_id}", now)
        kind, why_not = self.policy.decider_kind(actor, requester=record.requester, request_kind=record.kind,
                                                 reason=reason)
        if kind not in step.actors:
            raise self._refuse(request_id, actor, step.action, why_not or f"{actor} may not {step.action}", now)
        return record

    def _decide(self, request_id: str, step: Transition, actor: str, reason: str, now: dt.datetime) -> None:
        """`step`, once, before the request expires; a break-glass decision is audited as an override, with its
        reason."""
        action, detail = (f"{step.action} (override)", f"break-glass override: {reason.strip()}") \
            if realm_of(actor) == BREAK_GLASS else (step.action, reason)
        if not self.store.transition(request_id, step, actor=actor, action=action, detail=detail, now=now,
                                     condition=requests_table.c.expires_at > now, approver=actor, decided_at=now):
            raise self._not_pending(request_id, actor, step.action, now)

    def _refuse(self, request_id: str | None, actor: str, action: str, message: str, now: dt.datetime) -> PolicyError:
        self.store.audit(request_id, actor, action, "refused", now=now, detail=message)
        return PolicyError(message)

    def _not_pending(self, request_id: str, actor: str, action: str, now: dt.datetime) -> PolicyError:
        record = self.store.fetch(request_id)
        if record.state == "pending" and record.expires_at <= now:
            self.store.transition(request_id, states.EXPIRE, actor="system", now=now)
            return self._refuse(request_id, actor, action, f"request {request_id} has expired", now)
        by = f" by {record.approver}" if record.approver else ""
        return self._refuse(request_id, actor, action, f"request {request_id} is already {record.state}{by}", now)

    def expire_due(self) -> list[str]:
        now = self.clock()
        return [record.id for record in self.store.due("pending", requests_table.c.expires_at, now)
                if self.store.transition(record.id, states.EXPIRE, actor="system", now=now)]
