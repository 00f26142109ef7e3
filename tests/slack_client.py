"""Signed requests into the running Bolt app, as Slack sends them."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

SIGNING_SECRET = "test-signing-secret-0123456789abcdef"
BOT_TOKEN = "xoxb-test-0000-not-a-real-token"


def signed_post(url: str, body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None,
                signature: str | None = None, headers: dict | None = None) -> tuple[int, str]:
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    sig = signature or SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    request = urllib.request.Request(url, data=body.encode("utf-8", errors="surrogateescape"), method="POST", headers={
        "Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": sig, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def command_body(text: str, *, user: str, response_url: str, channel: str = "C-GENERAL") -> str:
    return urlencode({"token": "legacy", "team_id": "T1", "team_domain": "example", "channel_id": channel,
                      "channel_name": "general", "user_id": user, "user_name": user.lower(), "command": "/gpu",
                      "text": text, "api_app_id": "A1", "response_url": response_url, "trigger_id": "1.2.3"})


def action_body(action_id: str, value: str, *, user: str, response_url: str, channel: str = "C-APPROVALS",
                message_ts: str = "1700000000.000001") -> str:
    payload = {
        "type": "block_actions", "user": {"id": user, "username": user.lower(), "team_id": "T1"},
        "api_app_id": "A1", "token": "legacy", "team": {"id": "T1", "domain": "example"},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": False},
        "channel": {"id": channel, "name": "approvals"}, "trigger_id": "1.2.3", "response_url": response_url,
        "actions": [{"action_id": action_id, "block_id": "b1", "value": value, "type": "button",
                     "action_ts": str(time.time()), "text": {"type": "plain_text", "text": "x"}}],
    }
    return urlencode({"payload": json.dumps(payload)})
