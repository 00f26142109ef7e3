"""`gpu-assist catalog refresh aliyun`: Alibaba Cloud's ECS API through the official SDK (alibabacloud-ecs20140526),
sent to a local server that answers in the documented format of ECS API version 2014-05-26 (`DescribeInstanceTypes`,
`DescribePrice`; tests/fixtures/aliyun/README.md)."""

from __future__ import annotations

import shutil

import pytest
from refresh_fakes import EcsServer, aliyun_environment
from support import CATALOGS, TODAY, running

from gpu_assist.catalog import validate_directory
from gpu_assist.catalog.gpus import load_gpus
from gpu_assist.cli import main
from gpu_assist.sources.refresh import refresh

pytest.importorskip("alibabacloud_ecs20140526")

from gpu_assist.clouds.sdk import aliyun as aliyun_sdk  # noqa: E402
from gpu_assist.clouds.sdk.aliyun import ecs_client  # noqa: E402
from gpu_assist.sources.aliyun import SOURCE_KEY, AliyunPriceSource  # noqa: E402

@pytest.fixture
def ecs(monkeypatch):
    aliyun_environment(monkeypatch, access_key_id="LTAItest", access_key_secret="testsecret")
    with running(EcsServer()) as server:
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


@pytest.mark.clock
def test_the_cli_refreshes_a_copy_of_the_catalog_and_says_what_it_wrote(ecs, catalog_dir, monkeypatch, capsys):

    endpoint = f"127.0.0.1:{ecs.server_port}"
    monkeypatch.setattr(aliyun_sdk, "default_client", lambda region: ecs_client(region, endpoint))
    assert main(["catalog", "refresh", "aliyun", "--regions", "cn-hangzhou", "--catalog-dir", str(catalog_dir)]) == 0
    assert "aliyun: 5 offers" in capsys.readouterr().out
    assert validate_directory(catalog_dir) == []
