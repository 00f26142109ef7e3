"""Starting the Slack server wrong: each mistake is one clear line and exit 2, before anything is served."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from slackbot.app import SlackSettings, create_app


def _serve(env: dict[str, str]) -> subprocess.CompletedProcess:
    environ = {**os.environ, "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "secret", **env}
    return subprocess.run([sys.executable, "-m", "gpu_assist", "slack", "serve", "--port", "0", "--no-jobs"],
                          env=environ, capture_output=True, text=True, timeout=60)


@pytest.mark.slow  # a server process each
def test_slack_unreachable_is_said_with_the_address_tried():
    done = _serve({"GPU_ASSIST_SLACK_API_URL": "http://127.0.0.1:9/api/"})
    assert done.returncode == 2, done.stderr
    assert "could not reach Slack's Web API at http://127.0.0.1:9/api/" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


@pytest.mark.slow  # a server process each
def test_a_token_slack_refuses_is_said_and_the_token_never_printed():
    class RefusingSlack(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.dumps({"ok": False, "error": "invalid_auth"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), RefusingSlack)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = _serve({"GPU_ASSIST_SLACK_API_URL": f"http://127.0.0.1:{server.server_address[1]}/api/"})
    finally:
        server.shutdown()
    assert done.returncode == 2 and "Slack refused the bot token" in done.stderr and "invalid_auth" in done.stderr
    assert "SLACK_BOT_TOKEN" in done.stderr and "xoxb-test" not in done.stderr + done.stdout


@pytest.mark.slow  # a server process each
def test_a_pool_size_that_is_not_a_number_names_its_variable():
    done = _serve({"GPU_ASSIST_SLACK_QUEUE": "lots"})
    assert done.returncode == 2
    assert "GPU_ASSIST_SLACK_QUEUE='lots' is not a whole number of at least 0" in done.stderr
    assert "example: GPU_ASSIST_SLACK_QUEUE=64" in done.stderr


def test_a_start_logs_no_warning_about_the_token(mock_slack, catalog, caplog, monkeypatch):
    from gpu_assist.commands import Context

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")  # as docs/deploying.md starts it: Bolt reads this itself
    with caplog.at_level(logging.WARNING):
        create_app(SlackSettings("xoxb-test", "secret", mock_slack.api_url), Context(catalog_loader=lambda: catalog))
    assert not [r for r in caplog.records if "token" in r.getMessage()]
