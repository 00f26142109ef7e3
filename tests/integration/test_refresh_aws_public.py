"""`catalog refresh aws-public` against the public AWS price list files in their exact format, served by a local
HTTP server (tests/fixtures/aws_public): region indexes → region files, reserved terms → effective hourly,
Savings Plans rates, and atomic failure (dead endpoint, 500 mid-way, truncated file)."""

from __future__ import annotations

import csv
import subprocess
import sys
from decimal import Decimal

import pytest
from support import FIXTURES, child_env, free_port, offer, serving

from gpu_assist.errors import CatalogError
from gpu_assist.sources import aws_public, public
from gpu_assist.sources.refresh import refresh

FILES = {
    aws_public.EC2_INDEX: "ec2_region_index.json",
    aws_public.SAVINGS_PLAN_INDEX: "sp_region_index.json",
    **{f"/offers/v1.0/aws/AmazonEC2/20261201000000/{r}/index.json": f"ec2_{r}.json"
       for r in ("us-east-1", "us-west-2")},
    **{f"/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/20261201000000/{r}/index.json": f"sp_{r}.json"
       for r in ("us-east-1", "us-west-2")},
}


def _recorded(path: str, query: str, base: str) -> bytes | None:
    name = FILES.get(path)
    return None if name is None else (FIXTURES / "aws_public" / name).read_bytes()


@pytest.fixture
def server():
    with serving(_recorded) as served:
        yield served


@pytest.fixture
def catalog_dir(make_catalog):
    return make_catalog(offer(region="us-east-1", zone="use1-az1", spot_hourly="12.1"),
                        offer(region="us-west-2", zone="usw2-az1"),
                        offer(region="eu-west-1", zone="euw1-az1"), load=False)


def _source(catalog_dir, server, regions=("us-east-1", "us-west-2")):
    return aws_public.AwsPublicPriceSource(catalog_dir, list(regions),
                                           http=public.session(retries=2, backoff_s=0), base_url=server.base)


def _rows(catalog_dir):
    return {r["region"]: r for r in csv.DictReader((catalog_dir / "aws.csv").open())}


def test_regions_reserved_terms_and_savings_plans_become_effective_hourly(server, catalog_dir):
    report = refresh(_source(catalog_dir, server), catalog_dir)
    assert [h for h in server.hits if h.endswith("region_index.json")] == [aws_public.EC2_INDEX,
                                                                          aws_public.SAVINGS_PLAN_INDEX]
    rows = _rows(catalog_dir)
    assert sorted(rows) == ["eu-west-1", "us-east-1", "us-west-2"]  # eu-west-1 was not refreshed: kept
    east = rows["us-east-1"]
    assert (east["zone"], east["on_demand_hourly"], east["spot_hourly"], east["source"]) == \
        ("", "32.7726", "", "aws-price-list")
    # 1y standard: No Upfront 20, Partial 9 + 87600/8760 = 19, All 157680/8760 = 18 (convertible 16 not used)
    assert Decimal(east["reserved_1y_hourly"]) == 18
    # 3y standard: No Upfront 14, Partial 6 + 131400/26280 = 11, All 262800/26280 = 10
    assert Decimal(east["reserved_3y_hourly"]) == 10
    assert "reserved 1y: standard reserved instance, All Upfront" in east["source_detail"]
    assert "reserved_3y:All Upfront Compute Savings Plan: $12.5/h" in east["notes"]
    assert "reserved_1y:No Upfront EC2 Instance Savings Plan: $21.5/h" in east["notes"]
    assert "SageMaker" not in east["notes"]
    west = rows["us-west-2"]  # no reserved instance in the file: the cheapest plan of each term
    assert (west["reserved_1y_hourly"], west["reserved_3y_hourly"]) == ("21.75", "12.75")
    assert "reserved 3y: Compute Savings Plan All Upfront" in west["source_detail"]
    # dated by the files' own publicationDate (2026-12-01T00:00:00Z), not by the day of the refresh
    assert (west["country"], west["as_of"], west["reserved_as_of"], west["gpu"]) == \
        ("US", "2026-12-01", "2026-12-01", "A100")
    assert report.rows_written == 3


def test_only_linux_shared_used_products_of_known_types_are_kept(server, catalog_dir):
    source = _source(catalog_dir, server, ["us-east-1"])
    rows = list(source.rows())
    assert [(r.instance_type, r.on_demand_hourly) for r in rows] == [("p4d.24xlarge", Decimal("32.7726"))]
    assert source.counts["products"] == 1  # not Windows, not the unused capacity reservation, not m5.large
    assert source.counts["reserved terms"] == 8


