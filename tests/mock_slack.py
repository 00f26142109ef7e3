"""A small local server that plays Slack's Web API and `response_url`s, recording what the app sent.

Like bolt-python's tests/mock_web_api_server: the app's WebClient gets `base_url=<this>/api/`, slash
commands and button payloads carry `response_url=<this>/response/<n>`. Tests assert on `calls(...)`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs


class MockSlack:
    def __init__(self):
        self.received: list[dict] = []
        self._lock = threading.Lock()
        self._counter = 0
        self.slow: dict[str, float] = {}  # path -> seconds to wait before answering (a slow Slack)
        self.held: dict[str, threading.Event] = {}  # path -> its calls wait until this is set (`hold`)
        self.arrivals: list[str] = []  # every call's method as it arrives, before any slow wait
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # connections kept open between calls, as Slack's are

            def log_message(self, *_):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", errors="replace")
                if "json" in (self.headers.get("Content-Type") or ""):
                    params = json.loads(raw or "{}")
                else:
                    params = {k: v[0] for k, v in parse_qs(raw).items()}
                    for key in ("blocks", "attachments"):
                        if isinstance(params.get(key), str):
                            params[key] = json.loads(params[key])
                method = self.path.split("/api/", 1)[1] if "/api/" in self.path else self.path.lstrip("/")
                with mock._lock:
                    mock.arrivals.append(method)
                time.sleep(mock.slow.get(method, 0))
                gate = mock.held.get(method)
                if gate is not None:
                    gate.wait(timeout=60)
                with mock._lock:
                    mock._counter += 1
                    ts = f"{int(time.time())}.{mock._counter:06d}"
                    mock.received.append({"method": method, "params": params, "at": time.monotonic(),
                                          "authorization": self.headers.get("Authorization", "")})
                body = {"ok": True}
                if method == "auth.test":
                    body.update(user_id="UBOT", bot_id="BBOT", team_id="T1", url="https://example.slack.com/")
                elif method.startswith("chat."):
                    body.update(channel=params.get("channel"), ts=params.get("ts") or ts, message_ts=ts)
                encoded = json.dumps(body).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(encoded)))
                    self.end_headers()
                    self.wfile.write(encoded)
                except OSError:  # the caller is gone (a process killed while its call was held): nobody to answer
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True  # a connection kept open must not hold up stop()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def api_url(self) -> str:
        return self.url + "/api/"

    def response_url(self) -> str:
        with self._lock:
            self._counter += 1
            return f"{self.url}/response/{self._counter}"

    def start(self) -> "MockSlack":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def calls(self, method: str) -> list[dict]:
        with self._lock:
            return [r for r in self.received if r["method"] == method or r["method"].startswith(method)]

    def clear(self) -> None:
        with self._lock:
            self.received.clear()
            self.arrivals.clear()

    def hold(self, method: str) -> None:
        """From now on, calls to `method` arrive (`arrivals`) and then wait, unanswered and not yet in `received`,
        until `release(method)` (at most a minute): a caller can be caught in the middle of one."""
        self.held[method] = threading.Event()

    def release(self, method: str) -> None:
        """End a `hold`: the calls waiting at it are answered (and recorded) now, later ones at once."""
        self.held.pop(method).set()

    def wait_for_arrivals(self, method: str, count: int, timeout: float = 20.0) -> None:
        """Until `count` calls to exactly `method` have arrived (a slow one may still be waiting to answer)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self.arrivals.count(method) >= count:
                    return
            time.sleep(0.02)
        raise AssertionError(f"expected {count} arrivals of {method}, got {self.arrivals.count(method)}")

    def wait_for(self, method: str, count: int = 1, timeout: float = 20.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.calls(method)
            if len(found) >= count:
                return found
            time.sleep(0.02)
        raise AssertionError(f"expected {count} {method} call(s), got {len(self.calls(method))}: "
                             f"{[r['method'] for r in self.received]}")
