"""Serving the Bolt app: one process (waitress), several (gunicorn, `--workers N`), Socket Mode, or AWS Lambda.

`GET /healthz` answers 200 with the catalog size, `GET /readyz` once the catalog is loaded; both come from
a process that built its app (and loaded the catalog) before it opened or accepted on its socket. `GET /metrics`
is the Prometheus exposition of `gpu_assist.metrics`.
Before serving, the store's schema is upgraded (Alembic, idempotent) and the shared objects are built.
`POST /skypilot/policy` is SkyPilot's gate (`gpu_assist.skypilot`), whose pending requests get their approval card
in the approval channel like every launch request.
`POST /slack/events` is checked (method, content type, size, Slack's signature), then handed to Bolt, except a `/gpu`
command that finds the work pool full: it is answered "busy" here, before Bolt parses it again, so an
overloaded process spends next to nothing on the commands it refuses (`/healthz` counts them).
Periodic jobs (expire, reap, reconcile) run in a background thread of every process; a lease in the database
makes one of them the leader (`jobs.py`).
"""

from __future__ import annotations

import io
import json
import logging
import re
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable
from urllib.parse import parse_qs

import waitress
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_sdk import WebClient
from slack_sdk.signature import SignatureVerifier

from gpu_assist.commands import Context
from gpu_assist.errors import GpuAssistError
from gpu_assist.lifecycle.records import RequestRecord
from gpu_assist.metrics import GpuAssistCollector, registry, wsgi_metrics
from gpu_assist.skypilot.gate import Gate, default_ttl_s
from gpu_assist.skypilot.lines import IN_LAB, IN_SLACK_AND_LAB
from gpu_assist.skypilot.server import POLICY_PATH, policy_app
from slackbot.blocks import BUSY

from . import prefork
from .app import create_app, new_inbox, work_pool
from .inbox import Inbox
from .catalog_watch import stale_round
from .interruptions import interruption_round
from .jobs import start_jobs
from .listeners.deps import post_approval_card
from .outcomes import announce_pending
from .settings import SlackSettings
from .spend_watch import watch_round

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

Headers = tuple[tuple[str, str], ...]

log = logging.getLogger("gpu_assist.slack")
MAX_BODY_BYTES = 1 << 20  # Slack's payloads are a few KiB
# waitress's own limit, above ours: bodies up to it get our JSON 413; larger ones waitress's plain 413 before the app.
SERVER_BODY_LIMIT_BYTES = 16 << 20
SLACK_PATH = "/slack/events"
SLACK_CONTENT_TYPES = ("application/x-www-form-urlencoded", "application/json")
MAX_SKEW_S = 5 * 60
_TIMESTAMP = re.compile(r"[0-9]{1,10}")  # whole seconds since the epoch, until the year 2286
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


class Refusal(Exception):
    """A request refused before Bolt sees it: an HTTP status and a one-line reason, sent as JSON."""

    def __init__(self, status: str, error: str, headers: Headers = ()):
        super().__init__(error)
        self.status, self.error, self.headers = status, error, headers


def _reply(start_response: StartResponse, status: str, payload: dict[str, Any], headers: Headers = ()) \
        -> list[bytes]:
    body = json.dumps(payload).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers])
    return [body]


def _form(body: bytes) -> dict[str, list[str]] | None:
    """The form of a body Bolt can parse (UTF-8, and a `payload` field, when present, holding a JSON object),
    or None."""
    try:
        form = parse_qs(body.decode("utf-8"), errors="strict")
        return form if "payload" not in form or isinstance(json.loads(form["payload"][0]), dict) else None
    except (UnicodeDecodeError, ValueError):
        return None


def _slack_header(environ: WSGIEnvironment, name: str) -> str:
    """One Slack header, present once and non-empty (a WSGI server joins repeated headers with a comma)."""
    value: str = environ.get("HTTP_" + name.upper().replace("-", "_"), "").strip()
    if not value:
        raise Refusal("401 Unauthorized", f"missing {name} header")
    if "," in value:
        raise Refusal("400 Bad Request", f"{name} header given more than once")
    return value


