"""AWS Lambda entry point: `slackbot.aws_lambda.handler`. No thread outlives an invocation, so a button's click is
recorded and then run in the invocation itself, before its ack (`new_inbox(inline=True)`): a click that takes
longer than Slack's 3 seconds gets a retry, which finds it recorded and is acked without running it again.
Periodic jobs belong to an EventBridge rule calling `gpu-assist reap` and `gpu-assist reconcile`, not to this
handler."""

from __future__ import annotations

from typing import Any

from slack_bolt.adapter.aws_lambda import SlackRequestHandler

from gpu_assist.commands import Context

from .app import create_app, new_inbox
from .settings import SlackSettings

_handler: SlackRequestHandler | None = None


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The Lambda entry point: one Slack request (`context` is Lambda's, not gpu-assist's)."""
    global _handler
    if _handler is None:  # once per cold start: schema upgraded, catalog and Bolt app built, before the event
        prepared = Context().prepare()
        _handler = SlackRequestHandler(create_app(SlackSettings.from_env(), prepared,
                                                  inbox=new_inbox(prepared, inline=True)))
    # Bolt leaves `handle` unannotated; it answers API Gateway's response object.
    response: dict[str, Any] = _handler.handle(event, context)  # type: ignore[no-untyped-call, unused-ignore]
    return response
