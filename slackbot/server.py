"""Serving the Bolt app: one process (waitress), several (gunicorn, `--workers N`), Socket Mode, or AWS Lambda.

`GET /healthz` answers 200 with the catalog size, `GET /readyz` once the catalog is loaded; both come from
a process that built its app (and loaded the catalog) before it opened or accepted on its socket.
`POST /slack/events` is Bolt (signature verification on). Periodic jobs (expire, reap, reconcile) run in
a background thread of every process; a lease in the database makes one of them the leader (`jobs.py`).
"""

from __future__ import annotations

import io
import json
import logging
import sys

from gpu_assist.commands import Context

from .app import SlackSettings, create_app
from .jobs import start_jobs

log = logging.getLogger("gpu_assist.slack")
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
        if environ.get("PATH_INFO") == "/readyz" and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            ready = context._catalog is not None
            return _reply(start_response, "200 OK" if ready else "503 Service Unavailable", {"ready": ready})
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


def _log_to_stderr() -> None:
    """gpu-assist's own lines (job rounds, failures) on stderr; libraries stay at their default level."""
    logger = logging.getLogger("gpu_assist")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False  # a library's root handler would print each line twice


def build_application(*, jobs: bool):
    """One process's app: settings, context (the catalog loaded now), the WSGI app, and its jobs thread."""
    _log_to_stderr()
    settings = SlackSettings.from_env()
    context = Context()
    application = wsgi_application(settings, context)
    if jobs:
        start_jobs(context)
    return application


def serve(host: str = "0.0.0.0", port: int = 3000, *, threads: int = 16, jobs: bool = True, workers: int = 1) -> None:
    """One process on waitress, or `workers` processes under gunicorn's pre-fork master (see prefork.py)."""
    if workers > 1:
        from . import prefork

        SlackSettings.from_env()  # missing credentials: one clear error from the master, not N worker crashes
        prefork.serve(lambda: build_application(jobs=jobs), host, port, workers=workers, threads=threads,
                      max_body_bytes=MAX_BODY_BYTES)
        return
    import waitress

    application = build_application(jobs=jobs)
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
