"""The one place kernel code calls the Jupyter server's gpu-assist routes: submit, list, approve, reject.

A decision from a notebook counts only as the server's authenticated user, so the panel asks the server (with a
token the server checks) rather than writing to the store. Secrets stay out of every message: errors name the
route and the status, never the token.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Mapping, cast

from ..errors import GpuAssistError, PolicyError


@dataclass(frozen=True)
class JupyterServer:
    """A running Jupyter server with the gpu-assist extension: its URL (with base_url) and an API token."""

    url: str
    token: str = field(repr=False)
    timeout_s: float = 600.0  # an approval waits for the launch it starts

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> JupyterServer | None:
        """`GPU_ASSIST_JUPYTER_URL` and `GPU_ASSIST_JUPYTER_TOKEN`, when both are set; else None."""
        url, token = environ.get("GPU_ASSIST_JUPYTER_URL"), environ.get("GPU_ASSIST_JUPYTER_TOKEN")
        return cls(url, token) if url and token else None

    def _call(self, path: str, payload: dict[str, str] | None = None) -> Any:
        """The route's JSON answer (an object, or a list for `requests`)."""
        request = urllib.request.Request(
            self.url.rstrip("/") + "/gpu-assist/api/" + path, method="POST" if payload is not None else "GET",
            data=json.dumps(payload).encode() if payload is not None else None,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            try:
                message = json.loads(error.read()).get("error")
            except (ValueError, AttributeError):
                message = None
            message = message or f"the Jupyter server answered HTTP {error.code} {error.reason}"
            raise (PolicyError if error.code == 403 else GpuAssistError)(str(message)) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise GpuAssistError(f"cannot reach the Jupyter server at {self.url}: {reason}") from None

    def launch(self, text: str) -> dict[str, Any]:
        return cast("dict[str, Any]", self._call("launch", {"q": text}))

    def requests(self) -> list[dict[str, Any]]:
        return cast("list[dict[str, Any]]", self._call("requests"))

    def decide(self, request_id: str, approve: bool, reason: str = "") -> dict[str, Any]:
        decision = "approve" if approve else "reject"
        return cast("dict[str, Any]", self._call(f"requests/{request_id}/{decision}", {"reason": reason}))
