"""`gpu-assist catalog refresh aliyun`: Alibaba Cloud's ECS API through the official SDK (alibabacloud-ecs20140526),
sent to a local server that answers in the documented format of ECS API version 2014-05-26 (`DescribeInstanceTypes`,
`DescribePrice`; tests/fixtures/aliyun/README.md)."""

from __future__ import annotations

import http.server
import json
import shutil
import urllib.parse

import pytest
from support import CATALOGS, FIXTURES, TODAY, free_port, running

from gpu_assist.catalog import validate_directory
from gpu_assist.catalog.gpus import load_gpus
from gpu_assist.cli import main
from gpu_assist.errors import GpuAssistError
from gpu_assist.sources.refresh import refresh

pytest.importorskip("alibabacloud_ecs20140526")

from gpu_assist.clouds.sdk import aliyun as aliyun_sdk  # noqa: E402
from gpu_assist.clouds.sdk.aliyun import ecs_client  # noqa: E402
from gpu_assist.sources.aliyun import SOURCE_KEY, AliyunPriceSource  # noqa: E402

_THROTTLED = {"RequestId": "0B7A8F3C-1C2D-4E5F-8A9B-0C1D2E3F4A5B", "HostId": "ecs.aliyuncs.com",
              "Code": "Throttling.User", "Message": "Request was denied due to user flow control."}


class _EcsServer(http.server.ThreadingHTTPServer):
    """Answers DescribeInstanceTypes (two pages) and DescribePrice from the fixtures; `throttle` first."""

    def __init__(self):
        super().__init__(("127.0.0.1", free_port()), _EcsHandler)
        self.throttle = 0
        self.calls: list[str] = []


class _EcsHandler(http.server.BaseHTTPRequestHandler):
    server: _EcsServer

    def log_message(self, *args):
        pass

    def do_POST(self):
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
        action = self.headers["x-acs-action"]
        self.server.calls.append(action)
        status, name = 200, None
        if self.server.throttle:
            self.server.throttle -= 1
            status, body = 400, json.dumps(_THROTTLED).encode()
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


def _environment(monkeypatch, **values):
    """The SDK's credential chain reads its environment variables once, at import (`auth_util`): set both."""
    from alibabacloud_credentials.utils import auth_util

    for name, value in values.items():
        monkeypatch.setattr(auth_util, f"environment_{name.lower()}", value)
        variable = f"ALIBABA_CLOUD_{name.upper()}"
        monkeypatch.setenv(variable, value) if value else monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def ecs(monkeypatch):
    _environment(monkeypatch, access_key_id="LTAItest", access_key_secret="testsecret")
    with running(_EcsServer()) as server:
        yield server


@pytest.fixture
def catalog_dir(tmp_path):
    directory = tmp_path / "catalogs"
    directory.mkdir()
    for name in ("gpus.csv", "fx.csv", "SOURCES.md", "aliyun.csv"):
        shutil.copy(CATALOGS / name, directory / name)
    return directory


def _source(server):
    endpoint = f"127.0.0.1:{server.server_port}"
    return AliyunPriceSource(["cn-hangzhou"], load_gpus(CATALOGS / "gpus.csv"), today=TODAY,
                             client=lambda region: ecs_client(region, endpoint), sleep=lambda _s: None)


def test_the_refresh_writes_hourly_and_monthly_rows_that_validate_and_keeps_the_article_rows(ecs, catalog_dir):
    before = (catalog_dir / "aliyun.csv").read_text(encoding="utf-8").splitlines()
    source = _source(ecs)
    refresh(source, catalog_dir)
    assert validate_directory(catalog_dir) == []
    lines = (catalog_dir / "aliyun.csv").read_text(encoding="utf-8").splitlines()
    assert set(before) <= set(lines)
    rows = [line.split(",") for line in lines if f",{SOURCE_KEY}," in line]
    assert len(rows) == 1
    row = rows[0]
    assert row[:7] == ["aliyun", "cn-hangzhou", "", "ecs.gn7i-c8g1.2xlarge", "A10", "1", "24"]
    assert (row[10], row[11], row[15], row[18], row[19]) == ("CNY", "11.22", "4500", TODAY.isoformat(), "yes")
    assert source.skipped == {"GPU unnamed not in gpus.csv": 1,
                              "not sold in the region (InvalidInstanceType.ValueNotSupported)": 2}
    assert ecs.calls.count("DescribeInstanceTypes") == 2  # both pages


def test_throttling_is_retried_with_backoff(ecs):
    ecs.throttle = 2
    waits: list[float] = []
    source = _source(ecs)
    source.sleep = waits.append
    assert len(source.rows()) == 1
    assert waits == [0.5, 1.0]


def test_a_failure_changes_nothing(ecs, catalog_dir):
    ecs.throttle = 100
    before = (catalog_dir / "aliyun.csv").read_bytes()
    with pytest.raises(GpuAssistError, match="Throttling.User"):
        refresh(_source(ecs), catalog_dir)
    assert (catalog_dir / "aliyun.csv").read_bytes() == before


def test_without_credentials_the_refresh_exits_2_with_one_line_naming_the_variables(tmp_path, monkeypatch, capsys):
    _environment(monkeypatch, access_key_id=None, access_key_secret=None, security_token=None, credentials_uri=None,
                 credentials_file=None, ecs_metadata=None, ecs_metadata_disabled="true")  # no metadata service call
    monkeypatch.setattr("alibabacloud_credentials.utils.auth_util.enable_oidc_credential", False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["catalog", "refresh", "aliyun", "--catalog-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET" in err[0]


@pytest.mark.clock
def test_the_cli_refreshes_a_copy_of_the_catalog_and_says_what_it_wrote(ecs, catalog_dir, monkeypatch, capsys):

    endpoint = f"127.0.0.1:{ecs.server_port}"
    monkeypatch.setattr(aliyun_sdk, "default_client", lambda region: ecs_client(region, endpoint))
    assert main(["catalog", "refresh", "aliyun", "--regions", "cn-hangzhou", "--catalog-dir", str(catalog_dir)]) == 0
    assert "aliyun: 5 offers" in capsys.readouterr().out
    assert validate_directory(catalog_dir) == []
