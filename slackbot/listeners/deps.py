"""What the listeners share: one `Deps` per app, and the helpers every button uses (posting a request's card once,
the channel a click came from). A module of its own, so each listener module imports it and the package imports the
listener modules, not both ways."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from slackbot import blocks

if TYPE_CHECKING:
    from slack_sdk import WebClient

    from gpu_assist.commands import Context
    from gpu_assist.lifecycle.records import RequestRecord

    from ..inbox import Inbox, Payload
    from ..response_url import ResponsePoster
    from ..settings import SlackSettings
    from ..workers import WorkPool

CARD = "card"  # the notices kind of a card's claim: `card:<request id>`
POSTING = dt.timedelta(minutes=2)  # how long a card's claim waits for its post before another run may post it


@dataclass(frozen=True)
class Deps:
    """What the listeners share: the settings, the context (catalog, store, policy, AWS), the Web API client,
    the pool `/gpu` work runs on, the poster of its answers, and the inbox the buttons' clicks run from."""

    settings: SlackSettings
    context: Context
    client: WebClient
    pool: WorkPool
    poster: ResponsePoster
    inbox: Inbox

    def post_card(self, record: RequestRecord, channel: str) -> None:
        """The request's approval card, in the approval channel (else `channel`): `post_approval_card`."""
        post_approval_card(self.context, self.client, self.settings.approval_channel or channel, record)


def post_approval_card(context: Context, client: WebClient, channel: str, record: RequestRecord) -> None:
    """`record`'s approval card in `channel`, once per request among every run of the click, command or gate call
    that made it (a leased claim in `notices`, made final once posted); where it went is stored, so what follows
    (the decision, idle alerts) goes to its thread. Every request's card is posted here, whichever face filed it
    (SkyPilot's gate too)."""
    approvals = context.approvals
    store, now, key = approvals.store, approvals.clock(), f"{CARD}:{record.id}"
    if record.card_ts or not store.post_once(key, CARD, now=now, request_id=record.id, until=now + POSTING):
        return
    card = blocks.approval_card(record, budgets=approvals.budget_standing(record), team=approvals.team_standing())
    posted = client.chat_postMessage(channel=channel, text=blocks.card_notification(record), blocks=card)
    store.set_card(record.id, posted["channel"], posted["ts"])
    store.keep(key)


def channel_of(body: Payload) -> str:
    """The channel a button was clicked in."""
    channel: str = body.get("channel", {}).get("id") or body["container"].get("channel_id")
    return channel
