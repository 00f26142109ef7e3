"""The life of a launch or stop request, from submit to stopped, with an approver other than the requester.

    pending ──approve──▶ approved ──▶ launching ──▶ running ──▶ stopping ──▶ stopped
       │ └─reject──▶ rejected             │                        ▲
       └─expire──▶ expired                └──▶ failed (reason)     └── TTL reached / stop approved

Each arrow is one conditional UPDATE in `Store.transition`, so double clicks, Slack retries and replicas
cannot both win; the launch itself happens only for the caller that moved the request to `launching`.
Every attempt, allowed or refused, is written to the audit log with who, when, what and the outcome.
`reconcile()` finishes requests left in `approved`, `launching` or `stopping` by a crash, finding instances
by their request tag before launching anything. `reap()` stops launches whose approved duration is over.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Callable

from .catalog import Catalog
from .errors import GpuAssistError, ParseError, PolicyError
from .identity import AUTO_APPROVE, BREAK_GLASS, authenticated, realm_of, same_person
from .policy import Policy
from .pricing import QuoteOption, quote
from .request import format_duration, parse_request
from .store import RequestRecord, Store, requests_table

LAUNCH_EXAMPLE = "launch 8xA100 72h spot region=us-east-1"
EXTEND_EXAMPLE = "extend r-0123456789ab 24h"
_OPTION_ID = re.compile(r"^aws:([a-z0-9.\-]+):([a-z0-9\-]+):(on-demand|spot)$")
_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/+=@-]{0,63}$")  # what an AWS tag value may hold, shortened


def option_id(option: QuoteOption) -> str:
    """A quote row as `launch` takes it: aws:p4d.24xlarge:us-east-1:spot."""
    return f"{option.provider}:{option.instance_type}:{option.region}:{option.pricing_model}"


@dataclass
class Approvals:
    store: Store
    policy: Policy
    provisioner: object  # AwsProvisioner, or anything with its methods
    catalog: Catalog
    clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc)

    # ---- submit -----------------------------------------------------------------------------------------
    def submit_launch(self, requester: str, text: str) -> RequestRecord:
        """Price the launch, check policy, dry-run and quota, and store it as pending (or auto-approve it)."""
        now = self.clock()
        try:
            spec = self._launch_spec(requester, text, now)
            self.policy.require_launch_allowed(gpus=spec["gpus"], estimated_cost=Decimal(spec["estimated_total"]),
                                               instance_type=spec["instance_type"], region=spec["region"],
                                               pricing_model=spec["pricing_model"], ttl_s=spec["duration_s"])
        except GpuAssistError as error:
            self.store.audit(None, requester, "submit launch", "refused", now=now, detail=f"{text}: {error}")
            raise
        spec["checks"] = {"dry_run": self.provisioner.dry_run(spec), "quota": self.provisioner.quota(spec)}
        record = {
            "id": spec["request_id"], "kind": "launch", "requester": requester, "spec": spec,
            "estimated_cost": Decimal(spec["estimated_total"]), "currency": spec["currency"], "state": "pending",
            "created_at": now, "expires_at": now + dt.timedelta(seconds=self.policy.expiry_s), "instance_ids": [],
        }
        self.store.insert_request(record, actor=requester, detail=text)
        auto = self.policy.auto_approve_below
        if auto is not None and Decimal(spec["estimated_total"]) < auto and spec["checks"]["dry_run"] == "ok":
            try:
                return self.approve(spec["request_id"], AUTO_APPROVE)
            except PolicyError:  # over budget: it waits for a person (the refusal is audited)
                pass
        return self.store.get(spec["request_id"])

    def budget_standing(self, record: RequestRecord) -> list:
        """The budgets a pending launch or extension counts against, with it included (empty without budgets or
        for a stop)."""
        from .budgets import standing
        from .spending import month_start

        if self.policy.budgets is None or record.kind == "stop":
            return []
        now = self.clock()
        return standing(self.policy.budgets, self.store.spend_rows(month_start(now)), now,
                        default_project=self.policy.default_project, request=record)

    def _project(self, word: str | None) -> str | None:
        """`project=vision`: recorded on the launch, charged to that budget, tagged on its instances. When the
        policy's budgets name projects, it must be one of them (or the policy's default cost tag)."""
        if word is None:
            return None
        if not _PROJECT.match(word):
            raise ParseError(f"project '{word}' must be letters, digits and _.:/+=@- (at most 64)",
                             example="launch 8xA100 72h project=vision")
        known = self.policy.budgets.projects() if self.policy.budgets else []
        if known and word not in known and word != self.policy.default_project:
            raise ParseError(f"unknown project '{word}'", hint=f"projects with a budget: {', '.join(known)}",
                             example=f"launch 8xA100 72h project={known[0]}")
        return word

    def _launch_spec(self, requester: str, text: str, now: dt.datetime) -> dict:
        words = text.split()
        if words and words[0].lower() == "launch":
            words = words[1:]
        project = self._project(next((w.split("=", 1)[1] for w in words if w.lower().startswith("project=")), None))
        words = [w for w in words if not w.lower().startswith("project=")]
        chosen_id = next((w.lower() for w in words if _OPTION_ID.match(w.lower())), None)
        if chosen_id:
            _, instance_type, region, model = chosen_id.split(":")
            rest = [w for w in words if w.lower() != chosen_id]
            offers = self.catalog.offers
            rows = offers[(offers.provider == "aws") & (offers.instance_type == instance_type)]
            if not len(rows):
                raise ParseError(f"unknown AWS instance type '{instance_type}'", example=LAUNCH_EXAMPLE)
            gpu, per_instance = rows.gpu.iloc[0], int(rows.gpu_count.iloc[0])
            duration = next((w for w in rest if re.match(r"^\d", w)), None)
            if duration is None:
                raise ParseError("say for how long", example=f"launch {chosen_id} 72h")
            request = parse_request(f"{per_instance}x{gpu} {duration} {model} region={region} aws", self.catalog.gpus)
        else:
            request = parse_request(" ".join(words) + " aws", self.catalog.gpus)
            if not request.pricing_models:
                request = parse_request(" ".join(words) + " aws on-demand", self.catalog.gpus)
            if not set(request.pricing_models) <= {"on-demand", "spot"}:
                raise ParseError("launch buys on-demand or spot", example=LAUNCH_EXAMPLE)
            if request.assumptions:  # the only assumption a request makes is a missing duration
                raise ParseError("say for how long: the duration is the instance's time to live",
                                 example=LAUNCH_EXAMPLE)
        result = quote(request, self.catalog, today=now.date(), currency=self.policy.currency, all_regions=True,
                       verified_only=True)
        def violations(option: QuoteOption) -> list[str]:
            return self.policy.launch_violations(
                gpus=option.instances * option.gpu_count, estimated_cost=option.total,
                instance_type=option.instance_type, region=option.region, pricing_model=option.pricing_model,
                ttl_s=request.duration_s)

        candidates = [o for o in result.options if not chosen_id or option_id(o) == chosen_id]
        allowed = [o for o in candidates if not violations(o)]
        if not allowed:
            reasons = "; ".join(violations(candidates[0])) if candidates else "no AWS offer matches"
            raise PolicyError(f"nothing to launch for '{text}': {reasons}", example=LAUNCH_EXAMPLE)
        best = allowed[0]
        same = [o for o in allowed if o.instance_type == best.instance_type and o.pricing_model == best.pricing_model
                and o.hourly <= best.hourly]
        rows = self.catalog.offers
        vcpus = rows[(rows.provider == "aws") & (rows.instance_type == best.instance_type)].vcpus.dropna()
        request_id = self.store.new_id()
        return {
            "request_id": request_id, "requester": requester, "text": text, "gpu": best.gpu,
            "gpus": best.instances * best.gpu_count, "instance_type": best.instance_type, "instances": best.instances,
            "vcpus": int(vcpus.iloc[0]) if len(vcpus) else None, "region": best.region, "zone": best.zone,
            "pricing_model": best.pricing_model, "duration_s": request.duration_s,
            "hourly": str(best.hourly), "ceiling_hourly": str(best.hourly), "estimated_total": str(best.total),
            "currency": best.currency,
            "candidates": [{"region": o.region, "zone": o.zone or None, "hourly": str(o.hourly)} for o in same],
            "price_source": f"{best.source} {best.as_of}", **({"project": project} if project else {}),
        }

    def region_of(self, instance_id: str) -> str | None:
        """Where gpu-assist launched an instance, from its own records."""
        for record in self.store.list(states=("running", "stopping"), limit=1000):
            if instance_id in record.instance_ids:
                return record.spec.get("launched_region", record.spec["region"])
        return None

    def submit_stop(self, requester: str, instance_ids: list[str], region: str | None = None) -> RequestRecord:
        """A request to stop instances; refused unless every one carries gpu-assist's request tag."""
        now = self.clock()
        if not instance_ids or not all(re.match(r"^i-[0-9a-f]{8,17}$", i) for i in instance_ids):
            raise ParseError("name the instances to stop", example="stop i-0123456789abcdef0")
        region = region or self.region_of(instance_ids[0]) or self.policy.default_region
        try:
            owners = self.provisioner.require_managed(instance_ids, region)
        except GpuAssistError as error:
            self.store.audit(None, requester, "submit stop", "refused", now=now,
                             detail=f"{' '.join(instance_ids)}: {error}")
            raise
        request_id = self.store.new_id()
        spec = {"request_id": request_id, "instance_ids": list(instance_ids), "region": region,
                "launch_requests": sorted({owners[i] for i in instance_ids})}
        self.store.insert_request({
            "id": request_id, "kind": "stop", "requester": requester, "spec": spec, "estimated_cost": None,
            "currency": self.policy.currency, "state": "pending", "created_at": now,
            "expires_at": now + dt.timedelta(seconds=self.policy.expiry_s), "instance_ids": list(instance_ids),
        }, actor=requester, detail=f"stop {' '.join(instance_ids)}")
        return self.store.get(request_id)

    def submit_extend(self, requester: str, launch_id: str, extra_s: int) -> RequestRecord:
        """A request to move a running launch's time to live `extra_s` later; priced at the launch's approved
        hourly price, checked against the policy, decided like a launch."""
        now = self.clock()
        launch = self.store.get(launch_id)
        try:
            if launch is None or launch.kind != "launch":
                raise ParseError(f"no launch request {launch_id}", example=EXTEND_EXAMPLE)
            if launch.state != "running" or launch.ends_at is None:
                raise PolicyError(f"{launch_id} is {launch.state}, not running: only a running launch's time to "
                                  "live can move")
            waiting = [r.id for r in self.store.list(states=("pending", "approved", "extending"), limit=1000)
                       if r.kind == "extend" and r.spec["launch_request"] == launch_id]
            if waiting:
                raise PolicyError(f"{launch_id} already has an extension waiting: {waiting[0]}")
            estimate = (launch.hourly_price or Decimal(0)) * extra_s / 3600
            ttl_s = int((launch.ends_at - (launch.launched_at or launch.ends_at)).total_seconds()) + extra_s
            problems = self._extension_violations(launch, estimate, extra_s, ttl_s)
            if problems:
                raise PolicyError("policy refuses this extension: " + "; ".join(problems),
                                  hint="ask for less, or ask an admin to change the policy")
        except GpuAssistError as error:
            self.store.audit(launch.id if launch else None, requester, "submit extend", "refused", now=now,
                             detail=f"{format_duration(extra_s)}: {error}")
            raise
        spec = launch.spec
        request_id = self.store.new_id()
        self.store.insert_request({
            "id": request_id, "kind": "extend", "requester": requester, "estimated_cost": estimate,
            "currency": launch.currency, "state": "pending", "created_at": now,
            "expires_at": now + dt.timedelta(seconds=self.policy.expiry_s), "instance_ids": list(launch.instance_ids),
            "spec": {"request_id": request_id, "launch_request": launch.id, "extra_s": extra_s,
                     "launch_ends_at": launch.ends_at.strftime("%Y-%m-%dT%H:%M:%SZ"), "ttl_s": ttl_s,
                     "hourly": str(launch.hourly_price), "instance_type": spec["instance_type"],
                     "instances": spec["instances"], "gpus": spec["gpus"], "gpu": spec["gpu"],
                     "pricing_model": spec["pricing_model"], "region": spec.get("launched_region", spec["region"]),
                     **({"project": spec["project"]} if spec.get("project") else {})},
        }, actor=requester, detail=f"extend {launch.id} by {format_duration(extra_s)}")
        return self.store.get(request_id)

    def _extension_violations(self, launch: RequestRecord, estimate: Decimal, extra_s: int, ttl_s: int) -> list[str]:
        """The launch's own rules, with the extension's cost and the whole time to live it would make."""
        spec = launch.spec
        problems = self.policy.launch_violations(
            gpus=spec["gpus"], estimated_cost=estimate, instance_type=spec["instance_type"],
            region=spec.get("launched_region", spec["region"]), pricing_model=spec["pricing_model"], ttl_s=ttl_s)
        too_long = self.policy.extension_problem(extra_s)
        return problems + ([too_long] if too_long else [])

    # ---- decide -----------------------------------------------------------------------------------------
    def _refuse(self, request_id: str, actor: str, action: str, message: str, now: dt.datetime) -> PolicyError:
        self.store.audit(request_id, actor, action, "refused", now=now, detail=message)
        return PolicyError(message)

    def _check_decider(self, record: RequestRecord | None, request_id: str, actor: str, action: str,
                       now: dt.datetime, reason: str = "") -> RequestRecord:
        """Refused, audited, unless `actor` may decide: a policy approver from an authenticated realm (or the
        policy's auto-approval, or a break-glass override the policy allows), and not the requester."""
        if record is None:
            raise self._refuse(None, actor, action, f"no request {request_id}", now)
        if same_person(actor, record.requester):
            raise self._refuse(request_id, actor, action, "requesters cannot approve or reject their own request",
                               now)
        if realm_of(actor) == BREAK_GLASS:
            if not self.policy.break_glass:
                raise self._refuse(request_id, actor, action, "break-glass overrides are off in the policy "
                                   "(break_glass = true in the [policy] table turns them on)", now)
            if not reason.strip():
                raise self._refuse(request_id, actor, action, "a break-glass override needs a reason", now)
            return record
        automatic = actor == AUTO_APPROVE and (self.policy.auto_approve_below is not None or (
            record.kind == "stop" and self.policy.auto_approve_own_stop))  # a requester's own idle instance
        if not automatic and not self.policy.is_approver(actor):
            why = "" if authenticated(actor) else \
                " (only an identity Slack or the Jupyter server authenticated can approve or reject)"
            raise self._refuse(request_id, actor, action, f"{actor} is not an approver{why}", now)
        return record

    @staticmethod
    def _decision(actor: str, action: str, reason: str) -> tuple[str, str]:
        """The audited action and detail: a break-glass decision is recorded as an override, with its reason."""
        if realm_of(actor) == BREAK_GLASS:
            return f"{action} (override)", f"break-glass override: {reason.strip()}"
        return action, reason

    def approve(self, request_id: str, approver: str, *, reason: str = "",
                on_approved: Callable[[RequestRecord], None] | None = None) -> RequestRecord:
        """Approve and carry out; only the first of concurrent approvals launches anything.

        `on_approved` hears of the decision before the (slow) launch, e.g. to update a Slack card.
        """
        now = self.clock()
        record = self._check_decider(self.store.get(request_id), request_id, approver, "approve", now, reason)
        action, detail = self._decision(approver, "approve", reason)
        if record.kind in ("launch", "extend"):
            spec = record.spec
            if record.kind == "launch":
                problems = self.policy.launch_violations(
                    gpus=spec["gpus"], estimated_cost=record.estimated_cost, instance_type=spec["instance_type"],
                    region=spec["region"], pricing_model=spec["pricing_model"], ttl_s=spec["duration_s"])
            else:
                launch = self.store.get(spec["launch_request"])
                problems = self._extension_violations(launch, record.estimated_cost, spec["extra_s"], spec["ttl_s"])
            if problems:
                raise self._refuse(request_id, approver, "approve", "policy refuses it now: " + "; ".join(problems),
                                   now)
            from .budgets import over_budget_problem

            over = over_budget_problem(self.policy.budgets, self.budget_standing(record), approver)
            if over:
                raise self._refuse(request_id, approver, "approve", over, now)
        won = self.store.transition(request_id, "pending", "approved", actor=approver, action=action, now=now,
                                    detail=detail, condition=requests_table.c.expires_at > now, approver=approver,
                                    decided_at=now)
        if not won:
            raise self._not_pending(request_id, approver, "approve", now)
        if on_approved is not None:
            on_approved(self.store.get(request_id))
        return self.carry_out(request_id, actor=approver)

    def reject(self, request_id: str, approver: str, reason: str = "") -> RequestRecord:
        now = self.clock()
        self._check_decider(self.store.get(request_id), request_id, approver, "reject", now, reason)
        action, detail = self._decision(approver, "reject", reason)
        if not self.store.transition(request_id, "pending", "rejected", actor=approver, action=action, now=now,
                                     detail=detail, approver=approver, decided_at=now):
            raise self._not_pending(request_id, approver, "reject", now)
        return self.store.get(request_id)

    def _not_pending(self, request_id: str, actor: str, action: str, now: dt.datetime) -> PolicyError:
        record = self.store.get(request_id)
        if record.state == "pending" and record.expires_at <= now:
            self.store.transition(request_id, "pending", "expired", actor="system", action="expire", now=now)
            return self._refuse(request_id, actor, action, f"request {request_id} has expired", now)
        by = f" by {record.approver}" if record.approver else ""
        return self._refuse(request_id, actor, action, f"request {request_id} is already {record.state}{by}", now)

    def expire_due(self) -> list[str]:
        now = self.clock()
        expired = []
        for record in self.store.due("pending", requests_table.c.expires_at, now):
            if self.store.transition(record.id, "pending", "expired", actor="system", action="expire", now=now):
                expired.append(record.id)
        return expired

    # ---- carry out --------------------------------------------------------------------------------------
    def carry_out(self, request_id: str, *, actor: str) -> RequestRecord:
        record = self.store.get(request_id)
        {"launch": self._launch, "stop": self._stop, "extend": self._extend}[record.kind](record, actor)
        return self.store.get(request_id)

    def _launch(self, record: RequestRecord, actor: str) -> None:
        now = self.clock()
        if record.state == "approved" and not self.store.transition(record.id, "approved", "launching", actor=actor,
                                                                    action="launch", now=now):
            return  # another worker is launching it
        if self.store.get(record.id).state != "launching":
            return
        ends_at = now + dt.timedelta(seconds=record.spec["duration_s"])  # the time to live starts at launch
        try:
            outcome = self.provisioner.launch({**record.spec, "ends_at": ends_at.strftime("%Y-%m-%dT%H:%M:%SZ")})
        except GpuAssistError as error:
            self.store.transition(record.id, "launching", "failed", actor=actor, action="launch", now=self.clock(),
                                  detail=str(error), error=str(error))
            return
        now = self.clock()
        detail = f"{len(outcome.instance_ids)} instances in {outcome.zone or outcome.region}" + \
            (" (found by tag, not launched again)" if outcome.reused else "") + \
            (f"; tried: {'; '.join(outcome.attempts)}" if outcome.attempts else "")
        self.store.transition(record.id, "launching", "running", actor=actor, action="running", now=now, detail=detail,
                              instance_ids=outcome.instance_ids, ends_at=ends_at,
                              spec={**record.spec, "launched_region": outcome.region, "launched_zone": outcome.zone})

    def _stop(self, record: RequestRecord, actor: str) -> None:
        now = self.clock()
        if record.state == "approved" and not self.store.transition(record.id, "approved", "stopping", actor=actor,
                                                                    action="stop", now=now):
            return
        if self.store.get(record.id).state != "stopping":
            return
        try:
            self.provisioner.stop(list(record.spec["instance_ids"]), record.spec["region"])
        except GpuAssistError as error:
            self.store.transition(record.id, "stopping", "failed", actor=actor, action="stop", now=self.clock(),
                                  detail=str(error), error=str(error))
            return
        now = self.clock()
        self.store.transition(record.id, "stopping", "stopped", actor=actor, action="stopped", now=now)
        for launch_id in record.spec.get("launch_requests", []):
            self.store.transition(launch_id, ("running", "stopping"), "stopped", actor=actor, action="stopped",
                                  now=now, detail=f"by stop request {record.id}")

    def _extend(self, record: RequestRecord, actor: str) -> None:
        """Move the launch's end: its instances' expires-at tag first, then its `ends_at` (which the reaper
        reads), each only forward, so a replay after a crash changes nothing twice."""
        now = self.clock()
        launch_id = record.spec["launch_request"]
        if record.state == "approved":
            launch = self.store.get(launch_id)
            ends_at = (launch.ends_at or now) + dt.timedelta(seconds=record.spec["extra_s"])
            if not self.store.transition(record.id, "approved", "extending", actor=actor, action="extend", now=now,
                                         ends_at=ends_at):
                return
        record = self.store.get(record.id)
        if record.state != "extending":
            return
        launch = self.store.get(launch_id)
        try:
            if launch.state != "running":
                raise PolicyError(f"{launch_id} is {launch.state}, no longer running")
            self.provisioner.set_expiry(list(launch.instance_ids), launch.spec.get("launched_region",
                                        launch.spec["region"]), record.ends_at.strftime("%Y-%m-%dT%H:%M:%SZ"))
        except GpuAssistError as error:
            self.store.transition(record.id, "extending", "failed", actor=actor, action="extend", now=self.clock(),
                                  detail=str(error), error=str(error))
            return
        now = self.clock()
        moved = f"time to live ends {record.ends_at:%Y-%m-%d %H:%M} UTC (was {launch.ends_at:%Y-%m-%d %H:%M} UTC)"
        self.store.transition(launch_id, "running", "running", actor=actor, action="extend", now=now,
                              detail=f"{moved}, by extension {record.id}", ends_at=record.ends_at,
                              condition=requests_table.c.ends_at < record.ends_at)
        self.store.transition(record.id, "extending", "extended", actor=actor, action="extended", now=now,
                              detail=moved)

    def reconcile(self, *, actor: str = "reconciler") -> list[str]:
        """Finish what a crash interrupted; returns the ids it moved on. Runs under a job lock."""
        finished = []
        with self.store.job_lock("reconcile") as held:
            if not held:
                return finished
            for state in ("approved", "launching", "stopping", "extending"):
                for record in self.store.list(states=(state,), limit=1000):
                    self.carry_out(record.id, actor=actor)
                    finished.append(record.id)
        return finished

    def reap(self, *, actor: str = "reaper") -> list[str]:
        """Stop running launches whose approved duration has passed."""
        reaped = []
        with self.store.job_lock("reap") as held:
            if not held:
                return reaped
            now = self.clock()
            for record in self.store.due("running", requests_table.c.ends_at, now):
                if not self.store.transition(record.id, "running", "stopping", actor=actor, action="reap", now=now,
                                             detail=f"its time to live ended {record.ends_at:%Y-%m-%d %H:%M} UTC"):
                    continue
                try:
                    self.provisioner.stop(list(record.instance_ids),
                                          record.spec.get("launched_region", record.spec["region"]))
                except GpuAssistError as error:
                    self.store.transition(record.id, "stopping", "failed", actor=actor, action="reap", now=self.clock(),
                                          detail=str(error), error=str(error))
                    continue
                self.store.transition(record.id, "stopping", "stopped", actor=actor, action="stopped", now=self.clock())
                reaped.append(record.id)
        return reaped


def describe(record: RequestRecord) -> str:
    """One line for lists and cards."""
    if record.kind == "launch":
        s = record.spec
        what = f"{s['instances']}x{s['instance_type']} ({s['gpus']}x{s['gpu']}) {s['pricing_model']} " \
               f"in {s['region']} " \
               f"for {format_duration(s['duration_s'])}, est. {Decimal(s['estimated_total']):,.2f} {record.currency}"
    elif record.kind == "extend":
        what = f"extend {record.spec['launch_request']} by {format_duration(record.spec['extra_s'])}, " \
               f"est. {record.estimated_cost or 0:,.2f} {record.currency}"
    else:
        what = f"stop {', '.join(record.spec['instance_ids'])}"
    return f"{record.id} [{record.state}] {what} — by {record.requester}"

