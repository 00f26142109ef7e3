"""What a request and an audit event look like to the rest of the program: plain frozen records,
importable without the database layer (renderers and faces use them; only `store` needs SQLAlchemy)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal

from .request import format_duration

REQUEST_ID = re.compile(r"^r-[0-9a-f]{12}$")  # what `Store.new_id` makes


@dataclass(frozen=True)
class RequestRecord:
    id: str
    kind: str
    requester: str
    spec: dict
    estimated_cost: Decimal | None
    currency: str
    state: str
    created_at: dt.datetime
    expires_at: dt.datetime
    approver: str | None
    decided_at: dt.datetime | None
    instance_ids: tuple[str, ...]
    ends_at: dt.datetime | None
    error: str | None
    version: int
    hourly_price: Decimal | None = None  # a launch's approved price per hour, all instances
    launched_at: dt.datetime | None = None
    stopped_at: dt.datetime | None = None
    card_channel: str | None = None  # where its Slack card was posted, if it was
    card_ts: str | None = None


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
