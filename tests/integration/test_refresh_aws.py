"""`catalog refresh aws`: the recorded real responses as oracles, moto over HTTP for the EC2 calls, and a
refresh that fails half-way leaving the previous catalog untouched."""

from __future__ import annotations

import copy
import datetime as dt
import json
from decimal import Decimal

import pytest
from botocore.stub import ANY, Stubber
from support import CATALOGS
from support import FIXTURES as RECORDED

from gpu_assist.catalog import load_catalog, validate_directory
from gpu_assist.catalog.gpus import load_gpus
from gpu_assist.clouds.sdk import aws as aws_clients
from gpu_assist.pricing.query_parser import parse_request
from gpu_assist.pricing.quote import quote
from gpu_assist.sources.aws_account import (
    AwsPriceSource,
    cheapest_standard,
    gpu_instance_types,
    latest_spot_prices,
    on_demand_rate,
    reserved_rates,
)
from gpu_assist.sources.refresh import refresh

FIXTURES = RECORDED / "aws"


def _fixture(name):
    return json.loads((FIXTURES / name).read_text())


def test_reserved_effective_rates_for_m5_large_equal_the_hand_computation():
    item = _fixture("GetProducts_m5_large.json")
    rates = reserved_rates(item)
    # Hand computation from the recorded terms: hourly + upfront / (years × 8760).
    assert rates[(1, "No Upfront", "standard")] == Decimal("0.06")
    assert rates[(1, "Partial Upfront", "standard")] == Decimal("0.029") + Decimal(252) / 8760
    assert rates[(1, "All Upfront", "standard")] == Decimal(494) / 8760
    assert rates[(1, "Partial Upfront", "convertible")] == Decimal("0.034") + Decimal(294) / 8760
    assert rates[(3, "All Upfront", "standard")] == Decimal(949) / (3 * 8760)
    assert rates[(3, "Partial Upfront", "standard")] == Decimal("0.019") + Decimal(505) / (3 * 8760)
    assert rates[(3, "All Upfront", "convertible")] == Decimal(1161) / (3 * 8760)
    assert len(rates) == 12  # 2 terms × 3 purchase options × 2 offering classes
    assert on_demand_rate(item) == Decimal("0.096")
    assert cheapest_standard(rates, 1) == (Decimal(494) / 8760, "All Upfront")
    assert cheapest_standard(rates, 3) == (Decimal(949) / 26280, "All Upfront")


def test_recorded_ec2_responses_parse():
    gpus = load_gpus(CATALOGS / "gpus.csv")
    types = gpu_instance_types(_fixture("DescribeInstanceTypes_t3_micro_and_p3_16xl.json")["InstanceTypes"], gpus)
    assert types == {"p3.16xlarge": {"gpu": "V100", "gpu_count": "8", "gpu_memory_gib": "16.0", "vcpus": "64",
                                     "memory_gib": "488.0"}}
    history = _fixture("DescribeSpotPriceHistory_m5_large.json")["SpotPriceHistory"]
    latest = latest_spot_prices(history)
    zones = {e["AvailabilityZone"] for e in history}
    assert set(latest) == {("m5.large", z) for z in zones}
    for zone in zones:
        newest = max((e for e in history if e["AvailabilityZone"] == zone), key=lambda e: e["Timestamp"])
        assert latest[("m5.large", zone)] == Decimal(newest["SpotPrice"])
    offerings = _fixture("DescribeInstanceTypeOfferings_us-east-2a.json")["InstanceTypeOfferings"]
    assert {o["Location"] for o in offerings} == {"us-east-2a"}


def _pricing_stub(instance_types: list[str], *, fail_after: int | None = None):
    """A real boto3 Pricing client whose responses are the recorded m5.large item, relabelled per type.

    Only the instance type attribute changes; the prices are the recorded m5.large ones (test data,
    written to a temporary catalog, never to catalogs/)."""
    client = aws_clients.client("pricing", "us-east-1")
    stub = Stubber(client)
    for number, instance_type in enumerate(instance_types):
        if fail_after is not None and number >= fail_after:
            stub.add_client_error("get_products", service_error_code="ThrottlingException", http_status_code=400)
            break
        item = copy.deepcopy(_fixture("GetProducts_m5_large.json"))
        item["product"]["attributes"]["instanceType"] = instance_type
        stub.add_response("get_products", {"PriceList": [json.dumps(item)], "FormatVersion": "aws_v1"},
                          {"ServiceCode": "AmazonEC2", "Filters": ANY})
    stub.activate()
    return client


