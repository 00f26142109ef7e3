"""The local servers the price sources' tests refresh against, each answering in its API's documented format from
the recorded responses in tests/fixtures/<cloud>/ (see each README): Tencent Cloud's CVM API 2017-03-12
(`DescribeZoneInstanceConfigInfos`), Alibaba Cloud's ECS API 2014-05-26 (`DescribeInstanceTypes`, `DescribePrice`),
Huawei Cloud's ECS API v1 (`ListFlavors`), BSS API v2 (the ratings) and IAM v3 (the project lookup), and Google's
Cloud Billing Catalog API v1 (`services.skus.list`, built from its documented format). Each can
throttle its next `throttle` requests as its API does. Shared by each cloud's refresh tests and the refresh
conformance suite."""

from __future__ import annotations

import http.server
import json
import urllib.parse

from support import FIXTURES, free_port

from gpu_assist.sources import gcp_billing

_CVM_THROTTLED = {"Response": {"Error": {"Code": "RequestLimitExceeded", "Message": "request limit exceeded"},
                           "RequestId": "0b7a8f3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b"}}


class CvmServer(http.server.ThreadingHTTPServer):
    """Answers DescribeZoneInstanceConfigInfos from the fixtures by the charge-type filter; `throttle` first."""

    def __init__(self):
        super().__init__(("127.0.0.1", free_port()), _CvmHandler)
        self.throttle = 0
        self.calls: list[tuple[str, str, str]] = []  # (action, region, charge type)


class _CvmHandler(http.server.BaseHTTPRequestHandler):
    server: CvmServer

    def log_message(self, *args):
        pass

    def do_POST(self):
        params = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        charge = params["Filters"][0]["Values"][0]
        self.server.calls.append((self.headers["X-TC-Action"], self.headers["X-TC-Region"], charge))
        if self.server.throttle:
            self.server.throttle -= 1
            body = json.dumps(_CVM_THROTTLED).encode()
        else:
            body = (FIXTURES / "tencent" / f"DescribeZoneInstanceConfigInfos_{charge}.json").read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


_ECS_THROTTLED = {"RequestId": "0B7A8F3C-1C2D-4E5F-8A9B-0C1D2E3F4A5B", "HostId": "ecs.aliyuncs.com",
              "Code": "Throttling.User", "Message": "Request was denied due to user flow control."}


class EcsServer(http.server.ThreadingHTTPServer):
    """Answers DescribeInstanceTypes (two pages) and DescribePrice from the fixtures; `throttle` first."""

    def __init__(self):
        super().__init__(("127.0.0.1", free_port()), _EcsHandler)
        self.throttle = 0
        self.calls: list[str] = []


class _EcsHandler(http.server.BaseHTTPRequestHandler):
    server: EcsServer

    def log_message(self, *args):
        pass

    def do_POST(self):
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
        action = self.headers["x-acs-action"]
        self.server.calls.append(action)
        status, name = 200, None
        if self.server.throttle:
            self.server.throttle -= 1
            status, body = 400, json.dumps(_ECS_THROTTLED).encode()
        elif action == "DescribeInstanceTypes":
            name = "DescribeInstanceTypes_page2.json" if query.get("NextToken") else "DescribeInstanceTypes_page1.json"
        else:
            name = f"DescribePrice_{query['InstanceType']}_{query['PriceUnit']}.json"
            if not (FIXTURES / "aliyun" / name).exists():
                status, name = 400, "DescribePrice_not_sold.json"
        if name:
            body = (FIXTURES / "aliyun" / name).read_bytes()
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def aliyun_environment(monkeypatch, **values):
    """The SDK's credential chain reads its environment variables once, at import (`auth_util`): set both."""
    from alibabacloud_credentials.utils import auth_util

    for name, value in values.items():
        monkeypatch.setattr(auth_util, f"environment_{name.lower()}", value)
        variable = f"ALIBABA_CLOUD_{name.upper()}"
        monkeypatch.setenv(variable, value) if value else monkeypatch.delenv(variable, raising=False)


PROJECT = "0b7a8f3c1c2d4e5f8a9b0c1d2e3f4a5b"
DOMAIN = "d0a1b2c3d4e5f60718293a4b5c6d7e8f"
# IAM v3 (KeystoneListProjects, KeystoneListAuthDomains): how the SDK finds the region's project and the account
_IAM = {"/v3/projects": {"projects": [{"id": PROJECT, "name": "cn-north-4", "domain_id": DOMAIN, "enabled": True}]},
        "/v3/auth/domains": {"domains": [{"id": DOMAIN, "name": "gpu-assist-test", "enabled": True}]}}
