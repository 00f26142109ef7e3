"""A local fake of the Alibaba Cloud ECS API subset gpu-assist launches with, for the official SDK over HTTP.

It follows ECS API version 2014-05-26 as documented (help.aliyun.com/document_detail/25484, RPC style): the action
in `x-acs-action`, the parameters in the query string (lists as `InstanceId.1`, `Tag.1.Key`), signed with
ACS3-HMAC-SHA256 (the signature is recomputed with the test's secret: a wrong one is `SignatureDoesNotMatch`, 400),
answers with the documented JSON bodies and errors `{"RequestId", "HostId", "Code", "Message"}` with status 400 or
403. Actions: `RunInstances` (`DryRun` answers `DryRunOperation`; `ClientToken` returns the instances first made
with that token; tags from `Tag.N`; a zone in `sold_out` answers `OperationDenied.NoStock`), `DescribeInstances`
(`Tag.N`, `InstanceIds` as JSON, `PageNumber`/`PageSize`), `DescribeZones`, `DescribeAccountAttributes`
(`max-postpaid-instance-vcpu-count`), `StopInstances`, `DeleteInstances`, `TagResources`; the next `throttle`
calls answer `Throttling.User`. Not a test module."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import itertools
import json
import threading
import urllib.parse
import uuid
from typing import Any

from support import free_port

ACCESS_KEY_ID, ACCESS_KEY_SECRET = "LTAIgpuassisttest", "gpu-assist-test-access-key-secret"
ZONES = ("-h", "-i", "-j")  # cn-hangzhou-h, -i, -j


class EcsError(Exception):
    def __init__(self, code: str, message: str, status: int = 400):
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def _listed(params: dict[str, str], name: str) -> list[str]:
    """`InstanceId.1`, `InstanceId.2`, … in order."""
    return [params[f"{name}.{n}"] for n in range(1, 101) if f"{name}.{n}" in params]


def _tags(params: dict[str, str]) -> list[dict[str, str]]:
    return [{"TagKey": params[f"Tag.{n}.Key"], "TagValue": params.get(f"Tag.{n}.Value", "")}
            for n in range(1, 21) if f"Tag.{n}.Key" in params]


class FakeEcs(http.server.ThreadingHTTPServer):
    """The ECS state: instances by id, the ClientTokens seen, the calls made (action, params)."""

    daemon_threads = True

    def __init__(self, *, vcpu_quota: int = 1000):
        super().__init__(("127.0.0.1", free_port()), _EcsHandler)
        self.lock = threading.Lock()
        self.instances: dict[str, dict[str, Any]] = {}
        self.tokens: dict[tuple[str, str], list[str]] = {}
        self.calls: list[tuple[str, dict[str, str]]] = []
        self.sold_out: set[str] = set()
        self.vcpu_quota = vcpu_quota
        self.throttle = 0  # answer this many next calls with Throttling.User, as ECS does under flow control
        self._numbers = itertools.count(1)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.server_port}"

    def runs(self) -> list[dict[str, str]]:
        return [p for action, p in self.calls if action == "RunInstances" and p.get("DryRun", "").lower() != "true"]

    def live(self) -> list[dict[str, Any]]:
        return [i for i in self.instances.values() if i["Status"] != "Deleted"]

    def add_foreign(self, region: str = "cn-hangzhou") -> str:
        with self.lock:
            return self._make(region, f"{region}-h", "ecs.gn6i-c4g1.xlarge", [{"TagKey": "team", "TagValue": "x"}])[0]

    def _make(self, region: str, zone: str, instance_type: str, tags: list[dict[str, str]], count: int = 1
              ) -> list[str]:
        made = []
        for _ in range(count):
            instance_id = f"i-bp{next(self._numbers):018x}"
            self.instances[instance_id] = {
                "InstanceId": instance_id, "InstanceType": instance_type, "Status": "Running", "RegionId": region,
                "ZoneId": zone, "CreationTime": f"2026-12-02T12:{len(self.instances):02d}Z", "Tags": {"Tag": tags}}
            made.append(instance_id)
        return made

    def act(self, action: str, params: dict[str, str]) -> dict[str, Any]:
        with self.lock:
            self.calls.append((action, params))
            if self.throttle:
                self.throttle -= 1
                raise EcsError("Throttling.User", "Request was denied due to user flow control.")
            handler = getattr(self, f"_{action}", None)
            if handler is None:
                raise EcsError("InvalidAction.NotFound", f"the action {action} is not in this fake", 404)
            return handler(params["RegionId"], params)

    def _RunInstances(self, region: str, params: dict[str, str]) -> dict[str, Any]:
        zone, count, token = params.get("ZoneId", ""), int(params.get("Amount", 1)), params.get("ClientToken")
        if not params.get("ImageId"):
            raise EcsError("MissingImageId", "ImageId is mandatory for this action.")
        if token and (region, token) in self.tokens:  # idempotent: the instances this token first made
            return {"InstanceIdSets": {"InstanceIdSet": self.tokens[(region, token)]}}
        if zone in self.sold_out:
            raise EcsError("OperationDenied.NoStock", "The resource is out of stock in the specified zone.", 403)
        if params.get("DryRun", "").lower() == "true":
            raise EcsError("DryRunOperation", "Request validation has been passed with DryRun flag set.")
        ids = self._make(region, zone, params["InstanceType"], _tags(params), count)
        if token:
            self.tokens[(region, token)] = ids
        return {"InstanceIdSets": {"InstanceIdSet": ids}, "TradePrice": 0}

    def _DescribeInstances(self, region: str, params: dict[str, str]) -> dict[str, Any]:
        found = [i for i in self.live() if i["RegionId"] == region]
        if params.get("InstanceIds"):
            wanted = json.loads(params["InstanceIds"])
            found = [i for i in found if i["InstanceId"] in wanted]
        for tag in _tags(params):
            found = [i for i in found if tag in i["Tags"]["Tag"]]
        number, size = int(params.get("PageNumber", 1)), int(params.get("PageSize", 10))
        return {"TotalCount": len(found), "PageNumber": number, "PageSize": size,
                "Instances": {"Instance": found[(number - 1) * size:number * size]}}

    def _DescribeZones(self, region: str, _params: dict[str, str]) -> dict[str, Any]:
        return {"Zones": {"Zone": [{"ZoneId": f"{region}{z}", "LocalName": f"zone {z[1:].upper()}"} for z in ZONES]}}

    def _DescribeAccountAttributes(self, _region: str, params: dict[str, str]) -> dict[str, Any]:
        names = _listed(params, "AttributeName")
        return {"AccountAttributeItems": {"AccountAttributeItem": [
            {"AttributeName": name, "AttributeValues": {"ValueItem": [
                {"Value": str(self.vcpu_quota), "Count": 1, "InstanceChargeType": "PostPaid"}]}}
            for name in names if name.endswith("vcpu-count")]}}

    def _known(self, ids: list[str]) -> list[dict[str, Any]]:
        missing = [i for i in ids if i not in self.instances]
        if missing:
            raise EcsError("InvalidInstanceId.NotFound", f"The specified InstanceId does not exist: {missing[0]}", 404)
        return [self.instances[i] for i in ids]

    def _StopInstances(self, _region: str, params: dict[str, str]) -> dict[str, Any]:
        for instance in self._known(_listed(params, "InstanceId")):
            instance["Status"] = "Stopped"
        return {"InstanceResponses": {"InstanceResponse": []}}

    def _DeleteInstances(self, _region: str, params: dict[str, str]) -> dict[str, Any]:
        for instance in self._known(_listed(params, "InstanceId")):
            instance["Status"] = "Deleted"
        return {}

    def _TagResources(self, _region: str, params: dict[str, str]) -> dict[str, Any]:
        for instance in self._known(_listed(params, "ResourceId")):
            keys = {t["TagKey"] for t in _tags(params)}
            instance["Tags"]["Tag"] = [t for t in instance["Tags"]["Tag"] if t["TagKey"] not in keys] + _tags(params)
        return {}


class _EcsHandler(http.server.BaseHTTPRequestHandler):
    server: FakeEcs

    def log_message(self, *args):
        pass

    def _signed(self, query: list[tuple[str, str]], body: bytes) -> bool:
        """ACS3-HMAC-SHA256 as documented: method, path, the query sorted by name with values percent-encoded,
        the signed headers, the body's SHA-256; HMAC-SHA256 of its hash with the secret."""
        auth = self.headers.get("Authorization", "")
        try:
            algorithm, rest = auth.split(" ", 1)
            fields = dict(part.split("=", 1) for part in rest.split(","))
        except ValueError:
            return False
        signed = fields.get("SignedHeaders", "").split(";")
        canonical_query = "&".join(f"{k}={urllib.parse.quote(v, safe='~')}" for k, v in sorted(query))
        canonical_headers = "".join(f"{name}:{(self.headers.get(name) or '').strip()}\n" for name in signed)
        canonical = "\n".join([self.command, urllib.parse.urlsplit(self.path).path or "/", canonical_query,
                               canonical_headers, ";".join(signed), hashlib.sha256(body).hexdigest()])
        to_sign = f"{algorithm}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        expected = hmac.new(ACCESS_KEY_SECRET.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
        return algorithm == "ACS3-HMAC-SHA256" and fields.get("Credential") == ACCESS_KEY_ID and \
            hmac.compare_digest(expected, fields.get("Signature", ""))

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        query = urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query, keep_blank_values=True)
        params = {**dict(query), **dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))}
        status, request_id = 200, str(uuid.uuid4()).upper()
        try:
            if not self._signed(query, body):
                raise EcsError("SignatureDoesNotMatch", "Specified signature is not matched with our calculation.")
            answer = self.server.act(self.headers["x-acs-action"], params)
        except EcsError as error:
            status, answer = error.status, {"HostId": "ecs.aliyuncs.com", "Code": error.code, "Message": error.message}
        payload = json.dumps({"RequestId": request_id, **answer}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST
