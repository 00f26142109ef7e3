"""What a request and an audit event look like to the rest of the program: plain frozen records,
importable without the database layer (renderers and faces use them; only `store` needs SQLAlchemy)."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass
from decimal import Decimal

from .specs import Spec

# A request's id: `r-` and 12 hex digits. The one home of the form: ids are made (`new_request_id`), read from
# the grammar's words and Slack's buttons (`REQUEST_ID`) and routed (`REQUEST_ID_FORM`, in the Jupyter routes) here.
REQUEST_ID_FORM = r"r-[0-9a-f]{12}"
REQUEST_ID = re.compile(rf"^{REQUEST_ID_FORM}$")
# A launch through the engine is one SkyPilot cluster named after its request: the name is the launch's idempotency
# key on the API server, and what its record holds (and `stop` takes) in place of instance ids.
ENGINE_CLUSTER = re.compile(rf"^gpu-assist-{REQUEST_ID_FORM}$")


def engine_cluster(request_id: str) -> str:
    """The SkyPilot cluster a launch request makes: one per request, whoever launches it."""
    return f"gpu-assist-{request_id}"


def engine_request(cluster: str) -> str | None:
    """The request a cluster of gpu-assist's name was launched for; None for any other name."""
    return cluster.removeprefix("gpu-assist-") if ENGINE_CLUSTER.match(cluster) else None


def new_request_id() -> str:
    """A new request's id, random (a replica needs no other's to make one)."""
    return "r-" + uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class RequestRecord:
    id: str
    kind: str                            # launch | stop | extend: the kind of `spec`
    requester: str
    spec: Spec
    estimated_cost: Decimal | None
    currency: str
    state: str
    created_at: dt.datetime
    expires_at: dt.datetime
    approver: str | None = None
    decided_at: dt.datetime | None = None
    instance_ids: tuple[str, ...] = ()
    ends_at: dt.datetime | None = None   # a launch: when its time to live is over; an extension: the end it sets
    error: str | None = None
    version: int = 0
    hourly_price: Decimal | None = None  # a launch's approved price per hour, all instances
    launched_at: dt.datetime | None = None
    stopped_at: dt.datetime | None = None
    card_channel: str | None = None  # where its Slack card was posted, if it was
    card_ts: str | None = None
    owner: str | None = None  # who carries it out (`gpu_assist.lifecycle.owners`), and until when unless renewed
    owned_until: dt.datetime | None = None


@dataclass(frozen=True)
class AuditEvent:
    id: int
    at: dt.datetime
    request_id: str | None
    actor: str
    action: str
    outcome: str
    from_state: str | None
    to_state: str | None
    detail: str


def describe(record: RequestRecord) -> str:
    """One line for lists and cards."""
    return f"{record.id} [{record.state}] {record.spec.describe(record.currency)} — by {record.requester}"