# The rating fixtures' results in order (tests/fixtures/huawei/README.md): the fake answers each product asked about
# with its own result, under the id the request gave it.
_RATED = ["p2s.2xlarge.8.linux", "p2s.16xlarge.8.linux", "pi2.2xlarge.4.linux", "pi3.2xlarge.4.linux"]
_REFUSED = {"error_code": "CBC.0100", "error_msg": "Invalid parameter.", "error_details": None}
_FILES = {"/v1/{project}/cloudservers/flavors": "ListFlavors.json",
          "/v2/bills/ratings/on-demand-resources": "ListOnDemandResourceRatings.json",
          "/v2/bills/ratings/period-resources/subscribe-rate": "ListRateOnPeriodDetail.json"}


class HuaweiServer(http.server.ThreadingHTTPServer):
    """Answers ListFlavors and the two BSS ratings from the fixtures; `throttle` requests first get HTTP 429."""

    def __init__(self):
        super().__init__(("127.0.0.1", free_port()), _HuaweiHandler)
        self.throttle = 0
        self.refuse = ""  # a resource_spec BSS cannot rate: a request naming it gets HTTP 400
        self.calls: list[tuple[str, str]] = []  # (method, path)
        self.bodies: list[dict] = []  # the BSS requests' JSON bodies
        self.signed: list[str] = []  # each request's Authorization scheme and access key

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class _HuaweiHandler(http.server.BaseHTTPRequestHandler):
    server: HuaweiServer

    def log_message(self, *args):
        pass

    def _answer(self):
        path = self.path.split("?")[0]
        self.server.calls.append((self.command, path))
        self.server.signed.append(" ".join(self.headers.get("Authorization", "").split(" ")[:2]))
        if self.command == "POST":
            self.server.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        if path in _IAM:
            return self._send(200, json.dumps(_IAM[path]).encode())
        name = _FILES.get(path.replace(PROJECT, "{project}"))
        status = 200
        if self.server.throttle:
            self.server.throttle -= 1
            status, name = 429, "throttled.json"
        if not name:
            return self._send(404, b'{"error_code":"APIGW.0101"}')
        body = (FIXTURES / "huawei" / name).read_bytes()
        if status == 200 and self.command == "POST":
            return self._rated(json.loads(body), self.server.bodies[-1]["product_infos"])
        self._send(status, body)

    def _rated(self, recorded: dict, asked: list[dict]):
        """The recorded answer cut to the products asked, each under the id the request gave it."""
        if any(p["resource_spec"] == self.server.refuse for p in asked):
            return self._send(400, json.dumps(_REFUSED).encode())
        results = (recorded["official_website_rating_result"] if "official_website_rating_result" in recorded
                   else recorded)
        by_spec = dict(zip(_RATED, results["product_rating_results"]))
        results["product_rating_results"] = [dict(by_spec[p["resource_spec"]], id=p["id"]) for p in asked]
        self._send(200, json.dumps(recorded).encode())

    def _send(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=UTF-8")
        self.send_header("X-Request-Id", "2f3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer


class PricingServer(http.server.ThreadingHTTPServer):
    """AWS's Price List Query API (JSON 1.1, `AWSPriceListService.GetProducts`), answering every product asked for
    with the recorded m5.large item relabelled to the asked instance type (test prices, in a temporary catalog);
    `throttle` requests first get `ThrottlingException`, and every request gets `AccessDeniedException` while
    `denied`. botocore reaches it through `AWS_ENDPOINT_URL_PRICING`."""

    def __init__(self):
        super().__init__(("127.0.0.1", free_port()), _PricingHandler)
        self.throttle = 0
        self.denied = False
        self.calls = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class _PricingHandler(http.server.BaseHTTPRequestHandler):
    server: PricingServer

    def log_message(self, *args):
        pass

    def do_POST(self):
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.calls += 1
        if self.server.denied or self.server.throttle:
            code = "AccessDeniedException" if self.server.denied else "ThrottlingException"
            self.server.throttle -= 0 if self.server.denied else 1
            return self._send(400, {"__type": code, "message": "Rate exceeded" if code[0] == "T" else "denied"})
        item = json.loads((FIXTURES / "aws" / "GetProducts_m5_large.json").read_text())
        item["product"]["attributes"]["instanceType"] = next(
            f["Value"] for f in asked["Filters"] if f["Field"] == "instanceType")
        self._send(200, {"PriceList": [json.dumps(item)], "FormatVersion": "aws_v1"})

    def _send(self, status, answer):
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("x-amzn-RequestId", "6c1f4e2b-3d5a-4b7c-8e9f-0a1b2c3d4e5f")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


# Google's Cloud Billing Catalog API v1, `services.skus.list`: `{"skus": [Sku…], "nextPageToken"}`, each Sku with its
# category (resourceFamily, resourceGroup, usageType), serviceRegions and pricingInfo's tiered unit price (Money:
# units + nanos). The figures are GCP's public us-central1 rates as the bundled extracts give them.
SKUS_PATH = f"/v1/{gcp_billing.COMPUTE_SERVICE}/skus"


def _sku(sku_id: str, description: str, group: str, usage: str, price: str, *, family: str = "Compute",
         unit: str = "h", regions: tuple[str, ...] = ("us-central1",)) -> dict:
    units, _, fraction = price.partition(".")
    return {
        "name": f"{gcp_billing.COMPUTE_SERVICE}/skus/{sku_id}", "skuId": sku_id, "description": description,
        "category": {"serviceDisplayName": "Compute Engine", "resourceFamily": family, "resourceGroup": group,
                     "usageType": usage},
        "serviceRegions": list(regions),
        "pricingInfo": [{"summary": "", "effectiveTime": "2026-12-05T08:00:00.000Z", "currencyConversionRate": 1,
                         "pricingExpression": {"usageUnit": unit, "displayQuantity": 1, "baseUnit": "s",
                                               "baseUnitConversionFactor": 3600, "usageUnitDescription": "hour",
                                               "tieredRates": [{"startUsageAmount": 0, "unitPrice": {
                                                   "currencyCode": "USD", "units": units,
                                                   "nanos": int(fraction.ljust(9, "0")[:9])}}]}}],
        "serviceProviderName": "Google",
    }


PAGE_1 = [
    _sku("A2C0-0001", "A2 Instance Core running in Americas", "CPU", "OnDemand", "0.031611"),
    _sku("A2R0-0001", "A2 Instance Ram running in Americas", "RAM", "OnDemand", "0.004237", unit="GiBy.h"),
    _sku("A100-0001", "Nvidia Tesla A100 GPU running in Americas", "GPU", "OnDemand", "2.933908"),
    _sku("A2C0-0002", "Spot Preemptible A2 Instance Core running in Americas", "CPU", "Preemptible", "0.00975"),
    _sku("A2R0-0002", "Spot Preemptible A2 Instance Ram running in Americas", "RAM", "Preemptible", "0.0013",
         unit="GiBy.h"),
    _sku("A100-0002", "Nvidia Tesla A100 GPU attached to Spot Preemptible VMs running in Americas", "GPU",
         "Preemptible", "1.1"),
    _sku("DISK-0001", "Storage PD Capacity", "SSD", "OnDemand", "0.17", family="Storage", unit="GiBy.mo"),
]
PAGE_2 = [
    _sku("A2C0-0003", "Commitment v1: A2 Cpu in Americas for 1 Year", "CPU", "Commit1Yr", "0.019915"),
    _sku("A2R0-0003", "Commitment v1: A2 Ram in Americas for 1 Year", "RAM", "Commit1Yr", "0.002669",
         unit="GiBy.h"),
    _sku("A100-0003", "Commitment v1: Nvidia Tesla A100 GPU in Americas for 1 Year", "GPU", "Commit1Yr", "1.848362"),
    # A Dynamic Workload Scheduler rate, listed as OnDemand and before the real one: queued capacity, pruned
    _sku("H100-0009", "Nvidia H100 80GB GPU attached to DWS Defined Duration VMs running in Americas", "GPU",
         "OnDemand", "4.200761"),
    _sku("H100-0001", "Nvidia H100 80GB GPU running in Americas", "GPU", "OnDemand", "11.06125"),
    _sku("A3C0-0001", "A3 Instance Core running in Americas", "CPU", "OnDemand", "0.033"),
    _sku("A3R0-0001", "A3 Instance Ram running in Americas", "RAM", "OnDemand", "0.00442", unit="GiBy.h"),
]


def gcp_skus(path: str, query: str, base: str) -> bytes | None:
    """The Cloud Billing Catalog API v1's `services.skus.list` for Compute Engine, in two pages (serve with
    `support.serving`)."""
    if path != SKUS_PATH:
        return None
    if "pageToken=page-2" in query:
        return json.dumps({"skus": PAGE_2}).encode()
    return json.dumps({"skus": PAGE_1, "nextPageToken": "page-2"}).encode()
