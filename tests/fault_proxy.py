"""An HTTP proxy in front of the moto server that injects faults into chosen AWS calls, as a flaky network and
a busy AWS do: throttling (503 RequestLimitExceeded), 500s, capacity errors, and connections dropped before or
after the call reached the service."""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

_ERRORS = {
    "throttle": (503, "RequestLimitExceeded", "Request limit exceeded."),
    "500": (500, "InternalError", "An internal error has occurred."),
    "capacity": (500, "InsufficientInstanceCapacity", "We currently do not have sufficient capacity."),
}


class FaultProxy:
    def __init__(self, upstream: str):
        self.upstream = urlparse(upstream)
        self.faults: dict[str, list[str]] = {}  # EC2 Action → faults to inject, in order
        self.injected: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                action = parse_qs(body.decode("utf-8", "replace")).get("Action", [""])[0]
                with proxy.lock:
                    queue = proxy.faults.get(action) or []
                    fault = queue.pop(0) if queue else None
                    if fault:
                        proxy.injected.append((action, fault))
                if fault == "drop-before":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fault in _ERRORS:
                    status, code, message = _ERRORS[fault]
                    xml = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Errors><Error><Code>{code}</Code>"
                           f"<Message>{message}</Message></Error></Errors><RequestID>fault</RequestID></Response>")
                    return self._send(status, {"Content-Type": "text/xml"}, xml.encode())
                status, headers, answer = proxy.forward(self.command, self.path, self.headers, body)
                if fault == "drop-after":  # the call happened; its answer is lost
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self._send(status, headers, answer)

            do_GET = do_POST

            def _send(self, status, headers, body):
                self.send_response(status)
                for key, value in headers.items():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def forward(self, method, path, headers, body):
        connection = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=30)
        forwarded = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length")}
        connection.request(method, path, body=body, headers=forwarded)
        response = connection.getresponse()
        answer = response.read()
        result = response.status, dict(response.getheaders()), answer
        connection.close()
        return result

    def inject(self, action: str, *faults: str) -> None:
        with self.lock:
            self.faults.setdefault(action, []).extend(faults)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
