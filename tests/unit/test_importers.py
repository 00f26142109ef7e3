"""SkyPilot extracts and ECB rates → catalog files; the import is rerunnable and atomic."""

from __future__ import annotations

import csv
from decimal import Decimal

import pytest
from support import CATALOGS, SOURCES, offer

from gpu_assist.catalog import load_catalog, validate_directory
from gpu_assist.catalog.gpus import load_gpus
from gpu_assist.cli import main
from gpu_assist.errors import CatalogError
from gpu_assist.facts import Replaced, parse_labels
from gpu_assist.sources.offer_row import OfferRow
from gpu_assist.sources.ecb import write_fx
from gpu_assist.sources.refresh import refresh, fields_to_csv
from gpu_assist.sources.skypilot import EXTRACTS, SkyPilotSource

# The CLI reads today's date itself, as a user's run does: its answers here are on support.TODAY's.
pytestmark = pytest.mark.usefixtures("pinned_wall_clock")

AWS_HEADER = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
              "AvailabilityZone,Arch")
GCP_HEADER = ("InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,"
              "SpotPrice")


@pytest.fixture
def extract(tmp_path):
    directory = tmp_path / "extract"
    directory.mkdir()
    info = "\"{'Gpus': [{'Name': 'A100', 'MemoryInfo': {'SizeInMiB': 40960}}]}\""
    (directory / "aws_gpu.csv").write_text("\n".join([
        AWS_HEADER,
        f"p4d.24xlarge,A100,8.0,96.0,1152.0,{info},32.77306,9.8304,us-east-1,use1-az1,x86_64",
        f"p4d.24xlarge,A100,8.0,96.0,1152.0,{info},26.3444,26.344400,ap-south-1,aps1-az1,x86_64",
        "g6f.large,L4,0.125,2.0,8.0,,0.2,0.1,us-east-1,use1-az1,x86_64",
        "inf2.xlarge,Inferentia2,1.0,4.0,16.0,,0.76,0.3,us-east-1,use1-az1,x86_64",
    ]) + "\n")
    gpu = "{'Gpus': [{'MemoryInfo': {'SizeInMiB': 40960}}]}"
    (directory / "gcp_gpu.csv").write_text("\n".join([
        GCP_HEADER,
        "a2-highgpu-8g,96.0,680.0,,,,us-central1,us-central1-a,5.91577,2.95791",
        f",,,A100,8,\"{gpu}\",us-central1,us-central1-a,23.47126,11.4728",
        "a4-highgpu-8g,224.0,3968.0,,,,us-central1,us-central1-b,0.0,0.0",
        ",,,B200,8,\"{'Gpus': [{'MemoryInfo': {'SizeInMiB': 184320}}]}\",us-central1,us-central1-b,64.44,39.128",
        f",,,T4,1,\"{gpu}\",us-central1,us-central1-a,0.35,0.14",
        ",,,tpu-v2-8,1,tpu-v2-8,us-central1,us-central1-b,4.5,1.35",
    ]) + "\n")
    return directory


def _rows(source):
    return {(r.instance_type, r.region): r.csv_fields() for r in source.rows()}


def test_aws_rows_keep_zone_prices_and_flag_defects(extract):
    source = SkyPilotSource("aws", extract, load_gpus(CATALOGS / "gpus.csv"), "2026-12-02")
    rows = _rows(source)
    p4d = rows[("p4d.24xlarge", "us-east-1")]
    assert (p4d["zone"], p4d["on_demand_hourly"], p4d["spot_hourly"], p4d["gpu_count"], p4d["gpu_memory_gib"]) == \
        ("use1-az1", "32.77306", "9.8304", "8", "40.0")
    assert p4d["flags"] == "" and p4d["interconnect"] == "nvlink" and p4d["billing_granularity_s"] == "1"
    assert rows[("p4d.24xlarge", "ap-south-1")]["flags"] == "spot:not-below-on-demand"
    assert rows[("g6f.large", "us-east-1")]["flags"] == "all:fractional-gpu"
    assert ("inf2.xlarge", "us-east-1") not in rows
    assert source.skipped == {"not a GPU (Inferentia2)": 1}


