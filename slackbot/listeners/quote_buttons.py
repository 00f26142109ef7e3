"""The buttons of an answer card: Request launch on a quote's row, Request stop on the fleet's idle instance, More.

Request launch and Request stop make a request through the approval path, each click once however often it is
run (the click's inbox key names the submit, `Approvals._submit`): its card goes to the approvers and the clicker
hears where it stands. A Request launch button carries the quote row's option and duration
(`blocks.launch_button_choice`), More the quote's own command and the first row to show (`blocks.read_more`), never
words to parse again.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpu_assist.commands import LaunchCommand
from gpu_assist.commands.execute import run
from gpu_assist.errors import GpuAssistError
from gpu_assist.lifecycle.identity import SLACK, actor
from gpu_assist.pricing.compare import Comparison
from slackbot import blocks

from ..inbox import click_key
from .deps import channel_of

if TYPE_CHECKING:
    from slack_bolt import App

    from ..inbox import Payload, Respond
    from .deps import Deps

_REQUEST_BUTTON = re.compile(rf"^({blocks.REQUEST_LAUNCH}|{blocks.REQUEST_STOP})_\d+$")


class CardButtons:
    """Request launch, Request stop and More, for one app."""

    def __init__(self, deps: Deps):
        self.deps = deps

    def request(self, body: Payload, action: Payload, respond: Respond) -> None:
        """A launch of the row's option for the quote's duration, or a stop of the idle instance."""
        requester, approvals = actor(SLACK, body["user"]["id"]), self.deps.context.approvals
        try:
            if action["action_id"].startswith(blocks.REQUEST_LAUNCH):
                option, duration_s = blocks.launch_button_choice(action["value"])
                record = approvals.submit_launch(requester, LaunchCommand(option, duration_s),
                                                 delivery=click_key(body, action))
            else:
                record = approvals.submit_stop(requester, [action["value"]], delivery=click_key(body, action))
        except GpuAssistError as error:
            respond(response_type="ephemeral", replace_original=False, text=blocks.not_requested(error))
            return
        self.deps.post_card(record, channel_of(body))
        respond(response_type="ephemeral", replace_original=False, text=blocks.waiting_line(record))

    def more(self, body: Payload, action: Payload, respond: Respond) -> None:
        """The comparison the button's command asks for, from the row after the last one shown."""
        try:
            command, start = blocks.read_more(action["value"])
        except (ValueError, KeyError, TypeError):
            respond(response_type="ephemeral", replace_original=False, text=blocks.OUT_OF_DATE)
            return
        try:
            result = run(command, self.deps.context, actor=actor(SLACK, body["user"]["id"]))
        except GpuAssistError as error:
            respond(response_type="ephemeral", replace_original=False, text=str(error))
            return
        if not isinstance(result, Comparison):
            respond(response_type="ephemeral", replace_original=False, text=blocks.OUT_OF_DATE)
            return
        text, more = blocks.more_message(result, command, start,
                                         self.deps.context.approvals.policy.allowed_providers)
        respond(response_type="ephemeral", replace_original=False, text=text, blocks=more)


def register(app: App, deps: Deps) -> None:
    buttons = CardButtons(deps)
    deps.inbox.listen(app, blocks.QUOTE_MORE, "more", buttons.more)
    deps.inbox.listen(app, _REQUEST_BUTTON, "request", buttons.request)
