"""`gpu-assist catalog refresh tencent`: Tencent Cloud's CVM API through the official SDK (tencentcloud-sdk-python-cvm),
sent to a local server that answers in the documented format of CVM API version 2017-03-12
(`DescribeZoneInstanceConfigInfos` per charge type: POSTPAID_BY_HOUR, SPOTPAID, PREPAID;
tests/fixtures/tencent/README.md)."""

from __future__ import annotations

import http.server
import json
import shutil

import pytest
from support import CATALOGS, FIXTURES, TODAY, free_port, running

from gpu_assist.catalog import validate_directory
from gpu_assist.cli import main
from gpu_assist.errors import GpuAssistError
from gpu_assist.sources.refresh import refresh
from gpu_assist.clouds.sdk import tencent as tencent_sdk
from gpu_assist.clouds.sdk.tencent import cvm_client
from gpu_assist.sources.tencent import SOURCE_KEY, TencentPriceSource

pytest.importorskip("tencentcloud.cvm.v20170312")

_THROTTLED = {"Response": {"Error": {"Code": "RequestLimitExceeded", "Message": "request limit exceeded"},
                           "RequestId": "0b7a8f3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b"}}


class _CvmServer(http.server.ThreadingHTTPServer):
    """Answers DescribeZoneInstanceConfigInfos from the fixtures by the charge-type filter; `throttle` first."""

    def __init__(self):
        super().__init__(("127.0.0.1", free_port()), _CvmHandler)
        self.throttle = 0
        self.calls: list[tuple[str, str, str]] = []  # (action, region, charge type)


class _CvmHandler(http.server.BaseHTTPRequestHandler):
    server: _CvmServer

    def log_message(self, *args):
        pass

    def do_POST(self):
        params = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        charge = params["Filters"][0]["Values"][0]
        self.server.calls.append((self.headers["X-TC-Action"], self.headers["X-TC-Region"], charge))
        if self.server.throttle:
            self.server.throttle -= 1
            body = json.dumps(_THROTTLED).encode()
        else:
            body = (FIXTURES / "tencent" / f"DescribeZoneInstanceConfigInfos_{charge}.json").read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def cvm(monkeypatch):
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", "AKIDtest")
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "testkey")
    with running(_CvmServer()) as server:
        yield server


@pytest.fixture
def catalog_dir(tmp_path):
    directory = tmp_path / "catalogs"
    directory.mkdir()
    for name in ("gpus.csv", "fx.csv", "SOURCES.md", "tencent.csv"):
        shutil.copy(CATALOGS / name, directory / name)
    return directory


def _source(server, **options):
    endpoint = f"127.0.0.1:{server.server_port}"
    documented = {"GT4": ("A100", "40"), "GN7": ("T4", "16")}
    return TencentPriceSource(["ap-guangzhou"], documented, today=TODAY,
                              client=lambda region: cvm_client(region, endpoint), sleep=lambda _s: None, **options)


def test_the_refresh_writes_on_demand_spot_and_monthly_rows_that_validate_and_keeps_the_published_list(
        cvm, catalog_dir):
    before = (catalog_dir / "tencent.csv").read_text(encoding="utf-8").splitlines()
    source = _source(cvm)
    report = refresh(source, catalog_dir)
    assert cvm.calls == [("DescribeZoneInstanceConfigInfos", "ap-guangzhou", "POSTPAID_BY_HOUR"),
                         ("DescribeZoneInstanceConfigInfos", "ap-guangzhou", "SPOTPAID"),
                         ("DescribeZoneInstanceConfigInfos", "ap-guangzhou", "PREPAID")]
    assert validate_directory(catalog_dir) == []
    lines = (catalog_dir / "tencent.csv").read_text(encoding="utf-8").splitlines()
    assert set(before) <= set(lines)  # the 2021 list and the articles' rows stay
    rows = [line for line in lines if f",{SOURCE_KEY}," in line]
    assert len(rows) == 2 and report.rows_written == len(before) - 1 + 2
    gt4 = next(line for line in rows if "GT4.4XLARGE96" in line).split(",")
    assert gt4[:6] == ["tencent", "ap-guangzhou", "ap-guangzhou-3", "GT4.4XLARGE96", "A100", "1"]
    assert (gt4[11], gt4[12], gt4[18], gt4[19]) == ("27.45", "6.1", TODAY.isoformat(), "yes")
    assert gt4[15] == "12780"  # one month paid ahead (DiscountPrice), not 730 or 480 hours of the hourly price
    assert next(line for line in rows if "GN7.LARGE20" in line).split(",")[20] == "all:fractional-gpu"
    assert source.skipped == {"family PNV4 not documented": 1}  # its GPU model is not in the response


def test_throttling_is_retried_with_backoff(cvm):
    cvm.throttle = 2
    waits = []
    source = _source(cvm)
    source.sleep = waits.append
    assert len(source.rows()) == 2
    assert waits == [0.5, 1.0]


def test_a_failure_changes_nothing(cvm, catalog_dir):
    cvm.throttle = 100
    before = (catalog_dir / "tencent.csv").read_bytes()
    with pytest.raises(GpuAssistError, match="RequestLimitExceeded"):
        refresh(_source(cvm), catalog_dir)
    assert (catalog_dir / "tencent.csv").read_bytes() == before
    assert [p.name for p in catalog_dir.iterdir() if p.name.startswith(".")] == []


def test_without_credentials_the_refresh_exits_2_with_one_line_naming_the_variables(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("TENCENTCLOUD_SECRET_ID", raising=False)
    monkeypatch.delenv("TENCENTCLOUD_SECRET_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GPU_ASSIST_CLOUD_HOST", "none")  # whatever machine runs the suite: no metadata service call
    assert main(["catalog", "refresh", "tencent", "--catalog-dir", str(CATALOGS)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY" in err[0]


@pytest.mark.clock
def test_the_cli_refreshes_a_copy_of_the_catalog_and_says_what_it_wrote(cvm, catalog_dir, monkeypatch, capsys):

    endpoint = f"127.0.0.1:{cvm.server_port}"
    monkeypatch.setattr(tencent_sdk, "default_client", lambda region: cvm_client(region, endpoint))
    assert main(["catalog", "refresh", "tencent", "--regions", "ap-guangzhou", "--catalog-dir", str(catalog_dir)]) == 0
    out = capsys.readouterr().out
    assert "tencent: " in out and "skipped family PNV4 not documented 1" in out
    assert validate_directory(catalog_dir) == []
