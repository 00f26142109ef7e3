"""The request state machine is declared once (gpu_assist/states.py): the docs show exactly that table, the
store's CHECKs hold exactly its states and kinds, and `Store.transition` takes no arrow it does not declare."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
import sqlalchemy

from gpu_assist import states
from gpu_assist.records import RequestRecord, new_request_id
from gpu_assist.specs import StopSpec
from gpu_assist.store import Store, requests_table
from support import REPO

NOW = dt.datetime(2026, 12, 2, 12, tzinfo=dt.timezone.utc)


def test_the_architecture_document_shows_the_declared_table():
    document = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert states.with_table(document) == document, "docs/ARCHITECTURE.md differs from gpu_assist/states.py: " \
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
                         spec=StopSpec(request_id, ("i-0123456789abcdef0",), "us-east-1", ()), estimated_cost=None,
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
