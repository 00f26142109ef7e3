"""`POST /skypilot/policy`: the gate over HTTP, as SkyPilot's `RestfulAdminPolicy` calls it. The Slack server
routes the path here (`slackbot/server.py`), and `gpu-assist skypilot serve --port N` serves it alone.

The URL holds no secret (SkyPilot posts without credentials and prints the URL to every refused user): whoever
can reach it can at most file a pending request that an approver sees (`gate`). Serve it where only the team's
API server reaches it: bind it to loopback or a private address, or put it behind a reverse proxy or mutual TLS
(docs/skypilot.md). A body that is not SkyPilot's request is answered 400 with one line, never a traceback.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Iterable

import waitress

from ..errors import GpuAssistError
from . import contract, lines
from .gate import Gate, LetThrough

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("gpu_assist.skypilot")
POLICY_PATH = "/skypilot/policy"
INTERNAL = "gpu-assist could not decide this request (its log says why); ask the team's gpu-assist admin"


def answer(gate: Gate, body: bytes, waits_in: str) -> tuple[str, str, bytes]:
    """(HTTP status, content type, body) SkyPilot is answered for `body`."""
    try:
        request = contract.read_request(body)
        verdict = gate.decide(request)
    except contract.ContractError as error:
        return _line("400 Bad Request", lines.unreadable(error.message))
    except GpuAssistError as error:
        return _line("400 Bad Request", lines.unreadable(error.message))
    except Exception:  # noqa: BLE001 - logged here; SkyPilot shows its user one line, never our traceback
        log.exception("the SkyPilot gate failed on a %s request", "policy")
        return _line("500 Internal Server Error", INTERNAL)
    if isinstance(verdict, LetThrough):
        return "200 OK", "application/json", contract.mutated(verdict.task, request.config_text)
    return _line("400 Bad Request", lines.refusal(verdict, waits_in))


def _line(status: str, text: str) -> tuple[str, str, bytes]:
    return status, "text/plain; charset=utf-8", text.encode()


def policy_app(gate: Callable[[], Gate], waits_in: str) -> WSGIApplication:
    """The WSGI app of the policy path; `gate` gives the gate (built on first use, over the process's store)."""

    def application(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != POLICY_PATH:
            return _send(start_response, _line("404 Not Found", f"no such path; SkyPilot posts to {POLICY_PATH}"))
        if environ.get("REQUEST_METHOD") != "POST":
            return _send(start_response, _line("405 Method Not Allowed", "SkyPilot's admin policy POSTs here"),
                         (("Allow", "POST"),))
        declared = environ.get("CONTENT_LENGTH") or "0"
        if not declared.isdigit() or int(declared) > contract.MAX_BODY_BYTES:
            return _send(start_response, _line("400 Bad Request", lines.unreadable(
                f"Content-Length must be a number of bytes up to {contract.MAX_BODY_BYTES}")))
        body = environ["wsgi.input"].read(int(declared)) if int(declared) else b""
        return _send(start_response, answer(gate(), body, waits_in))

    return application


def _send(start_response: StartResponse, reply: tuple[str, str, bytes],
          headers: tuple[tuple[str, str], ...] = ()) -> list[bytes]:
    status, content_type, body = reply
    start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(body))), *headers])
    return [body]


def serve(host: str, port: int, gate: Callable[[], Gate], waits_in: str,
          listening: Callable[[str], None] = lambda url: None) -> None:
    """The policy app alone on waitress until interrupted; `listening` hears its URL once it listens."""
    server = waitress.create_server(policy_app(gate, waits_in), host=host, port=port, threads=8,
                                    ident="gpu-assist", clear_untrusted_proxy_headers=True)
    listening(f"http://{host}:{int(getattr(server, 'effective_port', port))}{POLICY_PATH}")
    server.run()
