"""A local fake of the Huawei Cloud ECS API subset gpu-assist launches with, for the official SDK over HTTP.

It follows the ECS API reference (support.huaweicloud.com/api-ecs) at the versions the SDK's v2 client calls:
`CreateServers` (POST /v1.1/{project_id}/cloudservers: `dry_run` answers 202 with nothing made; the
`X-Client-Token` header returns the servers first made with that token; `server_tags`; a zone in `sold_out`
answers `Ecs.0047`; more servers than `quota` answers `Ecs.0001`), `ListServersDetails` (GET
/v1/{project_id}/cloudservers/detail: `tags=key=value`, `server_id=a,b`, `offset` as a page number, `limit`;
servers' `tags` as `key=value` strings), `ListServerAzInfo` (GET /v1/{project_id}/availability-zones),
`ShowServerLimits` (GET /v1/{project_id}/cloudservers/limits), `BatchStopServers` (POST
/v1/{project_id}/cloudservers/action, `os-stop`), `DeleteServers` (POST /v1/{project_id}/cloudservers/delete),
`BatchCreateServerTags` (POST /v1/{project_id}/cloudservers/{id}/tags/action). Errors are the documented
`{"error": {"code", "message"}}` with their status; the next `throttle` requests answer 429 `APIGW.0308`. Every
request must carry the SDK's AK/SK signature header for the test's key (`SDK-HMAC-SHA256 Access=<AK>`), checked by
its form, not recomputed. Not a test module: the tests start it (`support.running`)."""

from __future__ import annotations

import http.server
import json
import re
import threading
import urllib.parse
import uuid
from typing import Any

from support import free_port

ACCESS_KEY, SECRET_KEY = "HPUAGPUASSISTLAUNCH", "gpu-assist-huawei-test-secret"
PROJECT = "5f0b7a8f3c1c2d4e5f8a9b0c1d2e3f4a"
ZONES = ("a", "b", "c")  # cn-north-4a, b, c


class HuaweiError(Exception):
    def __init__(self, code: str, message: str, status: int = 400):
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


