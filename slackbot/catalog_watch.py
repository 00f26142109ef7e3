"""The jobs leader's word on stale prices: a price source the team refreshes (`sources.freshness`) whose rows are
older than the team's `max_age` is posted to the approval channel once per observation date, however many rounds
see it. The claim is a `notices` row `catalog-stale:<source>:<date>` (`Store.post_once`): a lease while the post is
written, made final once it is, so a leader that dies mid-post leaves it to the next one, and a replica or the next
round finds it taken. A refresh that brings a newer date makes the next stale spell a new notice."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from gpu_assist.catalog import default_catalog_dir
from gpu_assist.render.freshness import stale_line
from gpu_assist.sources.freshness import load_schedule, read_ledger, stale

if TYPE_CHECKING:
    from slack_sdk import WebClient

    from gpu_assist.commands import Context

KIND = "catalog-stale"
POSTING = dt.timedelta(minutes=2)  # how long a claim waits for its post before another round may post it


def stale_round(context: Context, client: WebClient, channel: str) -> list[str]:
    """Post each stale source not yet announced for its observation date; the sources posted."""
    schedule, store, now = load_schedule(), context.approvals.store, context.now()
    posted = []
    for state in stale(schedule, read_ledger(default_catalog_dir()), now):
        key = f"{KIND}:{state.source}:{state.observed}"
        if not store.post_once(key, KIND, now=now, detail=state.source, until=now + POSTING):
            continue
        client.chat_postMessage(channel=channel, text=stale_line(state, schedule.max_age_s, now))
        store.keep(key)
        posted.append(state.source)
    return posted
