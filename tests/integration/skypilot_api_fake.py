"""A local stand-in for SkyPilot's API server (0.14, API version 62), over a real socket on loopback, answering the
calls the real `sky` SDK makes for a launch, the way `sky/server/server.py` of skypilot 0.14.1 does:

- `GET /api/health`: `{status, api_version, version, version_on_disk, commit, basic_auth_enabled, user}`; every
  answer carries `X-SkyPilot-API-Version` and `X-SkyPilot-Version` (the SDK's handshake, `versions.py`), and a
  client below the minimum compatible API version gets 400 `{error: version_mismatch, message}`;
- `POST /validate` (200, or 400 with a serialized exception), `POST /launch`, `/status`, `/down`, `/autostop`: each
  answers 200 with the request's id in `X-Skypilot-Request-ID` (the server runs it in the background);
- `GET /api/get?request_id=`: the finished request as `RequestPayload` (200), or with its error (500 `detail`),
  encoded by SkyPilot's own `Request.encode` and return-value encoders, so the SDK's decoders read it as they read
  a real server's.
With `token` set, calls without `Authorization: Bearer <token>` are refused as the server's service-account auth
does (health: 200 with status `needs_auth`; others: 401). What a cloud would do is modelled only as far as the
engine needs: a cluster per name (a launch of an existing name reuses it, of an existing name elsewhere fails
`ResourcesMismatchError`), regions sold out (`ResourcesUnavailableError`), 503s while throttled. Not a test
module."""

from __future__ import annotations

import atexit
import http.server
import itertools
import json
import os
import shutil
import tempfile
import threading
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import yaml

# SkyPilot's client keeps its catalogs under SKY_RUNTIME_DIR (read when `sky` is imported) and validates a task's
# instance type and region against them: seeded from the vendored extracts, fresh, so it fetches none.
SKY_HOME = Path(tempfile.mkdtemp(prefix="skypilot-client-"))
atexit.register(shutil.rmtree, SKY_HOME, ignore_errors=True)
os.environ["SKY_RUNTIME_DIR"] = str(SKY_HOME)
os.environ["SKYPILOT_DISABLE_USAGE_COLLECTION"] = "1"
for _cloud in ("gcp", "lambda"):
    (SKY_HOME / ".sky/catalogs/v8" / _cloud).mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(__file__).resolve().parents[2] / "catalogs/sources" / f"{_cloud}_gpu.csv",
                SKY_HOME / ".sky/catalogs/v8" / _cloud / "vms.csv")

import sky  # noqa: E402 - after its runtime directory is set
from sky import core, exceptions, execution  # noqa: E402
from sky.schemas.api import responses  # noqa: E402
from sky.server import constants  # noqa: E402
from sky.server.requests import payloads  # noqa: E402
from sky.server.requests import requests as requests_lib  # noqa: E402
from sky.utils import status_lib  # noqa: E402

SERVICE_TOKEN = "sky_gpuassist-test-service-account-token"
USER = {"name": "gpu-assist-engine", "id": "a1b2c3d4"}
_ROUTES = {  # path → (request name, body type, the server function a real server schedules)
    "/launch": ("sky.launch", payloads.LaunchBody, execution.launch),
    "/status": ("sky.status", payloads.StatusBody, core.status),
    "/down": ("sky.down", payloads.StopOrDownBody, core.down),
    "/autostop": ("sky.autostop", payloads.AutostopBody, core.autostop),
}