@pytest.fixture
def catalog_copy(tmp_path):
    directory = tmp_path / "catalogs"
    directory.mkdir()
    for path in CATALOGS.iterdir():
        if path.is_file():
            (directory / path.name).write_bytes(path.read_bytes())
    return directory


def test_refresh_against_moto_writes_a_catalog_that_validates_and_quotes(aws, catalog_copy):
    gpus = load_gpus(catalog_copy / "gpus.csv")
    today = dt.date(2026, 12, 2)
    probe = AwsPriceSource(["us-east-1"], gpus, families=("p4d", "p5"), today=today, progress=lambda m: None)
    types = sorted(gpu_instance_types(probe._pages(aws_clients.client("ec2"), "describe_instance_types",
                                                   "InstanceTypes", Filters=[{"Name": "instance-type",
                                                                              "Values": list(probe.families)}]),
                                      gpus))
    assert "p4d.24xlarge" in types
    original = load_catalog(catalog_copy, cache_dir=None).offers
    outside = original[(original.provider == "aws") & ~((original.region == "us-east-1")
                                                        & original.instance_type.str.match(r"^(p4d|p5)\."))]
    source = AwsPriceSource(["us-east-1"], gpus, families=("p4d", "p5"), today=today,
                            pricing_client=_pricing_stub(types), progress=lambda m: None)
    report = refresh(source, catalog_copy)
    assert report.rows_written > 0
    assert validate_directory(catalog_copy) == []
    catalog = load_catalog(catalog_copy, cache_dir=None)
    fresh = catalog.offers[catalog.offers.source == "aws-api"]
    assert set(fresh.region) == {"us-east-1"} and set(fresh.instance_type) <= {t for t in types}
    p4d = fresh[fresh.instance_type == "p4d.24xlarge"].iloc[0]
    assert p4d.on_demand_hourly == pytest.approx(0.096) and p4d.gpu == "A100" and p4d.gpu_count == 8
    assert p4d.reserved_1y_hourly == pytest.approx(round(494 / 8760, 6))
    assert p4d.as_of == "2026-12-02" and p4d.zone.startswith("us-east-1")
    kept = catalog.offers[(catalog.offers.provider == "aws") & (catalog.offers.source != "aws-api")]
    assert len(kept) == len(outside)  # rows of other regions and families are kept as they were
    result = quote(parse_request("8xA100 72h reserved-1y region=us-east-1 aws", catalog.gpus), catalog,
                   today=today)
    assert result.options and result.options[0].total == pytest.approx(
        Decimal(str(round(494 / 8760, 6))) * 8760, rel=Decimal("1e-9"))


def test_a_refresh_that_fails_half_way_leaves_the_catalog_untouched(aws, catalog_copy):
    gpus = load_gpus(catalog_copy / "gpus.csv")
    before = (catalog_copy / "aws.csv").read_bytes()
    source = AwsPriceSource(["us-east-1"], gpus, families=("p4d", "p5"), today=dt.date(2026, 12, 2),
                            pricing_client=_pricing_stub(["p4d.24xlarge", "p5.48xlarge", "p5.4xlarge"],
                                                         fail_after=1), progress=lambda m: None)
    with pytest.raises(Exception, match="ThrottlingException"):
        refresh(source, catalog_copy)
    assert (catalog_copy / "aws.csv").read_bytes() == before
    assert not [p for p in catalog_copy.iterdir() if p.name.startswith(".")]


@pytest.mark.clock
def test_cli_refresh_failure_is_one_line_and_keeps_the_catalog(aws, catalog_copy, capsys):
    from gpu_assist.cli import main

    before = (catalog_copy / "aws.csv").read_bytes()
    # moto serves EC2 but has no Pricing API: the refresh fails on its first price lookup.
    assert main(["catalog", "refresh", "aws", "--regions", "us-east-1", "--families", "p4d",
                 "--catalog-dir", str(catalog_copy)]) == 2
    err = capsys.readouterr().err
    assert "refreshing AWS prices (the previous catalog is unchanged)" in err and "Traceback" not in err
    assert (catalog_copy / "aws.csv").read_bytes() == before
