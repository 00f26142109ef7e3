"""The jobs leader's round for spot interruptions: gpu-assist's running AWS spot launches whose instances EC2 took
back are posted once, in the launch's thread, with a Relaunch button; a launch that lost every instance is
recorded as stopped then (`states.INTERRUPTED`), so its spend stops there.

Read-only on AWS: `DescribeInstances` of the launches' own instance ids, per region (the instances a spot
interruption terminated stay visible there for about an hour). Each post is claimed with a lease
(`Store.post_once(until=…)`) and made final after it is sent, so two replicas, or one that dies between the claim
and the post, post it exactly once.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING

from gpu_assist.clouds.fleet import find_instances
from gpu_assist.facts import PricingModel
from gpu_assist.lifecycle import states
from gpu_assist.lifecycle.specs import LaunchSpec, OptionId
from gpu_assist.render.spend import interruption_line
from gpu_assist.team.interruptions import interrupted
from slackbot.blocks import interruption_blocks

from .spend_watch import thread_of

if TYPE_CHECKING:
    from slack_sdk import WebClient

    from gpu_assist.commands import Context

log = logging.getLogger("gpu_assist.slack")
POSTING = dt.timedelta(minutes=2)  # a claim's lease: time enough to post; then another replica may take it
KIND = "interrupted"


def interruption_round(context: Context, client: WebClient, channel: str) -> list[str]:
    """One round: the instance ids whose interruption this call posted."""
    approvals = context.approvals
    store, now = approvals.store, approvals.clock()
    running = [r for r in store.list(states=("running",), limit=1000)
               if isinstance(r.spec, LaunchSpec) and r.spec.provider == "aws" and r.spec.pricing_model == "spot"
               and r.instance_ids]
    by_id = {record.id: record for record in running}
    region_of = {r.id: r.spec.launched_region or r.spec.region for r in running if isinstance(r.spec, LaunchSpec)}
    posted: list[str] = []
    for region in sorted(set(region_of.values())):
        ids = [i for r in running if region_of[r.id] == region for i in r.instance_ids]
        try:
            instances = find_instances(context.aws_client("ec2", region), ids)
        except Exception:  # noqa: BLE001 - AWS away: the next round looks again
            log.exception("could not read gpu-assist's spot instances in %s", region)
            continue
        for event in interrupted(running, instances, now):
            if not store.post_once(event.key, KIND, now=now, request_id=event.request_id, detail=event.reason,
                                   until=now + POSTING):
                continue
            record = by_id[event.request_id]
            detail = f"EC2 {event.reason}: {event.instance_id}"
            if event.all_gone:
                store.transition(event.request_id, states.INTERRUPTED, actor=states.SYSTEM, now=now, detail=detail)
            else:
                store.audit(event.request_id, states.SYSTEM, KIND, "ok", now=now, detail=detail)
            spec = record.spec
            assert isinstance(spec, LaunchSpec)
            option = OptionId(spec.instance_type, spec.launched_region or spec.region, PricingModel(spec.pricing_model))
            client.chat_postMessage(**thread_of(record, channel), text=interruption_line(event),
                                    blocks=interruption_blocks(event, option, spec.duration_s))
            store.keep(event.key)
            posted.append(event.instance_id)
    return posted
