"""Every malformed or unsigned request to the running `gpu-assist slack serve`, through a real socket (http.client,
so headers can be repeated): the status and the one-line JSON error of each row, and never a 500 or a traceback."""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlparse

from slack_sdk.signature import SignatureVerifier

from slack_client import SIGNING_SECRET, command_body

FORM = "application/x-www-form-urlencoded"
TIMESTAMP, SIGNATURE = "X-Slack-Request-Timestamp", "X-Slack-Signature"
WHOLE_SECONDS = "X-Slack-Request-Timestamp must be whole seconds since the epoch"
V0 = "X-Slack-Signature must be v0= and 64 hex digits"


def _send(base: str, method: str, path: str, headers: list[tuple[str, str]], body: bytes) -> tuple[int, bytes]:
    address = urlparse(base)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for name, value in headers + [("Content-Length", str(len(body)))]:
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _rows(response_url: str):
    """(what, method, path, headers, body, status, error): the table of the closing note."""
    body = command_body("quote 8xA100 1h", user="U-CAROL", response_url=response_url)
    now = str(int(time.time()))
    good = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=now, body=body)
    sign = [(TIMESTAMP, now), (SIGNATURE, good)]
    form = [("Content-Type", FORM)]
    big = "text=" + "x" * (2 << 20)
    big_signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=now, body=big)
    malformed = "payload=%7Bnot+json"
    return [
        ("no Slack headers", "POST", form, body, 401, f"missing {TIMESTAMP} header"),
        ("empty timestamp", "POST", form + [(TIMESTAMP, ""), (SIGNATURE, good)], body, 401,
         f"missing {TIMESTAMP} header"),
        ("non-numeric timestamp", "POST", form + [(TIMESTAMP, "yesterday"), (SIGNATURE, good)], body, 401,
         WHOLE_SECONDS),
        ("negative timestamp", "POST", form + [(TIMESTAMP, "-" + now), (SIGNATURE, good)], body, 401, WHOLE_SECONDS),
        ("huge timestamp", "POST", form + [(TIMESTAMP, "9" * 40), (SIGNATURE, good)], body, 401, WHOLE_SECONDS),
        ("float timestamp", "POST", form + [(TIMESTAMP, now + ".5"), (SIGNATURE, good)], body, 401, WHOLE_SECONDS),
        ("timestamp 301 s old", "POST", form + [(TIMESTAMP, str(int(now) - 301)), (SIGNATURE, good)], body, 401,
         "request timestamp is more than 5 minutes from now"),
        ("missing signature", "POST", form + [(TIMESTAMP, now)], body, 401, f"missing {SIGNATURE} header"),
        ("empty signature", "POST", form + [(TIMESTAMP, now), (SIGNATURE, "")], body, 401,
         f"missing {SIGNATURE} header"),
        ("signature v0= only", "POST", form + [(TIMESTAMP, now), (SIGNATURE, "v0=")], body, 401, V0),
        ("signature of another scheme", "POST", form + [(TIMESTAMP, now), (SIGNATURE, "v1=" + good[3:])], body, 401,
         V0),
        ("signature not hex", "POST", form + [(TIMESTAMP, now), (SIGNATURE, "v0=" + "z" * 64)], body, 401, V0),
        ("wrong signature", "POST", form + [(TIMESTAMP, now), (SIGNATURE, "v0=" + "0" * 64)], body, 401,
         "invalid request signature"),
        ("duplicated timestamp header", "POST", form + sign + [(TIMESTAMP, now)], body, 400,
         f"{TIMESTAMP} header given more than once"),
        ("duplicated signature header", "POST", form + sign + [(SIGNATURE, good)], body, 400,
         f"{SIGNATURE} header given more than once"),
        ("body of 2 MiB, signed", "POST", form + [(TIMESTAMP, now), (SIGNATURE, big_signature)], big, 413,
         "body over 1048576 bytes"),
        ("no content type", "POST", sign, body, 415, "content type (none) is not one Slack sends "
         "(application/x-www-form-urlencoded, application/json)"),
        ("content type text/plain", "POST", [("Content-Type", "text/plain")] + sign, body, 415,
         "content type text/plain is not one Slack sends (application/x-www-form-urlencoded, application/json)"),
        ("content type multipart", "POST", [("Content-Type", "multipart/form-data; boundary=x")] + sign, body, 415,
         "content type multipart/form-data is not one Slack sends "
         "(application/x-www-form-urlencoded, application/json)"),
        ("GET on the events path", "GET", [], "", 405, "GET is not allowed here; Slack POSTs"),
        ("PUT on the events path", "PUT", form + sign, body, 405, "PUT is not allowed here; Slack POSTs"),
        ("DELETE on the events path", "DELETE", [], "", 405, "DELETE is not allowed here; Slack POSTs"),
        ("signed, malformed payload", "POST", form + [
            (TIMESTAMP, now),
            (SIGNATURE, SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=now, body=malformed))],
         malformed, 400, "malformed request body"),
        ("POST /healthz", "POST", form, "", 405, "POST is not allowed here"),
        ("another path", "POST", form + sign, body, 404, "no such path; Slack posts to /slack/events"),
    ]


def test_every_bad_request_gets_its_status_and_a_one_line_json_error(slack_server, mock_slack, record_case):
    mock_slack.clear()
    table, wrong = [], []
    for what, method, headers, body, status, error in _rows(mock_slack.response_url()):
        path = {"POST /healthz": "/healthz", "another path": "/slack/other"}.get(what, "/slack/events")
        got, raw = _send(slack_server["base"], method, path, headers, body.encode())
        table.append(f"| {what} | {method} | {got} | {raw.decode(errors='replace')} |")
        if (got, raw) != (status, json.dumps({"error": error}).encode()):
            wrong.append((what, got, raw[:200]))
    body = command_body("help", user="U-CAROL", response_url=mock_slack.response_url())
    now = str(int(time.time()))
    signed = [(TIMESTAMP, now), (SIGNATURE, SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=now,
                                                                                                 body=body))]
    control = _send(slack_server["base"], "POST", "/slack/events", [("Content-Type", FORM)] + signed, body.encode())
    print("\n| request | method | status | body |\n|---|---|---|---|\n" + "\n".join(table))
    log = slack_server["log"].read_text()
    record_case("Malformed Slack requests, one per kind (table in the closing note of issue 14)",
                tried=len(table), refused=len(table) - len(wrong), side_effects=len(mock_slack.received),
                note="401/400/405/413/415 with a one-line JSON error each; no 500, no traceback")
    assert wrong == []
    assert "Traceback" not in log and " 500 " not in log
    assert control[0] == 200 and "quote 8xA100 72h" in json.loads(control[1])["text"]  # a good request still works

