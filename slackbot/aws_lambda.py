"""AWS Lambda entry point: `slackbot.aws_lambda.handler`. No thread outlives an invocation, so a button's click is
recorded and then run in the invocation itself, before its ack (`new_inbox(inline=True)`): a click that takes
longer than Slack's 3 seconds gets a retry, which finds it recorded and is acked without running it again.
Periodic jobs belong to an EventBridge rule calling `gpu-assist reap` and `gpu-assist reconcile`, not to this
handler."""

from __future__ import annotations

from slack_bolt.adapter.aws_lambda import SlackRequestHandler

from gpu_assist.commands import Context

from .app import SlackSettings, create_app, new_inbox

_handler = None


def handler(event, context):
    global _handler
    if _handler is None:  # once per cold start: schema upgraded, catalog and Bolt app built, before the event
        context = Context().prepare()
        _handler = SlackRequestHandler(create_app(SlackSettings.from_env(), context,
                                                  inbox=new_inbox(context, inline=True)))
    return _handler.handle(event, context)
