"""`/gpu …` and the approval buttons, on slack-bolt.

Every handler acks at once. `/gpu` work (quotes over all regions, recommendations, launches) runs on a
bounded pool (`workers.WorkPool`) and answers through the command's `response_url`; a full pool answers
"busy" at ack time, and a Slack retry of a command already taken is acked without running it again. Only
commands that take longer than about a second (recommend, launch, stop, util) ack with "Working on…";
a quote acks empty and its answer follows in milliseconds. Bad input is answered at ack time,
ephemerally, with what was wrong and an example. Buttons run in Bolt's lazy listeners. Identity is the
Slack user id in the signed request, as `slack:<id>` (never the display name); the approval rules
themselves live in `gpu_assist.approvals`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import cast

from slack_bolt import App
from slack_sdk import WebClient

from gpu_assist.commands import (HELP, Context, ExtendCommand, HelpCommand, LaunchCommand, QuoteCommand,
                                 RecommendCommand, RequestsCommand, SpendCommand, StopCommand, TcoCommand,
                                 UtilCommand, parse_command, run)
from gpu_assist.compare import Comparison
from gpu_assist.errors import GpuAssistError
from gpu_assist.identity import SLACK, actor, slack_mention
from gpu_assist.records import RequestRecord
from gpu_assist.render import blocks
from gpu_assist.specs import ExtendSpec, launch_button_choice

from .response_url import EncodedAnswers, ResponsePoster
from .spend_watch import thread_of
from .workers import Deliveries, WorkPool, claim_delivery

log = logging.getLogger("gpu_assist.slack")
LAZY_WORKERS = int(os.environ.get("GPU_ASSIST_SLACK_WORKERS", "8"))
QUEUED_COMMANDS = int(os.environ.get("GPU_ASSIST_SLACK_QUEUE", "64"))
# Pure answers computed at once per process (workers.py): two, so a slow plan does not hold up a quote.
COMPUTING = int(os.environ.get("GPU_ASSIST_SLACK_COMPUTING", "2"))
BUSY = "gpu-assist is busy, try again in a moment."
FAILED = "Something went wrong on our side; the request was not carried out. Try again."
# Answered in milliseconds: no "Working on…" message before the answer.
_QUICK = (QuoteCommand, TcoCommand, RequestsCommand)
_CARRYING_OUT = {"launch": "launching", "stop": "stopping", "extend": "extending"}  # the card while it happens
# Commands that change nothing: a Slack retry of one is refused per process only (see workers.py); any other
# command (launch, stop, whatever posts a card) is claimed in the database and runs once across replicas.
_READS = (QuoteCommand, RecommendCommand, TcoCommand, UtilCommand, RequestsCommand, SpendCommand)
# Pure answers the context remembers: their encoded message is kept too.
_PURE = (QuoteCommand, RecommendCommand, TcoCommand)


@dataclass(frozen=True)
class SlackSettings:
    bot_token: str
    signing_secret: str
    api_url: str = "https://slack.com/api/"
    approval_channel: str | None = None
    app_token: str | None = None

    def __repr__(self) -> str:  # secrets never reach a log line
        return f"SlackSettings(api_url={self.api_url!r}, approval_channel={self.approval_channel!r})"

    @classmethod
    def from_env(cls, environ=os.environ) -> "SlackSettings":
        missing = [name for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET") if not environ.get(name)]
        if missing:
            raise GpuAssistError(f"missing {', '.join(missing)}",
                                 hint="create the app from slackbot/manifest.yml and export its credentials")
        api_url = environ.get("GPU_ASSIST_SLACK_API_URL") or "https://slack.com/api/"
        return cls(bot_token=environ["SLACK_BOT_TOKEN"], signing_secret=environ["SLACK_SIGNING_SECRET"],
                   api_url=api_url if api_url.endswith("/") else api_url + "/",
                   approval_channel=environ.get("GPU_ASSIST_APPROVAL_CHANNEL") or None,
                   app_token=environ.get("SLACK_APP_TOKEN") or None)


def work_pool() -> WorkPool:
    """The pool `/gpu` work runs on: `GPU_ASSIST_SLACK_WORKERS` threads, `GPU_ASSIST_SLACK_QUEUE` waiting places,
    `GPU_ASSIST_SLACK_COMPUTING` of the threads computing at once."""
    return WorkPool(LAZY_WORKERS, QUEUED_COMMANDS, computing=COMPUTING)


def create_app(settings: SlackSettings, context: Context | None = None, pool: WorkPool | None = None) -> App:
    """The Bolt app; `context` carries the catalog, store, policy and AWS (tests pass their own); `pool` is
    where `/gpu` work runs (the server passes the one it sheds load by).

    Acks run in the request's own thread (`process_before_response=True`): with Bolt's default they are queued
    on the same executor as the slow work after the ack, and under load an ack can miss Slack's 3 seconds.
    `/gpu` work runs on a `WorkPool` of its own; the buttons' work (lazy listeners) on Bolt's executor.
    """
    context = context or Context()
    gpus = context.catalog.gpus  # load the catalog now, not on the first command
    client = WebClient(token=settings.bot_token, base_url=settings.api_url)
    workers = ThreadPoolExecutor(max_workers=LAZY_WORKERS, thread_name_prefix="gpu-assist-lazy")
    pool = pool or work_pool()
    deliveries = Deliveries()
    poster, encoded = ResponsePoster(connections=LAZY_WORKERS), EncodedAnswers()
    app = App(signing_secret=settings.signing_secret, client=client, process_before_response=True, logger=log,
              listener_executor=workers)

    def post_card(record, channel: str) -> None:
        text = f"{record.kind} request {record.id} from {slack_mention(record.requester)} needs an approver"
        card = blocks.approval_card(record, budgets=context.approvals.budget_standing(record))
        posted = client.chat_postMessage(channel=settings.approval_channel or channel, text=text, blocks=card)
        context.approvals.store.set_card(record.id, posted["channel"], posted["ts"])  # its thread, for what follows

    # ---- /gpu ---------------------------------------------------------------------------------------------
    def ack_command(ack, command, request, respond):
        """Parse, answer what is wrong at once, else reserve a place in the pool, ack, and start the work."""
        text = command.get("text", "").strip()
        try:
            parsed = parse_command(text, gpus)
        except GpuAssistError as error:
            ack(response_type="ephemeral", text=str(error), blocks=blocks.error_blocks(str(error)))
            return
        if isinstance(parsed, HelpCommand):
            ack(response_type="ephemeral", text=HELP, blocks=blocks.text_blocks(parsed))
            return
        retry = (request.headers.get("x-slack-retry-num") or [None])[0]
        key = command.get("response_url") or command.get("trigger_id")
        try:
            first = deliveries.first(key, retry) if isinstance(parsed, _READS) else \
                claim_delivery(context.approvals.store, key, context.now())
        except Exception:  # noqa: BLE001 - the database is away: nothing can be requested, say so
            log.exception("could not claim /gpu %s", text.split(" ")[0])
            ack(response_type="ephemeral", text=FAILED)
            return
        if not first:
            ack()  # a retry of a command already taken: Slack stops retrying, nothing runs twice
            return
        place = pool.reserve()
        if place is None:
            ack(response_type="ephemeral", text=BUSY)
            return
        quick = isinstance(parsed, _QUICK)
        if quick:
            ack()
        else:
            ack(response_type="ephemeral", text=f"Working on `/gpu {text}`…")
        reply = poster.responder(command["response_url"]) if command.get("response_url") else respond
        place.start(lambda: do_command(parsed, text, command, reply, replace=not quick))

    def do_command(parsed, text, command, respond, *, replace: bool):
        user = actor(SLACK, command["user_id"])
        pure = isinstance(parsed, _PURE) and bool(command.get("response_url"))
        try:
            if isinstance(parsed, UtilCommand) and not parsed.fleet:
                parsed = UtilCommand(fleet=True)  # Slack's /gpu util is about the team's fleet, not the bot's host
            with pool.computing() if pure else contextlib.nullcontext():
                result = run(parsed, context, actor=user)
                # A question asked again gets the same answer object, and its message as already rendered.
                body = encoded.message(result, text, replace,
                                       lambda: blocks.message(result, command=parsed)) if pure else None
        except GpuAssistError as error:
            respond(response_type="ephemeral", replace_original=replace, text=str(error),
                    blocks=blocks.error_blocks(str(error)))
            return
        except Exception:  # noqa: BLE001 - the user gets a line, the log gets the traceback
            log.exception("command failed: /gpu %s", text.split(" ")[0])
            respond(response_type="ephemeral", replace_original=replace, text=FAILED)
            return
        if isinstance(parsed, (LaunchCommand, StopCommand, ExtendCommand)):
            post_card(result, command["channel_id"])
            record = cast(RequestRecord, result)  # a launch or stop command's result is the request it recorded
            where = f"<#{settings.approval_channel}>" if settings.approval_channel else "this channel"
            respond(response_type="ephemeral", replace_original=replace,
                    text=f"Request `{record.id}` is waiting for an approver in {where}.")
            return
        if body is not None:
            poster.post(command["response_url"], body)
            return
        fallback, rendered = blocks.message(result, command=parsed)
        respond(response_type="ephemeral", replace_original=replace, text=fallback, blocks=rendered)

    app.command("/gpu")(ack_command)

    # ---- buttons ------------------------------------------------------------------------------------------
    def just_ack(ack):
        ack()

    def decide(body, action, approve: bool):
        user = body["user"]["id"]
        decider = actor(SLACK, user)  # the signed user id; the display name (body["user"]["username"]) is not used
        channel = body["container"]["channel_id"]
        ts = body["container"]["message_ts"]
        request_id = action["value"]
        approvals = context.approvals

        def show(record, line):
            client.chat_update(channel=channel, ts=ts, text=f"{record.id}: {line}",
                               blocks=blocks.approval_card(record, decided=line,
                                                           budgets=context.approvals.budget_standing(record)))

        try:
            if approve:
                record = approvals.approve(request_id, decider, on_approved=lambda r: show(
                    r, f"Approved by <@{user}> — {_CARRYING_OUT[r.kind]}…"))
            else:
                record = approvals.reject(request_id, decider)
        except GpuAssistError as error:
            client.chat_postEphemeral(channel=channel, user=user, text=f"Not done: {error}")
            return
        verb = "Approved" if approve else "Rejected"
        line = f"{verb} by <@{user}>" + (f" — {blocks.outcome_line(record)}" if approve else "")
        show(record, line)
        where = {"channel": channel, "thread_ts": ts}
        if isinstance(record.spec, ExtendSpec):  # its outcome belongs with the launch it extends
            where = thread_of(approvals.store.get(record.spec.launch_request), settings.approval_channel or channel)
        client.chat_postMessage(**where, text=f"{slack_mention(record.requester)} {record.id}: {line}")

    def on_approve(body, action):
        decide(body, action, approve=True)

    def on_reject(body, action):
        decide(body, action, approve=False)

    app.action(blocks.APPROVE)(ack=just_ack, lazy=[on_approve])
    app.action(blocks.REJECT)(ack=just_ack, lazy=[on_reject])

    def request_from_button(body, action, respond):
        user = body["user"]["id"]
        channel = body.get("channel", {}).get("id") or body["container"].get("channel_id")
        try:
            if action["action_id"].startswith(blocks.REQUEST_LAUNCH):
                option, duration_s = launch_button_choice(action["value"])
                record = context.approvals.submit_launch(actor(SLACK, user), LaunchCommand(option, duration_s))
            else:
                record = context.approvals.submit_stop(actor(SLACK, user), [action["value"]])
        except GpuAssistError as error:
            respond(response_type="ephemeral", replace_original=False, text=f"Not requested: {error}")
            return
        post_card(record, channel)
        respond(response_type="ephemeral", replace_original=False,
                text=f"Request `{record.id}` is waiting for an approver.")

    def more_rows(body, action, respond):
        """The "More" button of a quote card: the command it carries, from the row after the last one shown."""
        try:
            command, start = blocks.read_more(action["value"])
        except (ValueError, KeyError, TypeError):
            respond(response_type="ephemeral", replace_original=False, text="That button is out of date.")
            return
        try:
            result = run(command, context, actor=actor(SLACK, body["user"]["id"]))
        except GpuAssistError as error:
            respond(response_type="ephemeral", replace_original=False, text=str(error))
            return
        if not isinstance(result, Comparison):
            respond(response_type="ephemeral", replace_original=False, text="That button is out of date.")
            return
        respond(response_type="ephemeral", replace_original=False,
                text=f"More offers for {result.request.describe()}",
                blocks=blocks.comparison_blocks(result, command=command, start=start))

    app.action(blocks.QUOTE_MORE)(ack=just_ack, lazy=[more_rows])

    from . import spend_watch

    spend_watch.register(app, context, client, post_card)

    app.action(re.compile(rf"^({blocks.REQUEST_LAUNCH}|{blocks.REQUEST_STOP})_\d+$"))(
        ack=just_ack, lazy=[request_from_button])
    return app

