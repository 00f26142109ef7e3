"""What the listeners share: one `Deps` per app, and the helpers every button uses (a click's key, claiming a
click once, the channel it came from). A module of its own, so each listener module imports it and the package
imports the listener modules, not both ways."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from slackbot import blocks

from ..workers import claim_delivery

if TYPE_CHECKING:
    from slack_sdk import WebClient

    from gpu_assist.commands import Context
    from gpu_assist.lifecycle.records import RequestRecord

    from ..inbox import Handler, Inbox, Payload, Respond
    from ..response_url import ResponsePoster
    from ..settings import SlackSettings
    from ..workers import WorkPool

log = logging.getLogger("gpu_assist.slack")


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
        """The request's approval card, in the approval channel (else `channel`)."""
        post_approval_card(self.context, self.client, self.settings.approval_channel or channel, record)


def post_approval_card(context: Context, client: WebClient, channel: str, record: RequestRecord) -> None:
    """`record`'s approval card in `channel`; where it went is stored, so what follows (the decision, idle alerts)
    goes to its thread. Every request's card is posted here, whichever face filed it (SkyPilot's gate too)."""
    approvals = context.approvals
    card = blocks.approval_card(record, budgets=approvals.budget_standing(record), team=approvals.team_standing())
    posted = client.chat_postMessage(channel=channel, text=blocks.card_notification(record), blocks=card)
    approvals.store.set_card(record.id, posted["channel"], posted["ts"])


def click_key(body: Payload, action: Payload) -> str | None:
    """What identifies one click, the same in every delivery of it: Slack's retry repeats the body, while another
    click (even of the same button by the same person) has a new `trigger_id` and `action_ts`. None for a payload
    with neither (Slack always sends both): nothing tells its clicks apart, so none is refused as a repeat."""
    trigger, stamp = body.get("trigger_id") or "", action.get("action_ts") or ""
    if not trigger and not stamp:
        return None
    return "|".join(("click", trigger, body["user"]["id"], action["action_id"], stamp))


def once_per_click(deps: Deps, handle: Handler) -> Handler:
    """`handle(body, action, respond)` for the first delivery of a click among every process and replica on the
    database (`workers.claim_delivery`): for a button that makes a request, so a retried click makes one."""

    def claimed(body: Payload, action: Payload, respond: Respond) -> None:
        try:
            first = claim_delivery(deps.context.approvals.store, click_key(body, action), deps.context.now())
        except Exception:  # noqa: BLE001 - the database is away: nothing can be requested, say so
            log.exception("could not claim the click of %s", action.get("action_id"))
            respond(response_type="ephemeral", replace_original=False, text=blocks.FAILED)
            return
        if not first:
            log.info("%s: a click already taken, not run again", action["action_id"])
            return
        handle(body, action, respond)

    return claimed


def channel_of(body: Payload) -> str:
    """The channel a button was clicked in."""
    channel: str = body.get("channel", {}).get("id") or body["container"].get("channel_id")
    return channel
