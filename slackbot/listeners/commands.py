"""`/gpu …`: parsed once at the ack, carried out on the work pool, answered through the command's `response_url`.

Bad input and help are answered at ack time, ephemerally. Otherwise the command is claimed as delivered (a command
that only reads, per process; one that changes something, in the database, once across replicas: see
`workers.py`), a place is reserved in the pool ("busy" when there is none), and only then acked: empty for a
quick answer, "Working on…" for one that takes longer than about a second, which its answer then replaces.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, cast

from gpu_assist.commands import (
    HELP,
    CommitCommand,
    ExtendCommand,
    HelpCommand,
    LaunchCommand,
    QuoteCommand,
    RecommendCommand,
    RequestsCommand,
    SpendCommand,
    StopCommand,
    TcoCommand,
    UtilCommand,
)
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.errors import GpuAssistError, apart_from
from gpu_assist.lifecycle.identity import SLACK, actor
from gpu_assist.lifecycle.records import RequestRecord
from slackbot import blocks

from ..response_url import EncodedAnswers
from ..workers import Deliveries, claim_delivery

if TYPE_CHECKING:
    from slack_bolt import Ack, App, BoltRequest

    from gpu_assist.commands import Command

    from ..inbox import Payload, Respond
    from .deps import Deps

log = logging.getLogger("gpu_assist.slack")
# Answered in milliseconds: no "Working on…" message before the answer.
_QUICK = (QuoteCommand, TcoCommand, RequestsCommand)
# Commands that change nothing: a Slack retry of one is refused per process only (see workers.py); any other
# command (launch, stop, whatever posts a card) is claimed in the database and runs once across replicas.
_READS = (QuoteCommand, RecommendCommand, TcoCommand, UtilCommand, RequestsCommand, SpendCommand, CommitCommand)
# Pure answers the context remembers: their encoded message is kept too.
_PURE = (QuoteCommand, RecommendCommand, TcoCommand)
# Commands whose answer is a request, with a card for the approvers.
_REQUESTS = (LaunchCommand, StopCommand, ExtendCommand)


class SlashCommand:
    """`/gpu` for one app: the deliveries this process has seen and the answers it has encoded."""

    def __init__(self, deps: Deps):
        self.deps = deps
        self.deliveries = Deliveries()
        self.encoded = EncodedAnswers()

    def acknowledge(self, ack: Ack, command: Payload, request: BoltRequest, respond: Respond) -> None:
        """Parse, answer what is wrong at once, else reserve a place in the pool, ack, and start the work."""
        text = command.get("text", "").strip()
        try:
            parsed = parse_command(text, self.deps.context.catalog.gpus)
        except GpuAssistError as error:
            apart_from(error, text)  # its example is never the words that just failed
            ack(response_type="ephemeral", text=str(error), blocks=blocks.error_blocks(str(error)))
            return
        if isinstance(parsed, HelpCommand):
            ack(response_type="ephemeral", text=HELP, blocks=blocks.text_blocks(parsed))
            return
        try:
            first = self._first_delivery(parsed, command, request)
        except Exception:  # noqa: BLE001 - the database is away: nothing can be requested, say so
            log.exception("could not claim /gpu %s", text.split(" ")[0])
            ack(response_type="ephemeral", text=blocks.FAILED)
            return
        if not first:
            ack()  # a retry of a command already taken: Slack stops retrying, nothing runs twice
            return
        place = self.deps.pool.reserve()
        if place is None:
            ack(response_type="ephemeral", text=blocks.BUSY)
            return
        quick = isinstance(parsed, _QUICK)
        if quick:
            ack()
        else:
            ack(response_type="ephemeral", text=blocks.working_line(text))
        reply = self.deps.poster.responder(command["response_url"]) if command.get("response_url") else respond
        place.start(lambda: self.answer(parsed, text, command, reply, replace=not quick))

    def _first_delivery(self, parsed: Command, command: Payload, request: BoltRequest) -> bool:
        """False for a Slack retry of a command already taken (see `_READS`)."""
        key = command.get("response_url") or command.get("trigger_id")
        if isinstance(parsed, _READS):
            return self.deliveries.first(key, next(iter(request.headers.get("x-slack-retry-num") or ()), None))
        return claim_delivery(self.deps.context.approvals.store, key, self.deps.context.now())

    def answer(self, parsed: Command, text: str, command: Payload, respond: Respond, *, replace: bool) -> None:
        """Run the command and answer it: a request's card to the approvers and its requester told where, else the
        result's message (a pure one encoded once and posted over a kept-alive connection)."""
        deps = self.deps
        pure = isinstance(parsed, _PURE) and bool(command.get("response_url"))
        launches = deps.context.approvals.policy.allowed_providers  # the rows whose Request launch can work
        try:
            if isinstance(parsed, UtilCommand) and not parsed.fleet:
                parsed = UtilCommand(fleet=True)  # Slack's /gpu util is about the team's fleet, not the bot's host
            with deps.pool.computing() if pure else contextlib.nullcontext():
                result = run(parsed, deps.context, actor=actor(SLACK, command["user_id"]))
                # A question asked again gets the same answer object, and its message as already rendered.
                body = self.encoded.message(result, text, replace,
                                            lambda: blocks.message(result, command=parsed, launches=launches)
                                            ) if pure else None
        except GpuAssistError as error:
            apart_from(error, text)
            respond(response_type="ephemeral", replace_original=replace, text=str(error),
                    blocks=blocks.error_blocks(str(error)))
            return
        except Exception:  # noqa: BLE001 - the user gets a line, the log gets the traceback
            log.exception("command failed: /gpu %s", text.split(" ")[0])
            respond(response_type="ephemeral", replace_original=replace, text=blocks.FAILED)
            return
        if isinstance(parsed, _REQUESTS):
            record = cast(RequestRecord, result)  # a launch, stop or extend command's result is the request it made
            deps.post_card(record, command["channel_id"])
            respond(response_type="ephemeral", replace_original=replace,
                    text=blocks.waiting_line(record, blocks.channel_mention(deps.settings.approval_channel)))
            return
        if body is not None:
            deps.poster.post(command["response_url"], body)
            return
        fallback, rendered = blocks.message(result, command=parsed, launches=launches)
        respond(response_type="ephemeral", replace_original=replace, text=fallback, blocks=rendered)


def register(app: App, deps: Deps) -> None:
    app.command("/gpu")(SlashCommand(deps).acknowledge)