def read_slack_body(environ: WSGIEnvironment, max_bytes: int = MAX_BODY_BYTES) -> bytes:
    """The body of a POST to the events path, refused on method, content type or size before it is read."""
    if environ.get("REQUEST_METHOD") != "POST":
        raise Refusal("405 Method Not Allowed", f"{environ.get('REQUEST_METHOD')} is not allowed here; Slack POSTs",
                      (("Allow", "POST"),))
    content_type = environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    if content_type not in SLACK_CONTENT_TYPES:
        raise Refusal("415 Unsupported Media Type",
                      f"content type {content_type or '(none)'} is not one Slack sends "
                      f"({', '.join(SLACK_CONTENT_TYPES)})")
    declared = environ.get("CONTENT_LENGTH") or "0"
    if not declared.isdigit():
        raise Refusal("400 Bad Request", "Content-Length is not a number")
    if int(declared) > max_bytes:
        raise Refusal("413 Content Too Large", f"body over {max_bytes} bytes")
    body = environ["wsgi.input"].read(int(declared)) if int(declared) else b""
    if len(body) > max_bytes:
        raise Refusal("413 Content Too Large", f"body over {max_bytes} bytes")
    return body


def verify_slack_signature(verifier: SignatureVerifier, environ: WSGIEnvironment, body: bytes, now: float) -> None:
    """Slack's v0 signature over `v0:timestamp:body`, with the timestamp within five minutes of `now`.

    Every header is checked for shape first, so no malformed value reaches the verifier (which raises on a
    non-numeric timestamp) and each refusal says what was wrong."""
    stamp = _slack_header(environ, "X-Slack-Request-Timestamp")
    signature = _slack_header(environ, "X-Slack-Signature")
    if not _TIMESTAMP.fullmatch(stamp):
        raise Refusal("401 Unauthorized", "X-Slack-Request-Timestamp must be whole seconds since the epoch")
    if abs(now - int(stamp)) > MAX_SKEW_S:
        raise Refusal("401 Unauthorized", "request timestamp is more than 5 minutes from now")
    if not _SIGNATURE.fullmatch(signature):
        raise Refusal("401 Unauthorized", "X-Slack-Signature must be v0= and 64 hex digits")
    if not verifier.is_valid(body, stamp, signature):
        raise Refusal("401 Unauthorized", "invalid request signature")


