"""The request state machine is declared once (gpu_assist/lifecycle/states.py): the docs show exactly that table, the
store's CHECKs hold exactly its states and kinds, and `Store.transition` takes no arrow it does not declare. A
delivery (a Slack click, run again after its process died) has one decision row, even when two runs of it race."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
import sqlalchemy
from support import REPO

from gpu_assist.errors import PolicyError
from gpu_assist.lifecycle import states
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.lifecycle.records import RequestRecord, new_request_id
from gpu_assist.lifecycle.specs import StopSpec
from gpu_assist.store import DeliveryRecorded, Store, requests_table

NOW = dt.datetime(2026, 12, 2, 12, tzinfo=dt.timezone.utc)


def test_the_architecture_document_shows_the_declared_table():
    document = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert states.with_table(document) == document, "docs/ARCHITECTURE.md differs from lifecycle/states.py: " \
                                                     "run `make docs`"


def test_every_transition_names_known_states_kinds_and_actors():
    actors = {states.REQUESTER, states.APPROVER, states.AUTO_APPROVAL, states.BREAK_GLASS, states.SYSTEM}
    for step in states.TRANSITIONS:
        assert set(step.source) <= set(states.STATES) and step.target in states.STATES, step
        assert set(step.kinds) <= set(states.KINDS) and set(step.actors) <= actors, step
    reached = {states.SUBMIT.target} | {t.target for t in states.TRANSITIONS}
    assert reached == set(states.STATES)  # no state is unreachable
    assert not {t for t in states.TRANSITIONS if set(t.source) & set(states.TERMINAL)}  # nothing leaves an end
    assert states.OUTSIDER not in {a for t in states.TRANSITIONS for a in t.actors}
    assert states.REQUESTER not in states.APPROVE.actors + states.REJECT.actors


def test_the_store_checks_hold_the_declared_states_and_kinds():
    checks = {c.name: str(c.sqltext) for c in requests_table.constraints if isinstance(c, sqlalchemy.CheckConstraint)}
    assert checks["request_state_known"] == "state IN (" + ", ".join(f"'{s}'" for s in states.STATES) + ")"
    assert checks["request_kind_known"] == "kind IN (" + ", ".join(f"'{k}'" for k in states.KINDS) + ")"


@pytest.fixture
def store(tmp_path):
    return Store(f"sqlite:///{tmp_path / 'states.db'}")


def _stop_request(store: Store, state: str = "pending") -> RequestRecord:
    request_id = new_request_id()
    return RequestRecord(id=request_id, kind="stop", requester="slack:U-CAROL", currency="USD", state=state,
                         spec=StopSpec(request_id, ("i-0123456789abcdef0",), "us-east-1", ("r-0123456789ab",)),
                         estimated_cost=None,
                         created_at=NOW, expires_at=NOW + dt.timedelta(days=1))


def test_a_transition_moves_a_request_once_and_only_along_a_declared_arrow(store):
    record = _stop_request(store)
    store.insert_request(record, actor="slack:U-CAROL")
    stop = record.id
    assert not store.transition(stop, states.LAUNCH, actor="slack:U-BOB", now=NOW)  # not from pending
    assert store.transition(stop, states.APPROVE, actor="slack:U-BOB", now=NOW)
    assert not store.transition(stop, states.APPROVE, actor="slack:U-ALICE", now=NOW)  # the second click loses
    assert not store.transition(stop, states.LAUNCH, actor="slack:U-BOB", now=NOW)  # a stop is never launched
    assert store.transition(stop, states.STOP, actor="slack:U-BOB", now=NOW)
    assert [(e.action, e.from_state, e.to_state) for e in store.audit_trail(stop)] == [
        ("submit", None, "pending"), ("approve", "pending", "approved"), ("stop", "approved", "stopping")]


def test_a_new_request_is_pending_and_its_kind_is_its_specs(store):
    with pytest.raises(ValueError, match="a new request is a pending launch, stop, extend, not stop running"):
        store.insert_request(_stop_request(store, "running"), actor="slack:U-CAROL")
    with pytest.raises(ValueError, match="not launch pending"):
        store.insert_request(dataclasses.replace(_stop_request(store), kind="launch"), actor="slack:U-CAROL")


def test_a_delivery_has_one_audit_row_and_a_second_write_naming_it_changes_nothing(store):
    record = _stop_request(store)
    store.insert_request(record, actor="slack:U-CAROL")
    store.audit(record.id, "slack:U-MALLORY", "approve", "refused", now=NOW, detail="not an approver",
                delivery="click-1")
    with pytest.raises(DeliveryRecorded) as recorded:  # the same delivery's state change: rolled back with its row
        store.transition(record.id, states.APPROVE, actor="slack:U-MALLORY", now=NOW, delivery="click-1")
    assert (recorded.value.event.action, recorded.value.event.outcome) == ("approve", "refused")
    assert store.get(record.id).state == "pending"
    with pytest.raises(DeliveryRecorded):
        store.audit(record.id, "slack:U-MALLORY", "approve", "refused", now=NOW, delivery="click-1")
    assert store.transition(record.id, states.APPROVE, actor="slack:U-BOB", now=NOW, delivery="click-2")
    for _ in range(2):  # rows no delivery caused are not limited
        store.audit(record.id, "system", "announce", "ok", now=NOW)
    assert [(e.actor, e.action, e.outcome) for e in store.audit_trail(record.id)] == [
        ("slack:U-CAROL", "submit", "ok"), ("slack:U-MALLORY", "approve", "refused"), ("slack:U-BOB", "approve", "ok"),
        ("system", "announce", "ok"), ("system", "announce", "ok")]
    assert store.caused_by("click-2").to_state == "approved" and store.caused_by("click-3") is None


class _LateCheck:
    """`Store.caused_by` that misses the first look: another run of the delivery records its decision between
    this run's check and its write."""

    def __init__(self, store: Store):
        self.looked, self.caused_by = 0, store.caused_by

    def __call__(self, delivery: str):
        self.looked += 1
        return None if self.looked == 1 else self.caused_by(delivery)


@pytest.mark.parametrize("decider, outcome", [("slack:U-BOB", "ok"), ("slack:U-MALLORY", "refused")])
def test_two_runs_of_one_click_racing_past_the_check_decide_once_and_answer_alike(store, monkeypatch, decider,
                                                                                   outcome):
    approvals = Approvals(store, Policy(approvers=frozenset({"slack:U-BOB"})), provisioner=None, catalog=None,
                          clock=lambda: NOW)
    record = _stop_request(store)
    store.insert_request(record, actor="slack:U-CAROL")
    answers = []
    for run in range(3):  # the first run; one that finds its decision; one that races past the check
        if run == 2:
            monkeypatch.setattr(store, "caused_by", _LateCheck(store))
        try:
            answers.append(approvals.reject(record.id, decider, delivery="click-1").state)
        except PolicyError as refused:
            answers.append(str(refused))
    assert answers == ["rejected"] * 3 if outcome == "ok" else ["slack:U-MALLORY is not an approver"] * 3
    assert [(e.action, e.outcome) for e in store.audit_trail(record.id)] == [("submit", "ok"), ("reject", outcome)]
