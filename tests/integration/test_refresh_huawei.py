"""`gpu-assist catalog refresh huawei`: Huawei Cloud's ECS and BSS APIs through the official SDKs (huaweicloudsdkecs,
huaweicloudsdkbss), sent to a local server that answers in the documented formats of ECS API v1 (`ListFlavors`) and
BSS API v2 (`ListOnDemandResourceRatings`, `ListRateOnPeriodDetail`); tests/fixtures/huawei/README.md."""

from __future__ import annotations

import os
import shutil
import zlib

import pytest
from refresh_fakes import PROJECT, HuaweiServer
from support import CATALOGS, SOURCES, TODAY, running

from gpu_assist.catalog import validate_directory
from gpu_assist.catalog.gpus import load_gpus
from gpu_assist.cli import main
from gpu_assist.sources.china import SPECS_FILE, read_specs
from gpu_assist.sources.refresh import refresh

pytest.importorskip("huaweicloudsdkecs.v2")
pytest.importorskip("huaweicloudsdkbss.v2")

from gpu_assist.clouds.sdk import huawei as huawei_sdk  # noqa: E402
from gpu_assist.clouds.sdk.huawei import bss_client, ecs_client  # noqa: E402
from gpu_assist.sources.huawei import SOURCE_KEY, HuaweiPriceSource  # noqa: E402

@pytest.fixture
def huawei(monkeypatch, request):
    # The SDK caches a project id per access key and region for the process: a key of each test's own makes
    # every test look its project up, whatever ran before.
    monkeypatch.setenv("HUAWEICLOUD_SDK_AK", f"HPUA{zlib.crc32(request.node.name.encode()):08X}")
    monkeypatch.setenv("HUAWEICLOUD_SDK_SK", "testsecret")
    for name in ("HUAWEICLOUD_SDK_PROJECT_ID", "HUAWEICLOUD_SDK_DOMAIN_ID"):
        monkeypatch.delenv(name, raising=False)  # looked up through IAM, as for a team that sets only its keys
    with running(HuaweiServer()) as server:
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


@pytest.mark.clock
def test_the_cli_refreshes_a_copy_of_the_catalog_and_says_what_it_wrote(huawei, catalog_dir, monkeypatch, capsys):

    monkeypatch.setattr(huawei_sdk, "default_client", lambda region: ecs_client(region, huawei.endpoint))
    monkeypatch.setattr(huawei_sdk, "bss_client", lambda: bss_client(huawei.endpoint))
    assert main(["catalog", "refresh", "huawei", "--regions", "cn-north-4", "--catalog-dir", str(catalog_dir)]) == 0
    out = capsys.readouterr().out
    assert "huawei: " in out and "skipped GPU Z9 not in gpus.csv 1" in out
    assert validate_directory(catalog_dir) == []
