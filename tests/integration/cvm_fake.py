"""A local fake of the Tencent Cloud CVM API subset gpu-assist launches with, for the official SDK over HTTP.

It follows CVM API version 2017-03-12 as documented (cloud.tencent.com/document/api/213): POST of a JSON body with
the action and region in `X-TC-Action` / `X-TC-Region`, signed with TC3-HMAC-SHA256 (the signature is checked
against the test's secret key: a wrong one is `AuthFailure.SignatureFailure`), answers `{"Response": {...,
"RequestId"}}`, errors `{"Response": {"Error": {"Code", "Message"}, "RequestId"}}`. Actions: `RunInstances`
(`DryRun` answers `DryRunOperation`; `ClientToken` returns the instances first made with that token; tags from
`TagSpecification`; a zone in `sold_out` answers `ResourcesSoldOut.SpecifiedInstanceType`; more instances than the
zone's quota answers `LimitExceeded.InstanceQuota`; the next `throttle` calls of any action answer
`RequestLimitExceeded`), `DescribeInstances` (`Filters` `tag:<key>`, `InstanceIds`,
`Offset`/`Limit`), `DescribeZones`, `DescribeAccountQuota` (`AccountQuotaOverview`), `StopInstances`,
`TerminateInstances`. Not a test module: the tests start it (`support.running`)."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import itertools
import json
import threading
import uuid
from typing import Any

from support import free_port

SECRET_ID, SECRET_KEY = "AKIDgpuassisttest", "gpu-assist-test-secret-key"
ZONES = ("-3", "-4", "-6")  # ap-guangzhou-3, -4, -6
_DONE = ("TERMINATING", "SHUTDOWN")


class CvmError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def _sign(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


class FakeCvm(http.server.ThreadingHTTPServer):
    """The CVM state: instances by id, the ClientTokens seen, the calls made (action, region, params)."""

    daemon_threads = True

    def __init__(self, *, quota: int = 10):
        super().__init__(("127.0.0.1", free_port()), _CvmHandler)
        self.lock = threading.Lock()
        self.instances: dict[str, dict[str, Any]] = {}
        self.tokens: dict[tuple[str, str], list[str]] = {}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.sold_out: set[str] = set()
        self.quota = quota
        self.throttle = 0  # answer this many next calls with RequestLimitExceeded, as CVM does when throttling
        self._numbers = itertools.count(1)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.server_port}"

    def runs(self) -> list[dict[str, Any]]:
        """The RunInstances calls that were not dry runs, their parameters as sent."""
        return [params for action, _, params in self.calls if action == "RunInstances" and not params.get("DryRun")]

    def live(self) -> list[dict[str, Any]]:
        return [i for i in self.instances.values() if i["InstanceState"] not in _DONE]

    def add_foreign(self, region: str = "ap-guangzhou") -> str:
        """An instance someone made outside gpu-assist (no gpu-assist tag)."""
        with self.lock:
            return self._make(region, f"{region}-3", "GN7.2XLARGE32", [{"Key": "team", "Value": "other"}])[0]

    def _make(self, region: str, zone: str, instance_type: str, tags: list[dict[str, str]], count: int = 1,
              charge: str = "POSTPAID_BY_HOUR") -> list[str]:
        made = []
        for _ in range(count):
            instance_id = f"ins-{next(self._numbers):08x}"
            self.instances[instance_id] = {
                "InstanceId": instance_id, "InstanceType": instance_type, "InstanceState": "RUNNING",
                "Placement": {"Zone": zone, "ProjectId": 0}, "Tags": tags, "InstanceChargeType": charge,
                "CreatedTime": f"2026-12-02T12:00:{len(self.instances):02d}Z", "Region": region}
            made.append(instance_id)
        return made

    # ---- the actions ------------------------------------------------------------------------------------
    def act(self, action: str, region: str, params: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.calls.append((action, region, params))
            if self.throttle:
                self.throttle -= 1
                raise CvmError("RequestLimitExceeded", "request limit exceeded")
            handler = getattr(self, f"_{action}", None)
            if handler is None:
                raise CvmError("InvalidAction", f"the action {action} is not supported by this fake")
            return handler(region, params)

    def _RunInstances(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        zone, count = params["Placement"]["Zone"], int(params.get("InstanceCount", 1))
        if not params.get("ImageId"):
            raise CvmError("MissingParameter", "The request is missing a required parameter `ImageId`.")
        token = params.get("ClientToken")
        if token and (region, token) in self.tokens:  # idempotent: the instances this token first made
            return {"InstanceIdSet": self.tokens[(region, token)]}
        if zone in self.sold_out:
            raise CvmError("ResourcesSoldOut.SpecifiedInstanceType", f"{params['InstanceType']} is sold out in {zone}")
        if count > self.quota - sum(1 for i in self.live() if i["Placement"]["Zone"] == zone):
            raise CvmError("LimitExceeded.InstanceQuota", "the instance quota of the zone is exhausted")
        if params.get("DryRun"):
            raise CvmError("DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
        tags = [t for spec in params.get("TagSpecification", []) if spec.get("ResourceType") == "instance"
                for t in spec.get("Tags", [])]
        ids = self._make(region, zone, params["InstanceType"], tags, count, params.get("InstanceChargeType", ""))
        if token:
            self.tokens[(region, token)] = ids
        return {"InstanceIdSet": ids}

    def _DescribeInstances(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        found = [i for i in self.instances.values() if i["Region"] == region and i["InstanceState"] != "SHUTDOWN"]
        if params.get("InstanceIds"):
            found = [i for i in found if i["InstanceId"] in params["InstanceIds"]]
        for item in params.get("Filters", []):
            if item["Name"].startswith("tag:"):
                key = item["Name"][4:]
                found = [i for i in found if any(t["Key"] == key and t["Value"] in item["Values"] for t in i["Tags"])]
        offset, limit = int(params.get("Offset", 0)), int(params.get("Limit", 20))
        return {"TotalCount": len(found), "InstanceSet": found[offset:offset + limit]}

    def _DescribeZones(self, region: str, _params: dict[str, Any]) -> dict[str, Any]:
        return {"TotalCount": len(ZONES), "ZoneSet": [
            {"Zone": f"{region}{z}", "ZoneName": f"zone {z}", "ZoneId": f"1000{z[1:]}", "ZoneState": "AVAILABLE"}
            for z in ZONES]}

    def _DescribeAccountQuota(self, region: str, _params: dict[str, Any]) -> dict[str, Any]:
        def per_zone(charge: str) -> list[dict[str, Any]]:
            return [{"Zone": f"{region}{z}", "TotalQuota": self.quota, "UsedQuota": used,
                     "RemainingQuota": self.quota - used}
                    for z in ZONES for used in [sum(1 for i in self.live() if i["Placement"]["Zone"] == f"{region}{z}"
                                                    and i["InstanceChargeType"] == charge)]]
        return {"AppId": 1250000000, "AccountQuotaOverview": {"Region": region, "AccountQuota": {
            "PostPaidQuotaSet": per_zone("POSTPAID_BY_HOUR"), "SpotPaidQuotaSet": per_zone("SPOTPAID")}}}

    def _known(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        missing = [i for i in params["InstanceIds"] if i not in self.instances]
        if missing:
            raise CvmError("InvalidInstanceId.NotFound", f"instances not found: {', '.join(missing)}")
        return [self.instances[i] for i in params["InstanceIds"]]

    def _StopInstances(self, _region: str, params: dict[str, Any]) -> dict[str, Any]:
        for instance in self._known(params):
            instance["InstanceState"] = "STOPPED"
        return {}

    def _TerminateInstances(self, _region: str, params: dict[str, Any]) -> dict[str, Any]:
        for instance in self._known(params):
            instance["InstanceState"] = "SHUTDOWN"
        return {}


class _CvmHandler(http.server.BaseHTTPRequestHandler):
    server: FakeCvm

    def log_message(self, *args):
        pass

    def _signed(self, body: bytes) -> bool:
        """The TC3-HMAC-SHA256 signature, recomputed with the test's key (documented algorithm, signed headers
        content-type and host)."""
        auth = self.headers.get("Authorization", "")
        try:
            credential = auth.split("Credential=")[1].split(",")[0]
            signature = auth.split("Signature=")[1].strip()
            secret_id, date, service, _ = credential.split("/")
        except (IndexError, ValueError):
            return False
        canonical = "\n".join(["POST", "/", "", f"content-type:{self.headers['Content-Type']}\n"
                               f"host:{self.headers['Host']}\n", "content-type;host", hashlib.sha256(body).hexdigest()])
        scope = f"{date}/{service}/tc3_request"
        to_sign = "\n".join(["TC3-HMAC-SHA256", self.headers["X-TC-Timestamp"], scope,
                             hashlib.sha256(canonical.encode()).hexdigest()])
        key = _sign(_sign(_sign(f"TC3{SECRET_KEY}".encode(), date), service), "tc3_request")
        expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        return secret_id == SECRET_ID and hmac.compare_digest(expected, signature)

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request_id = str(uuid.uuid4())
        action, region = self.headers["X-TC-Action"], self.headers.get("X-TC-Region", "")
        try:
            if not self._signed(body):
                raise CvmError("AuthFailure.SignatureFailure", "The provided credentials could not be validated.")
            answer = self.server.act(action, region, json.loads(body))
        except CvmError as error:
            answer = {"Error": {"Code": error.code, "Message": error.message}}
        payload = json.dumps({"Response": {**answer, "RequestId": request_id}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
