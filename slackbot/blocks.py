"""Slack Block Kit for every command result: compact tables in code blocks, caveats in context blocks,
buttons where the user can act (request a launch from a quote row, a stop from an idle instance,
approve or reject a request, see more rows of a comparison).

`message` picks the card for the result's type (`functools.singledispatch`) with the notification text beside it.
The cards sit by concept: `block_kit` (the parts and the action ids), `quote_cards` (answers to a question) and
`request_cards` (requests, decisions, the app's own lines and the posts with buttons); this module re-exports what
the listeners and the tests use, so they import from `slackbot.blocks`.
"""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from gpu_assist.catalog.providers import LAUNCH_PROVIDERS
from gpu_assist.clouds.fleet import FleetReport
from gpu_assist.commands.objects import QuoteCommand
from gpu_assist.plan.recommendation import Recommendation
from gpu_assist.plural import plural
from gpu_assist.pricing.compare import Comparison
from gpu_assist.pricing.quote import Quote
from slackbot.block_kit import (
    APPROVE,
    IDLE_EXTEND,
    IDLE_KEEP,
    IDLE_STOP,
    QUOTE_MORE,
    REJECT,
    REQUEST_LAUNCH,
    REQUEST_STOP,
    Launches,
    launch_button_choice,
    launch_button_value,
)
from slackbot.quote_cards import (
    CARD_ROWS,
    comparison_blocks,
    fleet_blocks,
    more_message,
    quote_blocks,
    read_more,
    recommendation_blocks,
    text_blocks,
)
from slackbot.request_cards import (
    BUSY,
    FAILED,
    KEPT,
    OUT_OF_DATE,
    approval_card,
    card_notification,
    carrying_out_line,
    channel_mention,
    decided_card,
    decision_line,
    decision_notice,
    error_blocks,
    idle_alert_blocks,
    interruption_blocks,
    not_done,
    not_requested,
    outcome_line,
    submitted_line,
    waiting_line,
    working_line,
)

__all__ = [
    "APPROVE", "BUSY", "CARD_ROWS", "FAILED", "IDLE_EXTEND", "IDLE_KEEP", "IDLE_STOP", "KEPT", "OUT_OF_DATE",
    "QUOTE_MORE", "REJECT", "REQUEST_LAUNCH", "REQUEST_STOP", "approval_card", "card_notification",
    "carrying_out_line", "channel_mention", "comparison_blocks", "decided_card", "decision_line", "decision_notice",
    "error_blocks", "fleet_blocks", "idle_alert_blocks", "interruption_blocks", "launch_button_choice",
    "launch_button_value", "message", "more_message", "not_done", "not_requested", "outcome_line", "quote_blocks",
    "read_more", "recommendation_blocks", "submitted_line", "text_blocks", "waiting_line", "working_line",
]


@singledispatch
def message(result: object, *, command: object = None, launches: Launches = LAUNCH_PROVIDERS
            ) -> tuple[str, list[dict[str, Any]]]:
    """A command's answer as Slack shows it: (notification text, blocks). `command` is the command that asked, so
    that a comparison's "More" button can ask it again. Results without a card of their own are their text."""
    rendered = text_blocks(result)
    return rendered[0]["text"]["text"].strip("`")[:300], rendered


@message.register(Comparison)
def _comparison_message(result: Comparison, *, command: object = None, launches: Launches = LAUNCH_PROVIDERS
                        ) -> tuple[str, list[dict[str, Any]]]:
    asked = command if isinstance(command, QuoteCommand) else None
    return (f"{len(result.rows) + result.more} offers for {result.request.describe()}",
            comparison_blocks(result, command=asked, launches=launches))


@message.register(Quote)
def _quote_message(result: Quote, *, command: object = None, launches: Launches = LAUNCH_PROVIDERS
                   ) -> tuple[str, list[dict[str, Any]]]:
    return (f"{plural(len(result.options), 'option')} for {result.request.describe()}",
            quote_blocks(result, launches=launches))


@message.register(Recommendation)
def _recommendation_message(result: Recommendation, *, command: object = None, **_: object
                            ) -> tuple[str, list[dict[str, Any]]]:
    return f"{plural(len(result.plans), 'plan')} for {result.workload.describe()}", recommendation_blocks(result)


@message.register(FleetReport)
def _fleet_message(result: FleetReport, *, command: object = None, **_: object) -> tuple[str, list[dict[str, Any]]]:
    return f"{plural(len(result.instances), 'GPU instance')}, {len(result.idle)} idle", fleet_blocks(result)
