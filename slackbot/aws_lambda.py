"""AWS Lambda entry point: `slackbot.aws_lambda.handler`. Bolt re-invokes the function for lazy listeners
(the function's role needs lambda:InvokeFunction on itself); periodic jobs belong to an EventBridge rule
calling `gpu-assist reap` and `gpu-assist reconcile`, not to this handler."""

from __future__ import annotations

from slack_bolt.adapter.aws_lambda import SlackRequestHandler

from gpu_assist.commands import Context

from .app import SlackSettings, create_app

_handler = None


def handler(event, context):
    global _handler
    if _handler is None:  # once per cold start: schema upgraded, catalog and Bolt app built, before the event
        _handler = SlackRequestHandler(create_app(SlackSettings.from_env(), Context().prepare()))
    return _handler.handle(event, context)