class FakeSkyPilotApiServer(http.server.ThreadingHTTPServer):
    """SkyPilot's API server for the engine's calls; `calls` lists (path, body) as received, `clusters` what runs."""

    daemon_threads = True

    def __init__(self, token: str | None = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.endpoint = f"http://127.0.0.1:{self.server_address[1]}"
        self.token = token
        self.lock = threading.Lock()
        self.stamps = itertools.count(1_796_000_000)  # the times it records: a counter, so no test reads the clock
        self.reset()

    def reset(self) -> None:
        """Forget every cluster, request and call (one server serves a test session: the SDK keeps its endpoint)."""
        with self.lock:
            self.calls: list[tuple[str, dict[str, Any]]] = []
            self.clusters: dict[str, dict[str, Any]] = {}
            self.requests: dict[str, requests_lib.Request] = {}
            self.sold_out: set[str] = set()      # regions (or zones) where a launch finds no capacity
            self.throttle = 0                    # the next N calls are answered 503
            self.refuse_validation: str | None = None

    def launches(self) -> list[dict[str, Any]]:
        """The launch calls received, each its body with the task read from its YAML."""
        return [{**body, "task": list(yaml.safe_load_all(body["task"]))[-1]} for path, body in self.calls
                if path == "/launch"]

    def add_cluster(self, name: str, region: str, labels: dict[str, str]) -> str:
        """A cluster someone else launched (no gpu-assist label, or a copied one)."""
        with self.lock:
            self.clusters[name] = _cluster(name, region, None, labels, 0, False, next(self.stamps))
        return name

    # ---- what the server does for each call -------------------------------------------------------------
    def run(self, path: str, body: dict[str, Any]) -> Any:
        if path == "/launch":
            return self._launch(body)
        if path == "/status":
            names = body.get("cluster_names")
            return [responses.StatusResponse.model_validate(c) for n, c in self.clusters.items()
                    if names is None or n in names]
        name = body["cluster_name"]
        if name not in self.clusters:
            raise exceptions.ClusterDoesNotExist(f"Cluster {name!r} does not exist.")
        if path == "/down":
            del self.clusters[name]
        else:
            self.clusters[name].update(autostop=body["idle_minutes"], to_down=body["down"])
        return None

    def _launch(self, body: dict[str, Any]) -> tuple[None, None]:
        name = body["cluster_name"]
        task = list(yaml.safe_load_all(body["task"]))[-1]
        resources = task["resources"]
        cloud, region, zone = (resources["infra"].split("/") + [None, None])[:3]
        existing = self.clusters.get(name)
        if existing is not None:
            if existing["region"] != region:
                raise exceptions.ResourcesMismatchError(
                    f"Requested resources do not match the existing cluster {name!r} in {existing['region']}.")
            return None, None  # an existing cluster: the task runs on it, nothing is provisioned
        if region in self.sold_out or zone in self.sold_out:
            raise exceptions.ResourcesUnavailableError(
                f"Failed to provision all possible launchable resources. Relax the task's resource requirements: "
                f"{resources['instance_type']} in {zone or region} has no capacity.")
        autostop = resources.get("autostop") or {}
        self.clusters[name] = _cluster(name, region, zone, resources.get("labels") or {},
                                       autostop.get("idle_minutes", -1), bool(autostop.get("down")),
                                       next(self.stamps), cloud, int(task.get("num_nodes", 1)))
        return None, None


def _cluster(name: str, region: str, zone: str | None, labels: dict[str, str], autostop: int, to_down: bool,
             launched_at: int, cloud: str = "gcp", nodes: int = 1) -> dict[str, Any]:
    """A cluster as `core.status` records it (the fields `StatusResponse` requires, and the ones the engine reads)."""
    return {"name": name, "launched_at": launched_at, "handle": None, "last_use": "sky launch",
            "status": status_lib.ClusterStatus.UP, "autostop": autostop, "to_down": to_down, "cluster_hash": name,
            "cluster_ever_up": True, "user_hash": USER["id"], "user_name": USER["name"], "workspace": "default",
            "is_managed": False, "nodes": nodes, "cloud": cloud, "region": region, "zone": zone,
            "labels": dict(labels)}


class _Handler(http.server.BaseHTTPRequestHandler):
    server: FakeSkyPilotApiServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _answer(self, status: int, payload: Any, request_id: str | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header(constants.API_VERSION_HEADER, str(constants.API_VERSION))
        self.send_header(constants.VERSION_HEADER, sky.__version__)
        self.send_header("X-Skypilot-Request-ID", request_id or str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        token = self.server.token
        return token is None or self.headers.get("Authorization") == f"Bearer {token}"

    def _too_old(self) -> bool:
        version = self.headers.get(constants.API_VERSION_HEADER)
        if version is not None and int(version) < constants.MIN_COMPATIBLE_API_VERSION:
            self._answer(400, {"error": "version_mismatch", "message": "Your SkyPilot client version is too old"})
            return True
        return False

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        url = urllib.parse.urlsplit(self.path)
        if self._too_old():
            return
        if url.path == "/api/health":  # unauthenticated: the same answer, `needs_auth` (a client of API version >= 14)
            self._answer(200, {"status": "healthy" if self._authorised() else "needs_auth",
                               "api_version": str(constants.API_VERSION),
                               "version": sky.__version__, "version_on_disk": sky.__version__,
                               "commit": sky.__commit__, "basic_auth_enabled": False,
                               "user": USER if self._authorised() else None})
        elif url.path == "/api/get" and self._authorised():
            request_id = urllib.parse.parse_qs(url.query).get("request_id", [""])[0]
            request = self.server.requests.get(request_id)
            if request is None:
                self._answer(404, {"detail": f"Request {request_id!r} not found"})
            elif request.error is not None:
                self._answer(500, {"detail": request.encode().model_dump()})
            else:
                self._answer(200, request.encode().model_dump())
        else:
            self._answer(401 if not self._authorised() else 404, {"detail": "Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        path = urllib.parse.urlsplit(self.path).path
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
        if self._too_old():
            return
        if not self._authorised():
            self._answer(401, {"detail": "Authentication required"})
            return
        with self.server.lock:
            if self.server.throttle:
                self.server.throttle -= 1
                self._answer(503, {"detail": "Server is busy, please try again later."})
                return
            self.server.calls.append((path, body))
            if path == "/validate":
                refused = self.server.refuse_validation
                self._answer(400 if refused else 200, {"detail": exceptions.serialize_exception(
                    ValueError(refused))} if refused else None)
                return
            if path not in _ROUTES:
                self._answer(404, {"detail": "Not Found"})
                return
            name, body_type, function = _ROUTES[path]
            request_id = str(uuid.uuid4())
            request = requests_lib.Request(
                request_id=request_id, name=name, entrypoint=function, request_body=body_type(**body),
                status=requests_lib.RequestStatus.RUNNING, created_at=float(next(self.server.stamps)),
                user_id=USER["id"], cluster_name=body.get("cluster_name"))
            try:
                request.set_return_value(self.server.run(path, body))
                request.status = requests_lib.RequestStatus.SUCCEEDED
            except Exception as error:  # noqa: BLE001 - the request failed: its error goes back through /api/get
                request.set_error(error)
                request.status = requests_lib.RequestStatus.FAILED
            request.finished_at = float(next(self.server.stamps))
            self.server.requests[request_id] = request
        self._answer(200, None, request_id)


_SHARED: list[FakeSkyPilotApiServer] = []


def shared_server() -> FakeSkyPilotApiServer:
    """One server per test process, started on first use and emptied for each test (`reset`)."""
    if not _SHARED:
        server = FakeSkyPilotApiServer(token=SERVICE_TOKEN)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        _SHARED.append(server)
    _SHARED[0].reset()
    return _SHARED[0]
