"""Issue #31: upstream catalog defects are caught at import, as typed flags and labels, before they rank.

The acceptance figures are published ones: GCP a3-highgpu-8g us-central1 on-demand $88.49/h and a2-highgpu-8g
$29.39/h (Cyclenerd's pricing.yml from GCP's Cloud Billing Catalog, 2026-07-30, bundled as gcp_cud.csv); the
Flex-start H100 rate $4.200761 per GPU-hour (SKU 341A-49A5-0C07, SOURCES-plans.txt S-GCP-DWS-ZENN); Azure
Standard_ND96isr_H100_v5 = 8 x H100 (Microsoft's ndh100v5-series page) at $98.32/h in eastus.
"""

from __future__ import annotations

import csv
from decimal import Decimal

import pytest

from support import CATALOGS, SOURCES, TODAY
from gpu_assist.catalog import load_catalog
from gpu_assist.facts import Corrected, Flag, parse_flags, parse_labels
from gpu_assist.importers import sanity
from gpu_assist.pricing import quote
from gpu_assist.render.notes import said
from gpu_assist.request import parse_request


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(CATALOGS)


def _rows(provider):
    with (CATALOGS / f"{provider}.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _quote(catalog, text, **options):
    return quote(parse_request(text, catalog.gpus), catalog, today=TODAY, **options)


def _unflagged(row, scope):
    return not any(flag.scope in ("all", scope) for flag in parse_flags(row["flags"]))


def _flex_start(gpu, rate, rates):
    def rounded(value):
        return value.quantize(Decimal("0.00001"))

    return sanity.flex_start_rate(gpu, rounded(rate), {rounded(r) for r in rates} - {rounded(rate)})


def test_no_gcp_on_demand_price_is_below_its_gpus_list_price():
    """(a, c) The GPU's list rate: its lowest per-GPU on-demand part over the regions, Flex-start rates left
    out; no quotable GCP on-demand price is below it times the GPU count."""
    with (SOURCES / "gcp_gpu.csv").open(newline="", encoding="utf-8") as handle:
        parts = [r for r in csv.DictReader(handle) if not r["InstanceType"] and r["Price"]]
    rates: dict[str, list[Decimal]] = {}
    for part in parts:
        rate = Decimal(part["Price"]) / Decimal(part["AcceleratorCount"])
        rates.setdefault(part["AcceleratorName"], []).append(rate)
    list_rate = {gpu: min(r for r in found if not _flex_start(gpu, r, found)) for gpu, found in rates.items()}
    quotable = [r for r in _rows("gcp") if r["on_demand_hourly"] and _unflagged(r, "on_demand")]
    assert len(quotable) > 500
    for row in quotable:
        assert Decimal(row["on_demand_hourly"]) >= Decimal(row["gpu_count"]) * list_rate[row["gpu"]], row
    flex = [r for r in _rows("gcp") if f"on_demand:{Flag.FLEX_START_PRICE}" in r["flags"]]
    assert flex and all(r["instance_type"].startswith("a3-edgegpu-8g") for r in flex)  # no gcp-cud row to replace it


def test_azure_nd96isr_h100_v5_is_one_8_gpu_host_corrected_on_its_source(catalog):
    rows = [r for r in _rows("azure") if r["instance_type"] == "Standard_ND96isr_H100_v5"]
    assert rows and all(r["gpu_count"] == "8" and "gpu-count-mismatch" not in r["flags"] for r in rows)
    corrected = [label for label in parse_labels(rows[0]["notes"]) if isinstance(label, Corrected)]
    assert corrected == [Corrected("all", corrected[0].text, "gpu_count", "12", "8",
                                   "MicrosoftDocs/azure-docs:ndh100v5-series.md")]
    option = _quote(catalog, "8xH100 24h azure").cheapest(instance_type="Standard_ND96isr_H100_v5")
    assert option.instances == 1 and option.hourly == Decimal("98.32")
    assert any("gpu count 12 → 8" in note for note in said(option.notes))
