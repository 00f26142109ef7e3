"""The Slack app on slack-bolt: its settings, and `create_app`, which registers the listeners (`listeners/`).

Every listener acks at once. `/gpu` work (quotes over all regions, recommendations, launches) runs on a
bounded pool (`workers.WorkPool`) and answers through the command's `response_url`; a button's click is recorded
in the store before its ack and run from there on a bounded pool of its own (`inbox.Inbox`), so no acknowledged
click dies with its process. Identity is the Slack user id in the signed request, as `slack:<id>` (never the
display name); the approval rules themselves live in `gpu_assist.lifecycle.approvals`, the words and cards in
`slackbot.blocks`.
"""

from __future__ import annotations

import logging
import os

from slack_bolt import App
from slack_bolt.error import BoltError
from slack_sdk import WebClient

from gpu_assist.commands import Context
from gpu_assist.errors import GpuAssistError

from . import listeners
from .inbox import Inbox
from .listeners.deps import Deps
from .response_url import ResponsePoster
from .settings import SlackSettings
from .workers import WorkPool

log = logging.getLogger("gpu_assist.slack")
# Bolt reads SLACK_BOT_TOKEN itself and warns that the client's token wins; it is the same token, so the warning
# would only puzzle whoever reads the log at every start.
log.addFilter(lambda record: record.getMessage() != "As you gave `client` as well, `token` will be unused.")


def _env_count(name: str, default: int, least: int = 1) -> int:
    """A whole number from the environment, at least `least`, or one clear error naming the variable."""
    value = os.environ.get(name, str(default)).strip()
    if not value.isdigit() or int(value) < least:
        raise GpuAssistError(f"{name}={value!r} is not a whole number of at least {least}",
                             example=f"{name}={default}")
    return int(value)


LAZY_WORKERS = _env_count("GPU_ASSIST_SLACK_WORKERS", 8)
QUEUED_COMMANDS = _env_count("GPU_ASSIST_SLACK_QUEUE", 64, least=0)  # 0: no command waits; busy past the threads
# Clicks waiting to run (each recorded in the store already): an approval storm queues here; "busy" past it.
QUEUED_CLICKS = _env_count("GPU_ASSIST_SLACK_CLICK_QUEUE", 256, least=0)
# Pure answers computed at once per process (workers.py): two, so a slow plan does not hold up a quote.
COMPUTING = _env_count("GPU_ASSIST_SLACK_COMPUTING", 2)


def work_pool() -> WorkPool:
    """The pool `/gpu` work runs on: `GPU_ASSIST_SLACK_WORKERS` threads, `GPU_ASSIST_SLACK_QUEUE` waiting places,
    `GPU_ASSIST_SLACK_COMPUTING` of the threads computing at once."""
    return WorkPool(LAZY_WORKERS, QUEUED_COMMANDS, computing=COMPUTING)


def click_pool() -> WorkPool:
    """The pool clicks run on: `GPU_ASSIST_SLACK_WORKERS` threads, `GPU_ASSIST_SLACK_CLICK_QUEUE` waiting places."""
    return WorkPool(LAZY_WORKERS, QUEUED_CLICKS, name="gpu-assist-click", computing=COMPUTING)


def new_inbox(context: Context, *, inline: bool = False) -> Inbox:
    """A process's click inbox: clicks recorded in `context`'s store, run on a `click_pool()` (`inline`: in the
    request, before the ack, where no thread outlives it)."""
    return Inbox(context, click_pool(), ResponsePoster(connections=LAZY_WORKERS), inline=inline)


def create_app(settings: SlackSettings, context: Context | None = None, pool: WorkPool | None = None,
               inbox: Inbox | None = None) -> App:
    """The Bolt app; `context` carries the catalog, store, policy and AWS (tests pass their own); `pool` is
    where `/gpu` work runs (the server passes the one it sheds load by), `inbox` where the buttons' clicks are
    recorded and run (the server passes the one its jobs leader recovers clicks with).

    Acks run in the request's own thread (`process_before_response=True`): with Bolt's default they are queued
    on the same executor as the slow work after the ack, and under load an ack can miss Slack's 3 seconds.
    `/gpu` work runs on a `WorkPool` of its own, clicks on another, from the store (`inbox.Inbox`).
    """
    context = context or Context()
    context.catalog  # noqa: B018 - loaded now, not on the first command
    client = WebClient(token=settings.bot_token, base_url=settings.api_url)
    try:  # Bolt checks the token with auth.test before it serves anything
        app = App(signing_secret=settings.signing_secret, client=client, process_before_response=True, logger=log)
    except BoltError as error:
        raise GpuAssistError(f"Slack refused the bot token: {error}",
                             hint="export the app's Bot User OAuth Token (xoxb-…) as SLACK_BOT_TOKEN") from None
    except OSError as error:  # URLError, timeouts, refused connections
        raise GpuAssistError(f"could not reach Slack's Web API at {settings.api_url} to check the bot token "
                             f"({getattr(error, 'reason', error)})",
                             hint="check the network, or GPU_ASSIST_SLACK_API_URL") from None
    inbox = inbox or new_inbox(context)
    listeners.register(app, Deps(settings, context, client, pool or work_pool(), inbox.poster, inbox))
    return app