class FakeHuaweiEcs(http.server.ThreadingHTTPServer):
    """The ECS state of one region: servers by id, the client tokens seen, the calls made (method, path, body)."""

    daemon_threads = True

    def __init__(self, *, quota: int = 10, region: str = "cn-north-4"):
        super().__init__(("127.0.0.1", free_port()), _Handler)
        self.lock = threading.Lock()
        self.region = region
        self.servers: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, list[str]] = {}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.sold_out: set[str] = set()
        self.quota = quota
        self.throttle = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    def runs(self) -> list[dict[str, Any]]:
        return [body for method, path, body in self.calls
                if method == "POST" and path.endswith("/cloudservers") and not body.get("dry_run")]

    def live(self) -> list[dict[str, Any]]:
        return [s for s in self.servers.values() if s["status"] != "DELETED"]

    def add_foreign(self) -> str:
        with self.lock:
            return self._make(f"{self.region}a", "p2s.2xlarge.8", ["team=other"], 1)[0]

    def _make(self, zone: str, flavor: str, tags: list[str], count: int) -> list[str]:
        made = []
        for _ in range(count):
            server_id = str(uuid.uuid4())
            self.servers[server_id] = {
                "id": server_id, "name": "", "status": "ACTIVE", "flavor": {"id": flavor},
                "OS-EXT-AZ:availability_zone": zone, "created": f"2026-12-02T12:00:{len(self.servers):02d}Z",
                "tags": tags, "metadata": {}}
            made.append(server_id)
        return made

    # ---- the actions ------------------------------------------------------------------------------------
    def act(self, method: str, path: str, query: dict[str, str], body: dict[str, Any], token: str | None
            ) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.calls.append((method, path, body))
            if self.throttle:
                self.throttle -= 1
                raise HuaweiError("APIGW.0308", "The throttling threshold has been reached.", 429)
            base = f"/v1/{PROJECT}/cloudservers"
            if method == "POST" and path == f"/v1.1/{PROJECT}/cloudservers":
                return self._create(body, token)
            if method == "GET" and path == f"{base}/detail":
                return 200, self._details(query)
            if method == "GET" and path == f"/v1/{PROJECT}/availability-zones":
                return 200, {"availability_zones": [{"availability_zone_id": f"{self.region}{z}", "type": "core",
                                                     "mode": "available", "alias": {}} for z in ZONES]}
            if method == "GET" and path == f"{base}/limits":
                used = len(self.live())
                return 200, {"absolute": {"maxTotalInstances": self.quota, "totalInstancesUsed": used,
                                          "maxTotalCores": self.quota * 64, "totalCoresUsed": used * 8,
                                          "maxTotalSpotInstances": self.quota, "totalSpotInstancesUsed": 0}}
            if method == "POST" and path == f"{base}/action" and "os-stop" in body:
                for server in self._known(body["os-stop"]["servers"]):
                    server["status"] = "SHUTOFF"
                return 200, {"job_id": str(uuid.uuid4())}
            if method == "POST" and path == f"{base}/delete":
                for server in self._known(body["servers"]):
                    server["status"] = "DELETED"
                return 200, {"job_id": str(uuid.uuid4())}
            tagged = re.fullmatch(rf"{base}/([0-9a-f-]+)/tags/action", path)
            if method == "POST" and tagged:
                (server,) = self._known([{"id": tagged.group(1)}])
                keys = {t["key"] for t in body["tags"]}
                server["tags"] = [t for t in server["tags"] if t.split("=")[0] not in keys] + \
                    [f"{t['key']}={t['value']}" for t in body["tags"]]
                return 204, {}
            raise HuaweiError("APIGW.0101", f"The API does not exist or has not been published: {method} {path}", 404)

    def _create(self, body: dict[str, Any], token: str | None) -> tuple[int, dict[str, Any]]:
        server, zone = body["server"], body["server"].get("availability_zone") or f"{self.region}a"
        if not server.get("imageRef") or not server.get("flavorRef"):
            raise HuaweiError("Ecs.0005", "imageRef and flavorRef are required.")
        if token and token in self.tokens:
            return 200, {"job_id": str(uuid.uuid4()), "serverIds": self.tokens[token]}
        if zone in self.sold_out:
            raise HuaweiError("Ecs.0047", f"The flavor {server['flavorRef']} is sold out in {zone}.")
        count = int(server.get("count", 1))
        if count > self.quota - len(self.live()):
            raise HuaweiError("Ecs.0001", "The maximum number of ECSs has been reached.", 403)
        if body.get("dry_run"):
            return 202, {}
        tags = [f"{t['key']}={t['value']}" for t in server.get("server_tags") or []]
        ids = self._make(zone, server["flavorRef"], tags, count)
        if token:
            self.tokens[token] = ids
        return 200, {"job_id": str(uuid.uuid4()), "serverIds": ids}

    def _details(self, query: dict[str, str]) -> dict[str, Any]:
        found = [s for s in self.servers.values() if s["status"] != "DELETED"]
        if query.get("server_id"):
            found = [s for s in found if s["id"] in query["server_id"].split(",")]
        if query.get("tags"):
            found = [s for s in found if query["tags"] in s["tags"]]
        page, limit = max(int(query.get("offset", 1)), 1), int(query.get("limit", 25))
        return {"count": len(found), "servers": found[(page - 1) * limit:page * limit]}

    def _known(self, servers: list[dict[str, str]]) -> list[dict[str, Any]]:
        missing = [s["id"] for s in servers if s["id"] not in self.servers]
        if missing:
            raise HuaweiError("Ecs.0114", f"The ECS {missing[0]} does not exist.", 404)
        return [self.servers[s["id"]] for s in servers]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: FakeHuaweiEcs

    def log_message(self, *args):
        pass

    def _answer(self):
        url = urllib.parse.urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            if not self.headers.get("Authorization", "").startswith(f"SDK-HMAC-SHA256 Access={ACCESS_KEY},"):
                raise HuaweiError("APIGW.0301", "Incorrect IAM authentication information.", 401)
            status, answer = self.server.act(self.command, url.path, dict(urllib.parse.parse_qsl(url.query)),
                                             json.loads(raw) if raw else {}, self.headers.get("X-Client-Token"))
        except HuaweiError as error:
            status, answer = error.status, {"error": {"code": error.code, "message": error.message}}
        payload = json.dumps(answer).encode() if answer or status != 204 else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=UTF-8")
        self.send_header("X-Request-Id", uuid.uuid4().hex)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer
