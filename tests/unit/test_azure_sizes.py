"""Azure's GPUs as Microsoft's size pages state them, as a buyer meets them: the model, count, memory and NVLink of
each size come from the documented table (catalogs/sources/azure_gpu_specs.csv), whatever the price extract says."""

from __future__ import annotations

import csv
import shutil

from support import CATALOGS, SOURCES, TODAY

from gpu_assist.catalog.gpus import load_gpus
from gpu_assist.pricing.compare import compare, refine
from gpu_assist.pricing.query_parser import parse_request
from gpu_assist.pricing.quote import quote
from gpu_assist.render.notes import said
from gpu_assist.sources.china import read_specs
from gpu_assist.sources.skypilot import AZURE_SPECS_FILE, SkyPilotSource

_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,Generation"


def _azure_rows():
    with (CATALOGS / "azure.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_nc80adis_h100_v5_is_two_h100_nvl_94gb_on_pcie():
    rows = [r for r in _azure_rows() if r["instance_type"] == "Standard_NC80adis_H100_v5"]
    assert rows and {(r["gpu"], r["gpu_count"], r["gpu_memory_gib"], r["interconnect"]) for r in rows} == \
        {("H100-NVL", "2", "94.0", "pcie")}
    assert all("now=H100-NVL on=MicrosoftDocs/azure-docs:ncadsh100v5-series.md" in r["notes"] for r in rows)


def test_every_priced_azure_size_is_documented_and_the_catalog_agrees_with_its_page(gpus):
    documented = {d.instance_type: d for d in read_specs(SOURCES / AZURE_SPECS_FILE)["azure"]}
    for row in _azure_rows():
        doc = documented[row["instance_type"].removesuffix("_Promo")]  # a promotional price of the base size
        assert (row["gpu"], row["gpu_count"]) == (doc.gpu, doc.gpu_count), row["instance_type"]
        per_gpu = float(doc.total_memory_gib) / max(float(doc.gpu_count), 1)
        assert float(row["gpu_memory_gib"]) == per_gpu, row["instance_type"]
        assert gpus.find(doc.gpu) is not None


def test_an_azure_buyer_asking_for_8_h100_80gb_is_not_offered_h100_nvl_cards(catalog):
    request = parse_request("8xH100 72h", catalog.gpus)
    options = quote(request, catalog, today=TODAY, top=200).options
    assert not any(o.instance_type.startswith("Standard_NC") for o in options if o.provider == "azure")
    nvl = compare(refine(quote(parse_request("4xH100-NVL 72h provider=azure", catalog.gpus), catalog, today=TODAY)))
    (split,) = [r for r in nvl.rows if r.instance_type == "Standard_NC80adis_H100_v5"]
    assert split.best.instances == 2 and split.best.interconnect == "network"  # no NVLink between VMs
    assert "GPUs linked over PCIe only (no NVLink)" in said(
        quote(parse_request("2xH100-NVL 72h provider=azure", catalog.gpus), catalog, today=TODAY).options[0].notes)


def test_the_importer_corrects_what_the_extract_gets_wrong_and_says_on_which_page(tmp_path):
    shutil.copy(SOURCES / AZURE_SPECS_FILE, tmp_path / AZURE_SPECS_FILE)
    info = "{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 2.0, 'MemoryInfo': {'SizeInMiB': 81920}}]}"
    (tmp_path / "azure_gpu.csv").write_text("\n".join([
        _HEADER,
        f'Standard_NC80adis_H100_v5,H100,2.0,80,640,"{info}",13.96,13.96,eastus,V2',
        "Standard_NV4as_v4,Radeon MI25,1.0,4,14,,0.17,0.04,eastus,V1",
        "Standard_NC6s_v3,V100,1.0,6,112,,3.06,0.3,eastus,V1",
    ]) + "\n", encoding="utf-8")
    rows = {r.instance_type: r.csv_fields()
            for r in SkyPilotSource("azure", tmp_path, load_gpus(CATALOGS / "gpus.csv"), "2026-12-02").rows()}
    nc = rows["Standard_NC80adis_H100_v5"]
    assert (nc["gpu"], nc["gpu_count"], nc["gpu_memory_gib"], nc["interconnect"]) == ("H100-NVL", "2", "94.0", "pcie")
    assert "all:@corrected column=gpu_memory_gib was=80.0 now=94.0" in nc["notes"]
    partial = rows["Standard_NV4as_v4"]  # an eighth of an MI25, which the extract sells as a whole one
    assert (partial["gpu_count"], partial["gpu_memory_gib"], partial["flags"]) == ("0.125", "2.0", "all:fractional-gpu")
    assert "@corrected" not in rows["Standard_NC6s_v3"]["notes"]  # the extract agrees with the page: kept as is
    assert all("older catalog (v6), date unknown" in r["notes"] for r in rows.values())
