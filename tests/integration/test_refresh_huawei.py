"""`gpu-assist catalog refresh huawei`: Huawei Cloud's ECS and BSS APIs through the official SDKs (huaweicloudsdkecs,
huaweicloudsdkbss), sent to a local server that answers in the documented formats of ECS API v1 (`ListFlavors`) and
BSS API v2 (`ListOnDemandResourceRatings`, `ListRateOnPeriodDetail`); tests/fixtures/huawei/README.md."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import zlib

import pytest
from support import CATALOGS, FIXTURES, SOURCES, TODAY, free_port, running

from gpu_assist.catalog import validate_directory
from gpu_assist.catalog.gpus import load_gpus
from gpu_assist.cli import main
from gpu_assist.errors import GpuAssistError
from gpu_assist.sources.china import SPECS_FILE, read_specs
from gpu_assist.sources.refresh import refresh

pytest.importorskip("huaweicloudsdkecs.v2")
pytest.importorskip("huaweicloudsdkbss.v2")

from gpu_assist.clouds.sdk import huawei as huawei_sdk  # noqa: E402
from gpu_assist.clouds.sdk.huawei import bss_client, ecs_client  # noqa: E402
from gpu_assist.sources.huawei import SOURCE_KEY, HuaweiPriceSource  # noqa: E402

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


class _HuaweiServer(http.server.ThreadingHTTPServer):
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
    server: _HuaweiServer

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


@pytest.fixture
def huawei(monkeypatch, request):
    # The SDK caches a project id per access key and region for the process: a key of each test's own makes
    # every test look its project up, whatever ran before.
    monkeypatch.setenv("HUAWEICLOUD_SDK_AK", f"HPUA{zlib.crc32(request.node.name.encode()):08X}")
    monkeypatch.setenv("HUAWEICLOUD_SDK_SK", "testsecret")
    for name in ("HUAWEICLOUD_SDK_PROJECT_ID", "HUAWEICLOUD_SDK_DOMAIN_ID"):
        monkeypatch.delenv(name, raising=False)  # looked up through IAM, as for a team that sets only its keys
    with running(_HuaweiServer()) as server:
        monkeypatch.setenv("HUAWEICLOUD_SDK_IAM_ENDPOINT", server.endpoint)
        yield server


@pytest.fixture
def catalog_dir(tmp_path):
    directory = tmp_path / "catalogs"
    (directory / "sources").mkdir(parents=True)
    for name in ("gpus.csv", "fx.csv", "SOURCES.md", "huawei.csv"):
        shutil.copy(CATALOGS / name, directory / name)
    shutil.copy(SOURCES / SPECS_FILE, directory / "sources" / SPECS_FILE)
    return directory


def _source(server, **options):
    documented = read_specs(SOURCES / SPECS_FILE)["huawei"]
    return HuaweiPriceSource(["cn-north-4"], documented, load_gpus(CATALOGS / "gpus.csv"), today=TODAY,
                             ecs=lambda region: ecs_client(region, server.endpoint),
                             bss=lambda: bss_client(server.endpoint), sleep=lambda _s: None, **options)


def test_the_refresh_writes_hourly_and_monthly_rows_that_validate_and_keeps_the_articles_rows(huawei, catalog_dir):
    before = (catalog_dir / "huawei.csv").read_text(encoding="utf-8").splitlines()
    source = _source(huawei)
    report = refresh(source, catalog_dir)
    assert huawei.calls[-3:] == [("GET", f"/v1/{PROJECT}/cloudservers/flavors"),
                            ("POST", "/v2/bills/ratings/on-demand-resources"),
                            ("POST", "/v2/bills/ratings/period-resources/subscribe-rate")]
    assert {"/v3/projects", "/v3/auth/domains"} <= {path for _, path in huawei.calls}  # project, account: IAM
    assert set(huawei.signed) == {f"SDK-HMAC-SHA256 Access={os.environ['HUAWEICLOUD_SDK_AK']},"}  # all signed
    hourly, monthly = huawei.bodies
    assert [p["resource_spec"] for p in hourly["product_infos"]] == [
        "p2s.2xlarge.8.linux", "p2s.16xlarge.8.linux", "pi2.2xlarge.4.linux", "pi3.2xlarge.4.linux"]
    assert hourly["project_id"] == PROJECT and {p["usage_measure_id"] for p in hourly["product_infos"]} == {4}
    assert {(p["period_type"], p["period_num"]) for p in monthly["product_infos"]} == {(2, 1)}
    assert validate_directory(catalog_dir) == []
    lines = (catalog_dir / "huawei.csv").read_text(encoding="utf-8").splitlines()
    assert set(before) <= set(lines)  # the articles' rows stay
    rows = {line.split(",")[3]: line.split(",") for line in lines if f",{SOURCE_KEY}," in line}
    assert sorted(rows) == ["p2s.16xlarge.8", "p2s.2xlarge.8", "pi2.2xlarge.4", "pi3.2xlarge.4"]
    assert report.rows_written == len(before) - 1 + 4
    p2s = rows["p2s.16xlarge.8"]
    assert p2s[:10] == ["huawei", "cn-north-4", "", "p2s.16xlarge.8", "V100-32GB", "8", "32", "64", "512", "unknown"]
    assert (p2s[10], p2s[11], p2s[15], p2s[18], p2s[19]) == ("CNY", "143.88", "48400", TODAY.isoformat(), "yes")
    assert rows["pi2.2xlarge.4"][4:7] == ["T4", "1", "16"]  # from the documentation: the flavor names no GPU
    assert rows["pi3.2xlarge.4"][4:7] == ["L4", "1", "24"]  # from the flavor's own info:gpus
    assert source.skipped == {"withdrawn from sale (abandon)": 1, "GPU Z9 not in gpus.csv": 1}


def test_a_flavor_bss_cannot_rate_is_skipped_and_the_others_priced_one_by_one(huawei):
    huawei.refuse = "pi3.2xlarge.4.linux"
    source = _source(huawei)
    rows = {row.instance_type: row.csv_fields() for row in source.rows()}
    assert sorted(rows) == ["p2s.16xlarge.8", "p2s.2xlarge.8", "pi2.2xlarge.4"]
    assert (rows["p2s.16xlarge.8"]["on_demand_hourly"], rows["p2s.16xlarge.8"]["monthly"]) == ("143.88", "48400")
    assert (rows["pi2.2xlarge.4"]["on_demand_hourly"], rows["pi2.2xlarge.4"]["monthly"]) == ("6.05", "1900")
    assert source.skipped["not rated in the region (hourly)"] == 1
    assert source.skipped["not rated in the region (monthly)"] == 1
    assert source.skipped["no price in the region"] == 1
    assert len([body for body in huawei.bodies if len(body["product_infos"]) == 1]) == 8  # 4 flavors × 2 models


def test_throttling_is_retried_with_backoff(huawei):
    huawei.throttle = 2
    waits: list[float] = []
    source = _source(huawei)
    source.sleep = waits.append
    assert len(source.rows()) == 4
    assert waits == [0.5, 1.0]


def test_a_failure_changes_nothing(huawei, catalog_dir):
    huawei.throttle = 100
    before = (catalog_dir / "huawei.csv").read_bytes()
    with pytest.raises(GpuAssistError, match="still throttled"):
        refresh(_source(huawei), catalog_dir)
    assert (catalog_dir / "huawei.csv").read_bytes() == before
    assert [p.name for p in catalog_dir.iterdir() if p.name.startswith(".")] == []


def test_without_credentials_the_refresh_exits_2_with_one_line_naming_the_variables(tmp_path, monkeypatch, capsys):
    for name in ("HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK", "HUAWEICLOUD_SDK_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GPU_ASSIST_CLOUD_HOST", "none")  # whatever machine runs the suite: no metadata service call
    assert main(["catalog", "refresh", "huawei", "--catalog-dir", str(CATALOGS)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK" in err[0]


@pytest.mark.clock
def test_the_cli_refreshes_a_copy_of_the_catalog_and_says_what_it_wrote(huawei, catalog_dir, monkeypatch, capsys):

    monkeypatch.setattr(huawei_sdk, "default_client", lambda region: ecs_client(region, huawei.endpoint))
    monkeypatch.setattr(huawei_sdk, "bss_client", lambda: bss_client(huawei.endpoint))
    assert main(["catalog", "refresh", "huawei", "--regions", "cn-north-4", "--catalog-dir", str(catalog_dir)]) == 0
    out = capsys.readouterr().out
    assert "huawei: " in out and "skipped GPU Z9 not in gpus.csv 1" in out
    assert validate_directory(catalog_dir) == []
