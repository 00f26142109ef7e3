"""Public refreshers (no account) against recorded real-format responses served by a local HTTP server:
pagination, reservation terms → effective hourly, retries, and atomic failure (dead endpoint, 500 mid-way,
truncated file). The recorded pages are in tests/fixtures/azure and tests/fixtures/skypilot (see its README)."""

from __future__ import annotations

import csv
import datetime as dt
import json
from decimal import Decimal

import pytest
from support import CATALOGS, FIXTURES, free_port, offer, serving

from gpu_assist.errors import CatalogError
from gpu_assist.sources import public
from gpu_assist.sources.refresh import refresh

TODAY = dt.date(2026, 12, 3)
COMMIT = "00148f2af3672e2229b4f7bf8157d5a3f36e3c35"


def _recorded(path: str, query: str, base: str) -> bytes | None:
    if path == "/api/retail/prices":
        name = "retail_prices_page2.json" if "skip=3" in query else "retail_prices_page1.json"
        return (FIXTURES / "azure" / name).read_text().replace("{base}", base).encode()
    if path == f"/{COMMIT}/catalogs/v8/aws/vms.csv":
        return (FIXTURES / "skypilot" / "aws_vms.csv").read_bytes()
    if path == f"/repos/skypilot-org/skypilot-catalog/commits/{COMMIT}":
        return json.dumps(_GITHUB_COMMIT).encode()
    return None


# GitHub REST API "Get a commit" (version 2022-11-28), the fields the refresher reads and their neighbours as the
# documented response has them; the committer's date is when the catalog's fetchers committed what they read.
_GITHUB_COMMIT = {
    "sha": COMMIT, "url": f"https://api.github.com/repos/skypilot-org/skypilot-catalog/commits/{COMMIT}",
    "commit": {"author": {"name": "github-actions[bot]", "date": "2026-11-28T07:41:09Z"},
               "committer": {"name": "GitHub", "date": "2026-11-28T23:58:31-05:00"},
               "message": "[Bot] Update AWS catalog"},
    "files": [{"filename": "catalogs/v8/aws/vms.csv", "status": "modified"}],
}


@pytest.fixture
def server():
    with serving(_recorded) as recorded:
        yield recorded


@pytest.fixture
def catalog_dir(make_catalog):
    directory = make_catalog(offer(provider="azure", region="eastus", instance_type="Standard_NC24ads_A100_v4",
                                   gpu="A100-80GB", gpu_count="1", gpu_memory_gib="80", vcpus="24",
                                   memory_gib="220", interconnect="pcie", on_demand_hourly="4.0",
                                   billing_granularity_s="60", source="skypilot-azure"), load=False)
    (directory / "SOURCES.md").write_bytes((CATALOGS / "SOURCES.md").read_bytes())
    return directory


def _http():
    return public.session(retries=2, backoff_s=0)


def _azure(catalog_dir, server):
    return public.AzureRetailSource(catalog_dir, TODAY, http=_http(), url=f"{server.base}/api/retail/prices")


def test_azure_pages_are_followed_and_reservations_become_effective_hourly(server, catalog_dir):
    source = _azure(catalog_dir, server)
    report = refresh(source, catalog_dir)
    assert [h.split("?")[0] for h in server.hits] == ["/api/retail/prices"] * 2  # page 1, then NextPageLink
    assert "%24filter=" in server.hits[0] and "skip=3" in server.hits[1]
    (row,) = list(csv.DictReader((catalog_dir / "azure.csv").open()))
    assert (row["region"], row["on_demand_hourly"], row["spot_hourly"]) == ("eastus", "3.673", "0.444433")
    assert Decimal(row["reserved_1y_hourly"]) == (Decimal(20000) / 8760).quantize(Decimal("0.000001"))
    assert Decimal(row["reserved_3y_hourly"]) == (Decimal(36000) / (3 * 8760)).quantize(Decimal("0.000001"))
    assert (row["source"], row["as_of"], row["country"], row["gpu"]) == \
        ("azure-retail", "2026-12-03", "US", "A100-80GB")
    assert report.skipped["not a Linux hourly price"] == 2  # Windows and Low Priority
    assert report.skipped["size not in azure.csv (no GPU spec)"] == 1


