"""`gpu-assist catalog refresh tencent`: Tencent Cloud's CVM API through the official SDK (tencentcloud-sdk-python-cvm),
sent to a local server that answers in the documented format of CVM API version 2017-03-12
(`DescribeZoneInstanceConfigInfos` per charge type: POSTPAID_BY_HOUR, SPOTPAID, PREPAID;
tests/fixtures/tencent/README.md)."""

from __future__ import annotations

import shutil

import pytest
from refresh_fakes import CvmServer
from support import CATALOGS, TODAY, running

from gpu_assist.catalog import validate_directory
from gpu_assist.cli import main
from gpu_assist.sources.refresh import refresh
from gpu_assist.clouds.sdk import tencent as tencent_sdk
from gpu_assist.clouds.sdk.tencent import cvm_client
from gpu_assist.sources.tencent import SOURCE_KEY, TencentPriceSource

pytest.importorskip("tencentcloud.cvm.v20170312")

@pytest.fixture
def cvm(monkeypatch):
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", "AKIDtest")
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "testkey")
    with running(CvmServer()) as server:
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


@pytest.mark.clock
def test_the_cli_refreshes_a_copy_of_the_catalog_and_says_what_it_wrote(cvm, catalog_dir, monkeypatch, capsys):

    endpoint = f"127.0.0.1:{cvm.server_port}"
    monkeypatch.setattr(tencent_sdk, "default_client", lambda region: cvm_client(region, endpoint))
    assert main(["catalog", "refresh", "tencent", "--regions", "ap-guangzhou", "--catalog-dir", str(catalog_dir)]) == 0
    out = capsys.readouterr().out
    assert "tencent: " in out and "skipped family PNV4 not documented 1" in out
    assert validate_directory(catalog_dir) == []
