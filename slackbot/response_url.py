"""Answers to a slash command's `response_url`, over connections kept open between answers.

Bolt's `respond` opens a new connection (and, against Slack, a new TLS session) for every answer, and
parses the reply's headers with the `email` package: about half of a cached answer's cost on the served
path. Slack's `response_url`s all point at one host, so a pool of kept-alive connections (urllib3, one
pool per host, as many connections as work threads) takes that cost once per connection instead.
The message is the one Bolt's `respond` sends: `text`, `blocks`, and the flags given.
"""

from __future__ import annotations

import collections
import json
import logging
import threading
from typing import Any, Callable

import urllib3

log = logging.getLogger("gpu_assist.slack")
_HEADERS = {"Content-Type": "application/json;charset=utf-8"}


def message(text: str = "", blocks: list[dict[str, Any]] | None = None, **flags: Any) -> bytes:
    """A response message as JSON: what Bolt's `respond(text=…, blocks=…, response_type=…, …)` would send."""
    body: dict[str, Any] = {"text": text}
    if blocks:
        body["blocks"] = blocks
    body.update((name, value) for name, value in flags.items() if value is not None)
    return json.dumps(body).encode()


class ResponsePoster:
    """POSTs answers to `response_url`s; safe to share between threads."""

    def __init__(self, connections: int, timeout_s: float = 10.0):
        # A dropped kept-alive connection is retried once on a new one; an answer refused is logged, not retried.
        retries = urllib3.Retry(total=2, connect=2, read=1, status=0, allowed_methods=None, raise_on_status=False)
        self._http = urllib3.PoolManager(num_pools=4, maxsize=connections, retries=retries,
                                         timeout=urllib3.Timeout(connect=timeout_s / 2, read=timeout_s))

    def post(self, response_url: str, body: bytes) -> int:
        """Send one encoded message; the HTTP status Slack gave (logged when it is not 200)."""
        reply = self._http.request("POST", response_url, body=body, headers=_HEADERS)
        if reply.status != 200:
            log.warning("response_url answered %d: %s", reply.status, reply.data[:200].decode(errors="replace"))
        return reply.status

    def responder(self, response_url: str) -> Callable[..., int]:
        """A `respond(text=…, blocks=…, response_type=…, replace_original=…)` bound to one command."""
        return lambda text="", blocks=None, **flags: self.post(response_url, message(text, blocks, **flags))


class EncodedAnswers:
    """The encoded message of the last `kept` answers, by the answer's identity: the context hands the same
    object back for a question asked again (`Context.remember`), so its Block Kit is rendered only once."""

    def __init__(self, kept: int = 256):
        self._kept = kept
        self._messages: collections.OrderedDict[tuple[int, str, bool], tuple[object, bytes]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def message(self, result: object, text: str, replace: bool,
                render: Callable[[], tuple[str, list[dict[str, Any]]]]) -> bytes:
        """The ephemeral message for `result`, rendering it (`render()` → fallback text, blocks) when new."""
        key = (id(result), text, replace)
        with self._lock:
            kept = self._messages.get(key)
            if kept is not None and kept[0] is result:  # held here, so no other object has its id meanwhile
                self._messages.move_to_end(key)
                return kept[1]
        fallback, blocks = render()
        body = message(fallback, blocks, response_type="ephemeral", replace_original=replace)
        with self._lock:
            self._messages[key] = (result, body)
            while len(self._messages) > self._kept:
                self._messages.popitem(last=False)
        return body
