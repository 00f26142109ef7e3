"""`catalog refresh gcp` against Google's own client (google-cloud-billing, REST transport) talking to a local server
that answers as the Cloud Billing Catalog API v1 documents `services.skus.list`: `{"skus": [Sku…], "nextPageToken"}`,
each Sku with its category (resourceFamily, resourceGroup, usageType), serviceRegions and pricingInfo's tiered
unit price (Money: units + nanos). The figures are GCP's public us-central1 rates as the bundled extracts give them."""

from __future__ import annotations

import csv
import datetime as dt
import os
import shutil
from decimal import Decimal

import pytest
from offline import LAPTOP, run_offline
from refresh_fakes import SKUS_PATH, gcp_skus
from support import CATALOGS, offer, serving

from gpu_assist.cli import main
from gpu_assist.errors import CatalogError
from gpu_assist.sources import gcp_billing
from gpu_assist.sources.refresh import refresh

TODAY = dt.date(2026, 12, 5)


@pytest.fixture
def server():
    with serving(gcp_skus) as recorded:
        yield recorded


@pytest.fixture
def catalog_dir(make_catalog):
    zones = [offer(provider="gcp", region="us-central1", zone=f"us-central1-{z}", instance_type="a2-highgpu-1g",
                   gpu="A100", gpu_count="1", vcpus="12", memory_gib="85", on_demand_hourly="3.67339",
                   spot_hourly="1.3", source="skypilot-gcp", as_of="", imported="2026-12-02") for z in "abc"]
    a3 = offer(provider="gcp", region="us-central1", zone="us-central1-a", instance_type="a3-highgpu-8g", gpu="H100",
               gpu_count="8", gpu_memory_gib="80", vcpus="208", memory_gib="1872", on_demand_hourly="43.06615",
               source="skypilot-gcp", as_of="", imported="2026-12-02")
    elsewhere = offer(provider="gcp", region="europe-west4", zone="europe-west4-a", instance_type="a2-highgpu-1g",
                      gpu="A100", gpu_count="1", vcpus="12", memory_gib="85", on_demand_hourly="3.9",
                      source="skypilot-gcp", as_of="", imported="2026-12-02")
    return make_catalog(*zones, a3, elsewhere, load=False)


def _client(server):
    return gcp_billing.catalog_client(api_key="test-key", endpoint=server.base)


def test_machines_are_priced_from_their_core_ram_and_gpu_skus_per_region(server, catalog_dir):
    report = refresh(gcp_billing.GcpBillingSource(catalog_dir, TODAY, _client(server)), catalog_dir)
    assert [hit.split("?")[0] for hit in server.hits] == [SKUS_PATH, SKUS_PATH]  # page 1, then nextPageToken
    rows = {(r["instance_type"], r["region"], r["zone"]): r
            for r in csv.DictReader((catalog_dir / "gcp.csv").open(encoding="utf-8"))}
    a2 = rows[("a2-highgpu-1g", "us-central1", "")]  # the three zone rows become one region row
    assert Decimal(a2["on_demand_hourly"]) == 12 * Decimal("0.031611") + 85 * Decimal("0.004237") + \
        Decimal("2.933908")
    assert Decimal(a2["spot_hourly"]) == 12 * Decimal("0.00975") + 85 * Decimal("0.0013") + Decimal("1.1")
    assert Decimal(a2["reserved_1y_hourly"]) == 12 * Decimal("0.019915") + 85 * Decimal("0.002669") + \
        Decimal("1.848362")
    assert a2["reserved_3y_hourly"] == ""  # no 3-year SKU listed: unknown, not guessed
    assert (a2["source"], a2["as_of"], a2["imported"], a2["verified"]) == ("gcp-billing", "2026-12-05",
                                                                           "2026-12-05", "yes")
    a3 = rows[("a3-highgpu-8g", "us-central1", "")]  # the DWS GPU SKU came first and was pruned
    assert Decimal(a3["on_demand_hourly"]) == 208 * Decimal("0.033") + 1872 * Decimal("0.00442") + \
        8 * Decimal("11.06125")
    assert a3["spot_hourly"] == ""
    assert not any(key[0] == "a2-highgpu-1g" and key[2] for key in rows if key[1] == "us-central1")
    assert rows[("a2-highgpu-1g", "europe-west4", "europe-west4-a")]["source"] == "skypilot-gcp"  # no SKU there: kept
    assert report.skipped == {"a part (core, RAM or GPU) has no SKU in the region": 1}


def test_a_failing_page_leaves_the_catalog_as_it_was(server, catalog_dir):
    before = (catalog_dir / "gcp.csv").read_bytes()
    server.broken.add("pageToken=page-2")
    with pytest.raises(CatalogError, match="catalog is unchanged"):
        refresh(gcp_billing.GcpBillingSource(catalog_dir, TODAY, _client(server)), catalog_dir)
    assert (catalog_dir / "gcp.csv").read_bytes() == before


def test_off_gcp_application_default_credentials_skip_the_metadata_probe(monkeypatch, tmp_path, catalog_dir,
                                                                          capsys):
    monkeypatch.delenv("NO_GCE_CHECK", raising=False)
    monkeypatch.setenv("GPU_ASSIST_CLOUD_HOST", "none")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "absent.json"))
    monkeypatch.delenv(gcp_billing.API_KEY_VARIABLE, raising=False)
    with pytest.raises(CatalogError, match="no GCP credentials"):
        gcp_billing.default_client()
    assert os.environ["NO_GCE_CHECK"] == "true"
    before = (catalog_dir / "gcp.csv").read_bytes()
    assert main(["catalog", "refresh", "gcp", "--catalog-dir", str(catalog_dir)]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "no GCP credentials: set GPU_ASSIST_GCP_API_KEY" in said[0]  # one line, no traceback
    assert (catalog_dir / "gcp.csv").read_bytes() == before


@pytest.mark.clock
def test_on_a_laptop_without_credentials_the_refresh_says_so_in_one_line_and_tries_no_network(tmp_path):
    directory = tmp_path / "catalogs"
    directory.mkdir()
    shutil.copy(CATALOGS / "gpus.csv", directory / "gpus.csv")
    run = run_offline(["catalog", "refresh", "gcp", "--catalog-dir", str(directory)], tmp_path, dmi=LAPTOP)
    lines = run.stderr.splitlines()
    assert (run.returncode, run.stdout) == (2, ""), run.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: no GCP credentials"), run.stderr[-2000:]
    assert run.attempts == []  # not even metadata.google.internal