@pytest.mark.parametrize("fault", ["dead", "500 mid-way", "truncated"])
def test_a_failed_download_leaves_the_catalog_byte_identical(server, catalog_dir, fault):
    before = {p.name: p.read_bytes() for p in catalog_dir.iterdir()}
    base = server.base
    if fault == "dead":
        base = f"http://127.0.0.1:{free_port()}"
    elif fault == "500 mid-way":
        server.broken.add("AWSComputeSavingsPlan/20261201000000/us-west-2")
    else:
        server.truncate.add("/offers/v1.0/aws/AmazonEC2/20261201000000/us-west-2/index.json")
    source = aws_public.AwsPublicPriceSource(catalog_dir, ["us-east-1", "us-west-2"],
                                             http=public.session(retries=1, backoff_s=0), base_url=base)
    with pytest.raises(CatalogError, match="catalog is unchanged"):
        refresh(source, catalog_dir)
    assert {p.name: p.read_bytes() for p in catalog_dir.iterdir()} == before


def test_a_region_not_in_the_price_list_is_a_clear_error(server, catalog_dir):
    with pytest.raises(CatalogError, match="region 'mars-1' is not in the AWS price list"):
        list(_source(catalog_dir, server, ["mars-1"]).rows())


@pytest.mark.clock
def test_the_cli_refreshes_from_the_public_files_and_rejects_bad_arguments(server, catalog_dir):
    env = child_env({"GPU_ASSIST_AWS_PRICING_URL": server.base, "PATH": "/usr/bin:/bin"})
    done = subprocess.run([sys.executable, "-m", "gpu_assist", "catalog", "refresh", "aws-public", "--regions",
                           "us-east-1,us-west-2", "--catalog-dir", str(catalog_dir)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "aws: 3 offers" in done.stdout and "savings plan rates 4" in done.stdout
    assert "| `aws-price-list` |" in (catalog_dir / "SOURCES.md").read_text()
    assert "data_prices.csv: 1 EBS gp3 rows" in done.stdout  # the whole bill (#33): us-east-1's file has gp3
    bad = subprocess.run([sys.executable, "-m", "gpu_assist", "catalog", "refresh", "aws-public", "--regions",
                          "us-east-1", "--commit", "abc", "--catalog-dir", str(catalog_dir)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "--commit" in bad.stderr


def test_a_price_list_without_a_publication_date_is_refused():
    with pytest.raises(CatalogError, match="not a date"):
        aws_public._day("https://pricing.example/index.json", "soon")
    assert aws_public._day("u", "2026-12-01T00:00:00Z") == "2026-12-01"


def test_ebs_gp3_storage_from_the_same_files_becomes_a_dated_data_price(server, catalog_dir):
    """The whole bill (#33): the EC2 file's `Storage` product `volumeApiName=gp3` (`GB-Mo`) replaces that region's
    block row of data_prices.csv, dated by the file; other rows are kept and the file still loads."""
    from gpu_assist.catalog import load_catalog
    from gpu_assist.catalog.data_prices import FILE_NAME, read_data_prices, replace_rows

    (catalog_dir / FILE_NAME).write_text("provider,region,item,unit,price,currency,up_to,source,as_of,verified\n"
                                         "aws,us-east-1,block,GB,0.08,USD,,aws-ebs-gp3,2026-12-05,no\n"
                                         "lambda,*,ingress,GiB,0,USD,,lambda-billing,2026-12-05,yes\n",
                                         encoding="utf-8")
    source = _source(catalog_dir, server)
    refresh(source, catalog_dir)
    assert source.gp3 == {"us-east-1": (Decimal("0.075"), "2026-12-01")}  # us-west-2's file has no gp3
    assert replace_rows(catalog_dir / FILE_NAME, aws_public.data_price_rows(source.gp3)) == 1
    prices = read_data_prices(catalog_dir / FILE_NAME)
    (block,) = prices.tiers("aws", "us-east-1", "block")
    assert (block.price, block.source, block.as_of, block.verified) == (Decimal("0.075"), "aws-price-list",
                                                                        "2026-12-01", True)
    assert prices.tiers("lambda", "us-east-1", "ingress")  # kept
    assert load_catalog(catalog_dir, cache_dir=None).data_prices == prices