def wsgi_application(settings: SlackSettings, context: Context, inbox: Inbox | None = None) -> WSGIApplication:
    """Health checks, then Slack's events. Method, type, size and signature are checked here before anything
    parses the body: a forged request is 401, a wrong method 405, a large body 413, another content type 415,
    a signed but malformed one 400 — each a one-line JSON error, never a server error."""
    pool = work_pool()
    bolt = SlackRequestHandler(create_app(settings, context, pool, inbox), path=SLACK_PATH)
    verifier = SignatureVerifier(settings.signing_secret)
    metrics = team_metrics_app(context)
    skypilot = skypilot_gate_app(settings, context)

    def application(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO"), environ.get("REQUEST_METHOD")
        if path in ("/healthz", "/readyz"):
            if method not in ("GET", "HEAD"):
                return _reply(start_response, "405 Method Not Allowed", {"error": f"{method} is not allowed here"},
                              (("Allow", "GET, HEAD"),))
            if path == "/healthz":
                return _reply(start_response, "200 OK", {"ok": True, "offers": len(context.catalog.rows),
                                                         "work": pool.taken, "busy": pool.refused})
            ready = context._catalog is not None
            return _reply(start_response, "200 OK" if ready else "503 Service Unavailable", {"ready": ready})
        if path == "/metrics":
            return metrics(environ, start_response)
        if path == POLICY_PATH:
            return skypilot(environ, start_response)
        if path != SLACK_PATH:
            return _reply(start_response, "404 Not Found", {"error": f"no such path; Slack posts to {SLACK_PATH}"})
        try:
            body = read_slack_body(environ)
            verify_slack_signature(verifier, environ, body, time.time())
        except Refusal as refusal:
            return _reply(start_response, refusal.status, {"error": refusal.error}, refusal.headers)
        form = _form(body)
        if form is None:
            return _reply(start_response, "400 Bad Request", {"error": "malformed request body"})
        # A retry goes on to Bolt: the one it repeats may already be running, and then it is acked, not refused.
        if "command" in form and not environ.get("HTTP_X_SLACK_RETRY_NUM") and pool.shed():
            return _reply(start_response, "200 OK", {"response_type": "ephemeral", "text": BUSY})
        environ["wsgi.input"] = io.BytesIO(body)
        return bolt(environ, start_response)

    return application


def skypilot_gate_app(settings: SlackSettings, context: Context) -> WSGIApplication:
    """`POST /skypilot/policy`: SkyPilot's gate over this server's store, built on its first call; each request it
    files and leaves pending gets its card in the approval channel (without one, it waits in JupyterLab's Requests
    tab and `gpu-assist requests`)."""
    client = WebClient(token=settings.bot_token, base_url=settings.api_url)
    channel = settings.approval_channel
    ttl_s = default_ttl_s()
    built: list[Gate] = []
    building = threading.Lock()

    def post(record: RequestRecord) -> None:
        if not channel:
            return
        try:
            post_approval_card(context, client, channel, record)
        except Exception:  # noqa: BLE001 - Slack away: the request still waits in JupyterLab's Requests tab
            log.exception("could not post the card of %s", record.id)

    def gate() -> Gate:
        with building:  # one gate, so one lock keeps one launch's calls to one request
            if not built:
                built.append(Gate(context.approvals, on_filed=post, ttl_s=ttl_s))
            return built[0]

    return policy_app(gate, IN_SLACK_AND_LAB if channel else IN_LAB)


def team_metrics_app(context: Context) -> WSGIApplication:
    """`GET /metrics`: the Prometheus exposition `gpu-assist metrics serve` gives, the team's series from this
    server's store and the GPUs of the machine it runs on (one sample per scrape; none on a machine without)."""
    collector = GpuAssistCollector(lambda: [context.sampler.sample()], lambda: context.approvals.team_standing())
    return wsgi_metrics(registry(collector))


def prepared_context() -> Context:
    """The process's context with its catalog loaded and the store's schema upgraded, before anything serves:
    the jobs thread and the first requests then share objects that already exist."""
    return Context().prepare()


def _log_to_stderr() -> None:
    """gpu-assist's own lines (job rounds, failures) on stderr; libraries stay at their default level."""
    logger = logging.getLogger("gpu_assist")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False  # a library's root handler would print each line twice


def build_application(*, jobs: bool) -> WSGIApplication:
    """One process's app: settings, context (the catalog loaded now), the WSGI app, and its jobs thread."""
    _log_to_stderr()
    settings = SlackSettings.from_env()
    context = prepared_context()
    inbox = new_inbox(context)
    application = wsgi_application(settings, context, inbox)
    if jobs:
        start_jobs(context, on_round=leader_round(settings, context, inbox))
    return application


def leader_round(settings: SlackSettings, context: Context, inbox: Inbox) -> Callable[[], None]:
    """The jobs leader's Slack round: the clicks a dead replica acknowledged but never ran (`inbox.recover`), the
    outcomes nobody announced yet (the reconciler finished them, or their decider died first:
    `outcomes.announce_pending`), then the money side and stale prices (`catalog_watch`) when there is an approval
    channel to post them to."""
    client = WebClient(token=settings.bot_token, base_url=settings.api_url)

    def round_() -> None:
        taken, announced = inbox.recover(), announce_pending(context.approvals, client, settings.approval_channel)
        if taken or announced:
            log.info("ran %d click(s) a replica left; announced %d outcome(s)", taken, len(announced))
        if settings.approval_channel:
            interruption_round(context, client, settings.approval_channel)
            watch_round(context, client, settings.approval_channel)
            stale_round(context, client, settings.approval_channel)

    return round_


def serve(host: str = "0.0.0.0", port: int = 3000, *, threads: int = 16, jobs: bool = True, workers: int = 1) -> None:
    """One process on waitress, or `workers` processes under gunicorn's pre-fork master (see prefork.py)."""
    if workers > 1:
        SlackSettings.from_env()  # missing credentials: one clear error from the master, not N worker crashes
        prefork.serve(lambda: build_application(jobs=jobs), host, port, workers=workers, threads=threads,
                      max_body_bytes=SERVER_BODY_LIMIT_BYTES)
        return
    application = build_application(jobs=jobs)
    log.info("gpu-assist Slack app on http://%s:%d/slack/events", host, port)
    waitress.serve(application, host=host, port=port, threads=threads, ident="gpu-assist",
                   clear_untrusted_proxy_headers=True, max_request_body_size=SERVER_BODY_LIMIT_BYTES)


def socket_mode() -> None:
    settings = SlackSettings.from_env()
    if not settings.app_token:
        raise GpuAssistError("Socket Mode needs SLACK_APP_TOKEN (an xapp- token with connections:write)")
    context = prepared_context()
    inbox = new_inbox(context)
    start_jobs(context, on_round=leader_round(settings, context, inbox))
    handler = SocketModeHandler(create_app(settings, context, inbox=inbox), settings.app_token)
    handler.start()  # type: ignore[no-untyped-call, unused-ignore]  # Bolt leaves it unannotated; it blocks
