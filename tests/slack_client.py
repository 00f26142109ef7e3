"""Signed requests into the running Bolt app, as Slack sends them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
    except (urllib.error.URLError, ConnectionError) as error:  # the server closed on us (e.g. an oversized body)
        return 0, str(error)


def command_body(text: str, *, user: str, response_url: str, channel: str = "C-GENERAL") -> str:
    return urlencode({"token": "legacy", "team_id": "T1", "team_domain": "example", "channel_id": channel,
                      "channel_name": "general", "user_id": user, "user_name": user.lower(), "command": "/gpu",
                      "text": text, "api_app_id": "A1", "response_url": response_url, "trigger_id": "1.2.3"})


def action_body(action_id: str, value: str, *, user: str, response_url: str, channel: str = "C-APPROVALS",
                message_ts: str = "1700000000.000001", username: str | None = None) -> str:
    payload = {
        "type": "block_actions", "user": {"id": user, "username": username or user.lower(), "name": username or
                                          user.lower(), "team_id": "T1"},
        "api_app_id": "A1", "token": "legacy", "team": {"id": "T1", "domain": "example"},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": False},
        "channel": {"id": channel, "name": "approvals"}, "trigger_id": "1.2.3", "response_url": response_url,
        "actions": [{"action_id": action_id, "block_id": "b1", "value": value, "type": "button",
                     "action_ts": str(time.time()), "text": {"type": "plain_text", "text": "x"}}],
    }
    return urlencode({"payload": json.dumps(payload)})


def settle(url: str, mock, user: str = "U-CAROL") -> str:
    """Send a later marker command (`/gpu quote 8xA100 1h`) and wait for its answer: whatever the app was going to
    do with the requests before it has had its turn. Returns the marker's path, for the caller to leave out."""
    response_url = mock.response_url()
    status, _ = signed_post(url, command_body("quote 8xA100 1h", user=user, response_url=response_url))
    assert status == 200, status
    path = response_url.split(mock.url + "/", 1)[1]
    mock.wait_for(path)
    return path


def start_slack_server(moto_url: str, mock, state, *, db_url: str | None = None, jobs: bool = False,
                       extra_env: dict | None = None, args: tuple[str, ...] = (), cache_dir=None, wait: bool = True):
    """`gpu-assist slack serve` as a real process on a free port, talking to moto and the mock Web API.

    `cache_dir` shares a catalog cache between starts. Returns (process, info dict with url, base, env, log path),
    after /healthz answers unless `wait` is False; the caller stops the process."""
    from support import AWS_SECRET, free_port

    port = free_port()
    env = {**os.environ, "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
           "GPU_ASSIST_SLACK_API_URL": mock.api_url, "GPU_ASSIST_APPROVERS": "U-ALICE,U-BOB,jupyter:dave",
           "GPU_ASSIST_APPROVAL_CHANNEL": "C-APPROVALS",
           "GPU_ASSIST_DB_URL": db_url or f"sqlite:///{state / 'state.db'}",
           "GPU_ASSIST_AMI_ID": "ami-12c6146b", "AWS_ENDPOINT_URL": moto_url, "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": AWS_SECRET, "AWS_REGION": "us-east-1",
           "GPU_ASSIST_CACHE_DIR": str(cache_dir or state / "cache"), **(extra_env or {})}
    env.pop("AWS_PROFILE", None)
    log_path = state / f"server-{port}.log"
    log = open(log_path, "w")
    command = [sys.executable, "-m", "gpu_assist", "slack", "serve", "--host", "127.0.0.1", "--port", str(port), *args]
    process = subprocess.Popen(command + ([] if jobs else ["--no-jobs"]), env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    log.close()
    base = f"http://127.0.0.1:{port}"
    info = {"url": f"{base}/slack/events", "base": base, "env": env, "log": log_path}
    if not wait:
        return process, info
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
                if response.status == 200:
                    return process, info
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("slack server did not start: " + log_path.read_text())
