"""What SkyPilot shows its user, word for word: the one line of each refusal (SkyPilot prints it after "User
request is rejected by admin policy <url>: "). The gate decides with types (`gate.Verdict`); the words are here."""

from __future__ import annotations

from functools import singledispatch

from ..render.money import format_money
from .gate import NotAdmitted, OtherCluster, Refused, Verdict, Waiting

# Where a request waits, by the face that serves the gate.
IN_SLACK_AND_LAB = "the Slack approval channel and JupyterLab's Requests tab"
IN_LAB = "JupyterLab's Requests tab (and `gpu-assist requests`)"


@singledispatch
def refusal(verdict: Verdict, waits_in: str) -> str:
    raise TypeError(f"no words for {type(verdict).__name__}")


@refusal.register
def _(verdict: Waiting, waits_in: str) -> str:
    record = verdict.record
    cost = format_money(record.estimated_cost, record.currency) if record.estimated_cost is not None else "?"
    state = "is approved and being admitted" if record.state == "approved" else f"waits for an approver in {waits_in}"
    return (f"gpu-assist: this launch needs an approval: request {record.id} (est. {cost}) {state}; once it is "
            f"approved, launch again with -c {verdict.cluster}")


@refusal.register
def _(verdict: Refused, waits_in: str) -> str:
    return f"gpu-assist refuses this launch: {verdict.reason}"


@refusal.register
def _(verdict: OtherCluster, waits_in: str) -> str:
    return (f"gpu-assist: request {verdict.record.id} was approved for the cluster {verdict.cluster} only: launch "
            f"with -c {verdict.cluster}")


@refusal.register
def _(verdict: NotAdmitted, waits_in: str) -> str:
    return (f"gpu-assist does not admit {verdict.request_name} requests (a service's or a pool's replicas change "
            "what it costs): launch clusters (sky launch) or managed jobs (sky jobs launch)")


def unreadable(message: str) -> str:
    """A body that is not SkyPilot's admin-policy request."""
    return f"gpu-assist cannot read this admin-policy request: {message}"
