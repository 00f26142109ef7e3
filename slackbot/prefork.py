"""`gpu-assist slack serve --workers N`: gunicorn's pre-fork master with N threaded workers.

Why gunicorn: the app is already WSGI (Bolt's WSGI adapter), so a pre-fork server adds processes without a
second app: one Python per core escapes the GIL that makes one process's acks wait behind its own quotes.
Each worker builds the app itself after the fork (no `preload_app`): it loads the catalog and opens its
database connections before it accepts a request, so `/healthz` never answers from a half-started worker,
and a worker that dies is replaced by the master with a fresh one.
"""

# mypy: disallow-subclassing-any=False
# (gunicorn has no type information: the server subclasses its BaseApplication all the same)

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

from gunicorn.app.base import BaseApplication

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment


class PreforkServer(BaseApplication):
    """gunicorn configured in code: `build()` runs in each worker and returns its WSGI application."""

    def __init__(self, build: Callable[[], WSGIApplication], options: dict[str, Any]):
        self._build, self._options = build, options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> WSGIApplication:
        return self._build()


def limit_body(application: WSGIApplication, max_bytes: int) -> WSGIApplication:
    """Refuse a body over `max_bytes` (413) before anything reads it; waitress does this itself."""

    def limited(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > max_bytes:
            status = "413 Payload Too Large" if length > max_bytes else "400 Bad Request"
            start_response(status, [("Content-Type", "text/plain"), ("Content-Length", "0")])
            return [b""]
        return application(environ, start_response)

    return limited


def serve(build: Callable[[], WSGIApplication], host: str, port: int, *, workers: int, threads: int,
          max_body_bytes: int) -> None:
    PreforkServer(lambda: limit_body(build(), max_body_bytes), {
        "bind": f"{host}:{port}", "workers": workers, "worker_class": "gthread", "threads": threads,
        "proc_name": "gpu-assist-slack", "accesslog": None, "errorlog": "-", "loglevel": "warning",
        "timeout": 30, "graceful_timeout": 10, "keepalive": 5,
    }).run()