def test_gcp_offer_is_host_plus_accelerator_of_the_same_zone(extract):
    source = SkyPilotSource("gcp", extract, load_gpus(CATALOGS / "gpus.csv"), "2026-12-02")
    rows = [r.csv_fields() for r in source.rows()]
    a2 = next(r for r in rows if r["instance_type"] == "a2-highgpu-8g")
    assert Decimal(a2["on_demand_hourly"]) == Decimal("5.91577") + Decimal("23.47126")
    assert Decimal(a2["spot_hourly"]) == Decimal("2.95791") + Decimal("11.4728")
    assert (a2["gpu"], a2["gpu_count"], a2["zone"]) == ("A100", "8", "us-central1-a")
    a4 = next(r for r in rows if r["instance_type"] == "a4-highgpu-8g")
    assert a4["flags"].startswith("all:zero-host-price")
    assert source.skipped["not a GPU (tpu)"] == 1
    assert source.skipped["GCP accelerator without a matching host row (e.g. n1 hosts, not in extract)"] == 1


def test_bundled_gcp_rows_equal_the_raw_extract_sums():
    """Every bundled GCP offer is exactly its host row + accelerator row in the shared extract, or, where the
    provider's billing catalog replaced that sum (rule b of issue #31), its label keeps the sum."""
    with (SOURCES / "gcp_gpu.csv").open() as handle:
        raw = list(csv.DictReader(handle))
    hosts = {(r["InstanceType"], r["AvailabilityZone"]): r for r in raw if r["InstanceType"]}
    accelerators = {(r["AcceleratorName"], r["AcceleratorCount"], r["AvailabilityZone"]): r for r in raw
                    if not r["InstanceType"]}
    with (CATALOGS / "gcp.csv").open() as handle:
        bundled = list(csv.DictReader(handle))
    assert len(bundled) > 600
    for row in bundled:
        host = hosts[(row["instance_type"], row["zone"])]
        accelerator = accelerators[(row["gpu"], row["gpu_count"], row["zone"])]
        replaced = [label for label in parse_labels(row["notes"]) if isinstance(label, Replaced)]
        on_demand = replaced[0].figure if replaced else Decimal(row["on_demand_hourly"])
        assert on_demand == Decimal(host["Price"]) + Decimal(accelerator["Price"])


def test_import_of_the_vendored_extract_reproduces_the_committed_catalogs(tmp_path, capsys):
    """The committed CSVs are the converter's output, not hand edits: `make catalogs`' import, rerun into an
    empty directory from the vendored extracts alone, writes every provider's file byte for byte."""
    directory = tmp_path / "catalogs"
    directory.mkdir()
    for name in ("gpus.csv", "fx.csv", "SOURCES.md"):
        (directory / name).write_bytes((CATALOGS / name).read_bytes())
    assert main(["catalog", "import-skypilot", str(SOURCES), "--imported", "2026-12-02",
                 "--catalog-dir", str(directory)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(EXTRACTS) == 17
    for provider in EXTRACTS:
        assert (directory / f"{provider}.csv").read_bytes() == (CATALOGS / f"{provider}.csv").read_bytes()


def test_a_refresh_that_does_not_validate_keeps_the_previous_file(make_catalog):
    directory = make_catalog(offer(on_demand_hourly="32"), load=False)
    before = (directory / "aws.csv").read_text()

    class Broken:
        provider, source = "aws", "skypilot-aws"

        def rows(self):
            return [OfferRow.from_csv_fields(offer(gpu="not-a-gpu"))]

    with pytest.raises(CatalogError, match="previous file kept"):
        refresh(Broken(), directory)
    assert (directory / "aws.csv").read_text() == before
    assert [p.name for p in directory.iterdir() if p.name.startswith(".")] == []
    assert validate_directory(directory) == []


def test_ecb_rates_give_usd_to_cny(tmp_path):
    path = tmp_path / "fx.csv"
    summary = write_fx(path)
    rows = list(csv.DictReader(path.open()))
    assert rows[0]["base"] == "USD" and rows[0]["quote"] == "CNY" and rows[0]["source"] == "ecb-eurofxref"
    assert 5 < Decimal(rows[0]["rate"]) < 9
    assert "per EUR" in summary
    committed = list(csv.DictReader((CATALOGS / "fx.csv").open()))[0]
    assert committed["source"] == "ecb-eurofxref" and committed["verified"] == "yes"


def test_rows_to_csv_round_trips_through_the_loader(make_catalog):
    catalog = make_catalog(offer(on_demand_hourly="0.000001"))
    assert catalog.offers.on_demand_hourly.tolist() == [0.000001]
    assert fields_to_csv([offer()]).splitlines()[0].startswith("provider,region,zone,instance_type")
    assert load_catalog(CATALOGS, cache_dir=None).offers.shape[0] > 3000