def test_effective_hourly_spreads_the_term_price_over_its_hours():
    assert public.effective_hourly(Decimal(8760), 1) == 1
    assert public.effective_hourly(Decimal(26280), 3) == 1


def test_a_transient_503_is_retried_by_the_http_library(server, catalog_dir):
    server.faults["/api/retail/prices"] = [503]
    refresh(_azure(catalog_dir, server), catalog_dir)
    assert len(server.hits) == 3  # 503, page 1, page 2
    assert list(csv.DictReader((catalog_dir / "azure.csv").open()))[0]["source"] == "azure-retail"


def test_a_500_on_the_second_page_leaves_the_catalog_as_it_was(server, catalog_dir):
    before = (catalog_dir / "azure.csv").read_bytes()
    server.broken.add("skip=3")
    with pytest.raises(CatalogError, match="catalog is unchanged"):
        refresh(_azure(catalog_dir, server), catalog_dir)
    assert sum("skip=3" in h for h in server.hits) == 3  # the first try and 2 retries
    assert (catalog_dir / "azure.csv").read_bytes() == before


def test_a_dead_endpoint_leaves_the_catalog_as_it_was(catalog_dir):
    before = (catalog_dir / "azure.csv").read_bytes()
    source = public.AzureRetailSource(catalog_dir, TODAY, http=_http(), url=f"http://127.0.0.1:{free_port()}/x")
    unchanged = r"cannot fetch .*: connection failed after retries \(the catalog is unchanged\)"
    with pytest.raises(CatalogError, match=unchanged):
        refresh(source, catalog_dir)
    assert (catalog_dir / "azure.csv").read_bytes() == before
    assert sorted(p.name for p in catalog_dir.iterdir() if p.name.startswith(".")) == []


def test_skypilot_csv_at_a_pinned_commit_is_converted_and_its_sha256_recorded(server, catalog_dir):
    lines = public.refresh_skypilot(COMMIT, ["aws"], catalog_dir, TODAY, http=_http(), base_url=server.base,
                                    api_url=server.base)
    rows = list(csv.DictReader((catalog_dir / "aws.csv").open()))
    assert {(r["instance_type"], r["zone"]) for r in rows} == \
        {("p4d.24xlarge", "use1-az1"), ("p4d.24xlarge", "use1-az2")}
    # dated by the commit (in UTC: 2026-11-29), imported today
    assert all(r["as_of"] == "2026-11-29" and r["imported"] == "2026-12-03" and COMMIT in r["source_detail"]
               for r in rows)
    assert f"/repos/skypilot-org/skypilot-catalog/commits/{COMMIT}" in server.hits
    import hashlib

    digest = hashlib.sha256((FIXTURES / "skypilot" / "aws_vms.csv").read_bytes()).hexdigest()
    assert any(digest in line for line in lines)
    log = (catalog_dir / "SOURCES.md").read_text()
    assert f"{server.base}/{COMMIT}/catalogs/v8/aws/vms.csv (committed 2026-11-29) | sha256 {digest} | 3 rows |" in log


def test_a_commit_github_cannot_date_leaves_the_rows_undated_not_dated_by_the_import(server, catalog_dir):
    public.refresh_skypilot(COMMIT, ["aws"], catalog_dir, TODAY, http=_http(), base_url=server.base,
                            api_url=f"{server.base}/nowhere")
    rows = list(csv.DictReader((catalog_dir / "aws.csv").open()))
    assert rows and all(r["as_of"] == "" and r["imported"] == "2026-12-03" for r in rows)
    assert "(commit date unknown)" in (catalog_dir / "SOURCES.md").read_text()


def test_a_truncated_skypilot_file_leaves_the_catalog_as_it_was(server, catalog_dir):
    (catalog_dir / "aws.csv").write_bytes((catalog_dir / "azure.csv").read_bytes().replace(b"azure,", b"aws,"))
    before = {p.name: p.read_bytes() for p in catalog_dir.iterdir()}
    server.truncate.add(f"/{COMMIT}/catalogs/v8/aws/vms.csv")
    with pytest.raises(CatalogError, match="catalog is unchanged"):
        public.refresh_skypilot(COMMIT, ["aws"], catalog_dir, TODAY, http=_http(), base_url=server.base)
    assert {p.name: p.read_bytes() for p in catalog_dir.iterdir()} == before
