"""The money side of the periodic jobs: what the jobs leader posts to Slack.

`watch_round` runs on the jobs leader: idle alerts for gpu-assist's running instances (fleet idle detection over
the policy's window) in the thread of the launch's approval card, budget crossings at 50/80/100 % to the approval
channel, and the daily digest at its hour. Each is handed out once by `Store.post_once` and audited. The idle
alert's buttons (Stop, Keep 4 h, Extend TTL) are answered by `listeners/idle_alerts.py`.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, TypedDict

from gpu_assist.clouds.fleet import fleet_usage
from gpu_assist.lifecycle.records import describe
from gpu_assist.lifecycle.specs import LaunchSpec
from gpu_assist.render.spend import crossing_line, idle_alert, render_digest
from gpu_assist.team.budgets import crossings, standing
from gpu_assist.team.periods import month_start
from gpu_assist.team.watch import build_digest, digest_due, idle_alerts
from slackbot.blocks import idle_alert_blocks

if TYPE_CHECKING:
    from slack_sdk import WebClient

    from gpu_assist.clouds.fleet import FleetReport
    from gpu_assist.commands import Context
    from gpu_assist.lifecycle.records import RequestRecord

# Where a message goes, as `chat_postMessage`'s arguments: a channel, and a thread in it (None: the channel itself).
Thread = TypedDict("Thread", {"channel": str, "thread_ts": str | None})


def thread_of(record: RequestRecord | None, fallback_channel: str) -> Thread:
    """Where a message about a request goes: the thread of its approval card, else (no card stored: an older
    request, or one made from the CLI or Jupyter) the fallback channel itself."""
    if record is not None and record.card_channel and record.card_ts:
        return {"channel": record.card_channel, "thread_ts": record.card_ts}
    return {"channel": fallback_channel, "thread_ts": None}


def _fleet(context: Context, records: list[RequestRecord], now: dt.datetime) -> list[FleetReport]:
    policy = context.approvals.policy
    # AWS's launches only: CloudWatch has no Tencent or Alibaba instance, so theirs are never called idle
    regions = sorted({r.spec.where for r in records if r.state == "running" and isinstance(r.spec, LaunchSpec)
                      and r.spec.provider == "aws"})
    return [fleet_usage(context.aws_client("ec2", region), context.aws_client("cloudwatch", region), context.catalog,
                        region=region, now=now, window_s=policy.idle_window_s,
                        threshold_pct=policy.idle_threshold_pct, currency=policy.currency) for region in regions]


def watch_round(context: Context, client: WebClient, channel: str) -> dict[str, list[str]]:
    """One round: what it posted, by kind."""
    approvals = context.approvals
    store, policy, now = approvals.store, approvals.policy, approvals.clock()
    records = store.spend_rows(min(month_start(now), now - dt.timedelta(days=1)))
    posted: dict[str, list[str]] = {"idle": [], "budget": [], "digest": []}
    idle_requests = set()
    by_id = {record.id: record for record in records}
    for report in _fleet(context, records, now):
        alerts, busy = idle_alerts(report, records, now)
        for key in busy:
            store.forget(key)
        for alert in alerts:
            idle_requests.add(alert.request_id)
            if store.post_once(alert.key, "idle", now=now, request_id=alert.request_id, detail=idle_alert(alert)):
                client.chat_postMessage(**thread_of(by_id.get(alert.request_id), channel), text=idle_alert(alert),
                                        blocks=idle_alert_blocks(alert))
                store.audit(alert.request_id, "system", "idle alert", "ok", now=now, detail=alert.instance_id)
                posted["idle"].append(alert.instance_id)
    if policy.budgets is not None:
        for status in standing(policy.budgets, records, now, default_project=policy.default_project):
            for key, threshold in crossings(status, now):
                if store.post_once(key, "budget", now=now, detail=crossing_line(status, threshold)):
                    client.chat_postMessage(channel=channel, text=crossing_line(status, threshold))
                    store.audit(None, "system", "budget crossing", "ok", now=now, detail=key)
                    posted["budget"].append(key)
    digest_key = digest_due(policy.digest_hour, now)
    if digest_key and store.post_once(digest_key, "digest", now=now):
        budgets = standing(policy.budgets, records, now, default_project=policy.default_project) \
            if policy.budgets else ()
        digest = build_digest(records, store.list(states=("pending",), limit=100), now, currency=policy.currency,
                              budgets=tuple(budgets), idle_requests=idle_requests, describe=describe)
        client.chat_postMessage(channel=policy.digest_channel or channel, text=render_digest(digest))
        store.audit(None, "system", "digest", "ok", now=now, detail=digest_key)
        posted["digest"].append(digest_key)
    return posted
