"""The request state machine, declared once: every state, every allowed transition, which request kinds it applies
to and which kind of actor may cause it.

`Store.transition` builds its conditional UPDATE from a `Transition` (`WHERE state IN source AND kind IN kinds`),
so a code path cannot move a request along an arrow not declared here, and two callers cannot both win one.
The lifecycle (`gpu_assist.lifecycle.approvals`) refuses a decider whose actor kind (`Policy.decider_kind`) a transition
does not list; the orchestration (`gpu_assist.lifecycle.orchestration`) carries out the rest. docs/ARCHITECTURE.md shows
`markdown()` of this table between markers; `make docs` rewrites it and a test fails when the two differ.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ..doc_blocks import with_block

KINDS = ("launch", "stop", "extend")
STATES = ("pending", "approved", "rejected", "expired", "launching", "running", "stopping", "stopped", "failed",
          "extending", "extended")
TERMINAL = ("rejected", "expired", "stopped", "failed", "extended")

# Who causes a transition (`Policy.decider_kind` tells a decider's kind; the jobs are the system).
REQUESTER = "requester"          # whoever asks (anyone may); never decides their own request
APPROVER = "approver"            # a policy approver from an authenticated realm, not the requester
AUTO_APPROVAL = "auto-approval"  # the policy itself: auto_approve_below, auto_approve_own_stop
BREAK_GLASS = "break-glass"      # an operator's override with a reason, when the policy allows it
SYSTEM = "system"                # the expiry job, the reaper, the reconciler
OUTSIDER = "outsider"            # anyone else: may ask, never decides
DECIDERS = (APPROVER, AUTO_APPROVAL, BREAK_GLASS)
CARRIERS = (*DECIDERS, SYSTEM)  # carrying out an approval: in the decider's call, or the reconciler after a crash


@dataclass(frozen=True)
class Transition:
    action: str                  # what the audit log calls it
    source: tuple[str, ...]      # the states it leaves from (none: a new request)
    target: str
    kinds: tuple[str, ...]       # the request kinds it applies to
    actors: tuple[str, ...]      # the actor kinds that may cause it


SUBMIT = Transition("submit", (), "pending", KINDS, (REQUESTER,))
APPROVE = Transition("approve", ("pending",), "approved", KINDS, DECIDERS)
REJECT = Transition("reject", ("pending",), "rejected", KINDS, (APPROVER, BREAK_GLASS))
EXPIRE = Transition("expire", ("pending",), "expired", KINDS, (SYSTEM,))
LAUNCH = Transition("launch", ("approved",), "launching", ("launch",), CARRIERS)
RUNNING = Transition("running", ("launching",), "running", ("launch",), CARRIERS)
LAUNCH_FAILED = Transition("launch", ("launching",), "failed", ("launch",), CARRIERS)
REAP = Transition("reap", ("running",), "stopping", ("launch",), (SYSTEM,))
REAPED = Transition("stopped", ("stopping",), "stopped", ("launch",), (SYSTEM,))
REAP_FAILED = Transition("reap", ("stopping",), "failed", ("launch",), (SYSTEM,))
STOP = Transition("stop", ("approved",), "stopping", ("stop",), CARRIERS)
STOPPED = Transition("stopped", ("stopping",), "stopped", ("stop",), CARRIERS)
STOP_FAILED = Transition("stop", ("stopping",), "failed", ("stop",), CARRIERS)
STOPPED_BY_REQUEST = Transition("stopped", ("running", "stopping"), "stopped", ("launch",), CARRIERS)
EXTEND = Transition("extend", ("approved",), "extending", ("extend",), CARRIERS)
EXTENDED = Transition("extended", ("extending",), "extended", ("extend",), CARRIERS)
EXTEND_FAILED = Transition("extend", ("extending",), "failed", ("extend",), CARRIERS)
TTL_MOVED = Transition("extend", ("running",), "running", ("launch",), CARRIERS)
INTERRUPTED = Transition("interrupted", ("running", "stopping"), "stopped", ("launch",), (SYSTEM,))

TRANSITIONS = (SUBMIT, APPROVE, REJECT, EXPIRE, LAUNCH, RUNNING, LAUNCH_FAILED, REAP, REAPED, REAP_FAILED, STOP,
               STOPPED, STOP_FAILED, STOPPED_BY_REQUEST, EXTEND, EXTENDED, EXTEND_FAILED, TTL_MOVED, INTERRUPTED)
UNFINISHED = ("approved", "launching", "stopping", "extending")  # a crash can leave a request here: reconcile
BEGIN = "<!-- state machine: from gpu_assist/lifecycle/states.py (make docs) -->"
END = "<!-- end of the state machine -->"


def markdown() -> str:
    """The table docs/ARCHITECTURE.md shows, one row per transition."""
    rows = ["| action | from | to | kinds | caused by |", "|---|---|---|---|---|"]
    rows += [f"| {t.action} | {', '.join(t.source) or '(new request)'} | {t.target} | {', '.join(t.kinds)} | "
             f"{', '.join(t.actors)} |" for t in TRANSITIONS]
    return "\n".join(rows)


def with_table(document: str) -> str:
    """`document` with the text between the markers replaced by `markdown()`."""
    return with_block(document, BEGIN, END, markdown())


if __name__ == "__main__":  # `make docs`: python -m gpu_assist.lifecycle.states docs/ARCHITECTURE.md
    path = Path(sys.argv[1])
    path.write_text(with_table(path.read_text(encoding="utf-8")), encoding="utf-8")
