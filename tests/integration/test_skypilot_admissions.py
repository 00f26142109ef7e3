"""What an admission is worth over time, through the gate in process (SkyPilot's request bodies written out as its
`UserRequest.encode()` writes them, posted as its `RestfulAdminPolicy` posts them), a real SQLite store and an
injected clock: spend and budgets count an auto-approved launch from the moment SkyPilot launches it; the reaper
marks it stopped at its time to live; an admission nobody used expires with the approval's validity."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from support import Clock

from gpu_assist.commands.lifecycle import clouds
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.skypilot import contract
from gpu_assist.skypilot.gate import Gate, LetThrough, Waiting
from gpu_assist.store import Store
from gpu_assist.team.periods import month_start

T4 = "resources:\n  infra: aws/us-east-1\n  accelerators:\n    T4: 1\nrun: python train.py\n"
A100 = "resources:\n  infra: aws/us-east-1\n  accelerators:\n    A100: 8\nrun: python train.py\n"


def _ask(gate: Gate, task: str, name: str, cluster: str | None = None):
    options = {"cluster_name": cluster, "idle_minutes_to_autostop": None, "down": False, "dryrun": False} \
        if name == "launch" else None
    body = json.dumps(json.dumps({"task": task, "skypilot_config": "{}\n", "request_name": name,
                                  "request_options": options, "at_client_side": False,
                                  "user": "id: a1\nname: dora\n"})).encode()
    return gate.decide(contract.read_request(body))


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def gate(tmp_path, catalog, clock, monkeypatch):
    policy = Policy(approvers=frozenset({"slack:U-BOB"}), auto_approve_below=Decimal(100), expiry_s=3600)
    # the clouds as a process builds them, without SkyPilot's API server: the reaper leaves a cluster to its autodown
    monkeypatch.delenv("SKYPILOT_API_SERVER_ENDPOINT", raising=False)
    approvals = Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy, clouds(policy), catalog, clock)
    return Gate(approvals, ttl_s=8 * 3600)


def test_an_auto_approved_launch_counts_from_its_launch_and_stops_at_its_time_to_live(gate, clock):
    assert isinstance(_ask(gate, T4, "validate"), LetThrough)
    store = gate.approvals.store
    assert store.spend_rows(month_start(clock())) == []  # admitted, not yet launched: nothing spent
    launched = _ask(gate, T4, "launch", cluster="small")
    assert isinstance(launched, LetThrough) and launched.record is not None
    (record,) = store.spend_rows(month_start(clock()))
    assert (record.state, record.instance_ids, record.launched_at) == ("admitted", ("small",), clock())
    assert record.ends_at == clock() + dt.timedelta(hours=8) and record.hourly_price == Decimal("0.526")
    clock.advance(hours=1)
    assert gate.approvals.team_standing().month_to_date == {"(none)": Decimal("0.526")}  # one hour of it
    clock.advance(hours=7, minutes=1)
    assert gate.approvals.orchestration.reap() == [record.id]
    assert store.fetch(record.id).state == "stopped" and store.fetch(record.id).stopped_at == record.ends_at


def test_an_admission_nobody_used_expires_with_the_approvals_validity(gate, clock):
    waiting = _ask(gate, A100, "validate")
    assert isinstance(waiting, Waiting)
    gate.approvals.approve(waiting.record.id, "slack:U-BOB")
    assert gate.approvals.store.fetch(waiting.record.id).state == "admitted"
    clock.advance(minutes=59)
    assert gate.approvals.orchestration.expire_due() == []
    clock.advance(minutes=2)
    assert gate.approvals.orchestration.expire_due() == [waiting.record.id]
    again = _ask(gate, A100, "validate")  # the same launch asked again is a new request
    assert isinstance(again, Waiting) and again.record.id != waiting.record.id


def test_two_replicas_asked_about_one_launch_at_once_file_one_request(gate, tmp_path, clock, monkeypatch):
    """Two gate replicas on one database, each asked about the same launch: the second is held until the first
    has filed, though it looked for an open request before the first filed (the interleaving is forced, not hoped
    for). One request, one card; a later launch of the cluster, once that request is closed, is a new one."""
    cards: list[str] = []
    gate = Gate(gate.approvals, on_filed=lambda record: cards.append(record.id), ttl_s=8 * 3600)
    other = Gate(Approvals(Store(gate.approvals.store.url), gate.approvals.policy, gate.approvals.provisioner,
                           gate.approvals.catalog, clock), on_filed=lambda record: cards.append(record.id),
                 ttl_s=8 * 3600)
    looked = other._open_requests
    first: list[object] = []

    def look_then_let_the_first_file(*args, **kwargs):
        found = looked(*args, **kwargs)  # nothing open yet: this replica will file too
        first.append(_ask(gate, A100, "launch", cluster="big"))
        return found

    monkeypatch.setattr(other, "_open_requests", look_then_let_the_first_file)
    second = _ask(other, A100, "launch", cluster="big")
    assert isinstance(first[0], Waiting) and isinstance(second, Waiting)
    assert first[0].record.id == second.record.id and cards == [second.record.id]
    assert [r.id for r in gate.approvals.store.list()] == [second.record.id]
    gate.approvals.reject(second.record.id, "slack:U-BOB")
    monkeypatch.undo()
    again = _ask(other, A100, "launch", cluster="big")
    assert isinstance(again, Waiting) and again.record.id != second.record.id
