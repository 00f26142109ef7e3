"""Serving the Bolt app: a production WSGI server (waitress), Socket Mode, or AWS Lambda.

`GET /healthz` answers 200 with the catalog size and the store's reachability; `POST /slack/events`
is Bolt (signature verification on). Periodic jobs (expire, reap, reconcile) run in a background thread
of every replica; on PostgreSQL each takes an advisory lock, so one replica does the work at a time.
"""

from __future__ import annotations

import io
import json
import logging
import threading

from gpu_assist.commands import Context

from .app import SlackSettings, create_app

log = logging.getLogger("gpu_assist.slack")
JOB_INTERVAL_S = 60.0
MAX_BODY_BYTES = 1 << 20


def _reply(start_response, status: str, payload: dict) -> list[bytes]:
    body = json.dumps(payload).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _well_formed(body: bytes) -> bool:
    """A form body Bolt can parse: UTF-8, and a `payload` field, when present, holding a JSON object."""
    from urllib.parse import parse_qs

    try:
        form = parse_qs(body.decode("utf-8"), errors="strict")
        return "payload" not in form or isinstance(json.loads(form["payload"][0]), dict)
    except (UnicodeDecodeError, ValueError):
        return False


def wsgi_application(settings: SlackSettings, context: Context):
    """Health check, then Slack's events. The signature is checked here before anything parses the body, so a
    forged request is 401 and a signed but malformed one is 400 — never a server error."""
    from slack_bolt.adapter.wsgi import SlackRequestHandler
    from slack_sdk.signature import SignatureVerifier

    bolt = SlackRequestHandler(create_app(settings, context))
    verifier = SignatureVerifier(settings.signing_secret)

    def application(environ, start_response):
        if environ.get("PATH_INFO") == "/healthz" and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            return _reply(start_response, "200 OK", {"ok": True, "offers": len(context.catalog.offers)})
        if environ.get("PATH_INFO") == bolt.path and environ.get("REQUEST_METHOD") == "POST":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length) if length else b""
            headers = {"x-slack-signature": environ.get("HTTP_X_SLACK_SIGNATURE", ""),
                       "x-slack-request-timestamp": environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP", "")}
            if not verifier.is_valid_request(body, headers):
                return _reply(start_response, "401 Unauthorized", {"error": "invalid request signature"})
            if not _well_formed(body):
                return _reply(start_response, "400 Bad Request", {"error": "malformed request body"})
            environ["wsgi.input"] = io.BytesIO(body)
        return bolt(environ, start_response)

    return application


def run_jobs_forever(context: Context, stop: threading.Event, interval_s: float = JOB_INTERVAL_S) -> None:
    """Expire, reap and reconcile every `interval_s`, first at start (finishing what a crash left)."""
    while not stop.is_set():
        try:
            approvals = context.approvals
            approvals.expire_due()
            approvals.reap()
            approvals.reconcile()
        except Exception:  # noqa: BLE001 - a failed round is logged and retried, never fatal to the server
            log.exception("periodic jobs failed; retrying in %.0f s", interval_s)
        stop.wait(interval_s)


def start_jobs(context: Context, interval_s: float = JOB_INTERVAL_S) -> threading.Event:
    stop = threading.Event()
    threading.Thread(target=run_jobs_forever, args=(context, stop, interval_s), name="gpu-assist-jobs",
                     daemon=True).start()
    return stop


def serve(host: str = "0.0.0.0", port: int = 3000, *, threads: int = 16, jobs: bool = True) -> None:
    import waitress

    settings = SlackSettings.from_env()
    context = Context()
    application = wsgi_application(settings, context)
    if jobs:
        start_jobs(context)
    log.info("gpu-assist Slack app on http://%s:%d/slack/events", host, port)
    # Slack's payloads are a few KiB: anything over 1 MiB is refused (413) before Bolt reads it.
    waitress.serve(application, host=host, port=port, threads=threads, ident="gpu-assist",
                   clear_untrusted_proxy_headers=True, max_request_body_size=MAX_BODY_BYTES)


def socket_mode() -> None:
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    settings = SlackSettings.from_env()
    if not settings.app_token:
        from gpu_assist.errors import GpuAssistError

        raise GpuAssistError("Socket Mode needs SLACK_APP_TOKEN (an xapp- token with connections:write)")
    context = Context()
    start_jobs(context)
    SocketModeHandler(create_app(settings, context), settings.app_token).start()
