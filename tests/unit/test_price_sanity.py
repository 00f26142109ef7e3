"""Issue #31: upstream catalog defects are caught at import, as typed flags and labels, before they rank.

The acceptance figures are published ones: GCP a3-highgpu-8g us-central1 on-demand $88.49/h and a2-highgpu-8g
$29.39/h (Cyclenerd's pricing.yml from GCP's Cloud Billing Catalog, 2026-07-30, bundled as gcp_cud.csv); the
Flex-start H100 rate $4.200761 per GPU-hour (SKU 341A-49A5-0C07, SOURCES-plans.txt S-GCP-DWS-ZENN); Azure
Standard_ND96isr_H100_v5 = 8 x H100 (Microsoft's ndh100v5-series page) at $98.32/h in eastus.
"""

from __future__ import annotations

import csv
import json
import statistics
from decimal import Decimal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support import CATALOGS, SOURCES, TODAY, offer

from gpu_assist.catalog import load_catalog
from gpu_assist.catalog.report import defects_caught
from gpu_assist.cli import main
from gpu_assist.facts import Corrected, Flag, Labelled, LocalZone, SpotOutlier, parse_flags, parse_labels
from gpu_assist.pricing.query_parser import parse_request
from gpu_assist.pricing.quote import quote
from gpu_assist.render.notes import said
from gpu_assist.sources import sanity
from gpu_assist.sources.offer_row import OfferRow


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


@pytest.mark.clock
def test_no_resale_of_a_flagged_upstream_offer_is_ranked(catalog, capsys):
    """Verda's V100 (Datacrunch's) is flagged for review; every primeintellect/shadeform resale of it is too."""
    flagged_lines = set()
    for provider in ("verda", "lambda", "hyperstack", "nebius", "primeintellect", "shadeform"):
        for row in _rows(provider):
            line = sanity.upstream(row["provider"], row["instance_type"]) or row["provider"]
            if any(f.flag in sanity.PROPAGATING for f in parse_flags(row["flags"])):
                flagged_lines.add((line, row["gpu"]))
    assert ("verda", "V100") in flagged_lines
    for provider in ("primeintellect", "shadeform"):
        for row in _rows(provider):
            if (sanity.upstream(provider, row["instance_type"]), row["gpu"]) in flagged_lines:
                assert f"all:{Flag.UPSTREAM_FLAGGED}" in row["flags"], row
    assert main(["recommend", "train", "7B", "tokens=1T", "fp16", "--format", "json"]) == 0
    plans = json.loads(capsys.readouterr().out)["plans"]
    assert plans and not any(p["provider"] == "primeintellect" and p["gpu"] == "V100" for p in plans)


def test_the_p4d_use1_az1_spot_price_is_an_outlier_and_p4d_ranks_by_a_price_a_buyer_can_expect(catalog):
    p4d = [r for r in _rows("aws") if r["instance_type"] == "p4d.24xlarge" and r["spot_hourly"]]
    median = statistics.median(Decimal(r["spot_hourly"]) for r in p4d)
    outlier = next(r for r in p4d if r["zone"] == "use1-az1")
    assert f"spot:{Flag.SPOT_OUTLIER}" in outlier["flags"]
    label = next(lab for lab in parse_labels(outlier["notes"]) if isinstance(lab, SpotOutlier))
    assert label.zones == len(p4d) and label.median == median.quantize(Decimal("0.01"))
    option = _quote(catalog, "8xA100 72h").cheapest(instance_type="p4d.24xlarge", pricing_model="spot")
    assert option.zone != "use1-az1" and option.hourly >= median / 2
    for asked in ({"include_flagged": True}, {"all_regions": True}):  # shown when asked for, labelled
        shown = _quote(catalog, "8xA100 72h spot", **asked).cheapest(instance_type="p4d.24xlarge")
        assert shown.zone == "use1-az1" and shown.hourly == Decimal("2.4655")
        assert any(isinstance(n, Labelled) and n.label == label for n in shown.notes)
        assert any(f"spot outlier: below half the median of {len(p4d)} zones' spot prices" in n
                   for n in said(shown.notes))


def test_every_local_zone_row_says_so(catalog):
    local = [r for r in _rows("aws") if r["zone"].startswith(("use1-atl2", "usw2-lax1"))]
    assert local
    for row in local:
        assert LocalZone("all", f"@local-zone zone={row['zone']} wavelength=no", row["zone"], False) in \
            parse_labels(row["notes"])
    option = _quote(catalog, "8xH100 72h", all_regions=True).cheapest(zone="use1-atl2-az1")
    assert option and any(isinstance(n, Labelled) and isinstance(n.label, LocalZone) for n in option.notes)
    assert any("AWS Local Zone use1-atl2-az1" in n for n in said(option.notes))
    assert sanity.local_zone("use1-az1") is None and sanity.local_zone("usw2-wl1-las-wlz1").wavelength


@pytest.mark.clock
def test_catalog_status_counts_the_defects_each_rule_caught(capsys):
    assert main(["catalog", "status", "--format", "json"]) == 0
    status = {row["provider"]: row for row in json.loads(capsys.readouterr().out)}
    assert status["gcp"]["b"] >= 100 and status["gcp"]["c"] >= status["gcp"]["b"] - 4
    # Microsoft's size pages correct ND96isr_H100_v5's count (3 rows), NC*_H100_v5's H100 NVL (8) and NVv4's partial
    # GPUs (18 priced rows)
    assert status["azure"]["corrected"] == 3 + 8 + 18 and status["primeintellect"]["resale"] == 6 + 18  # both flags
    assert status["aws"]["e"] > 0 and status["verda"]["d"] == 1
    assert defects_caught([("spot:spot-outlier;all:upstream-flagged", "")])["resale"] == 1


# --- property: for any row that passes import, no rule holds ----------------------------------------------------

_PRICES = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("200"), places=2)


def _row(provider, instance_type, gpu, count, zone, on_demand, spot, flags=""):
    return OfferRow.from_csv_fields(offer(
        provider=provider, instance_type=instance_type, gpu=gpu, gpu_count=str(count), zone=zone,
        on_demand_hourly=str(on_demand), spot_hourly=str(spot) if spot else "", flags=flags, notes=""))


_ROWS = st.lists(st.tuples(st.sampled_from(["aws", "azure", "lambda", "nebius", "verda", "primeintellect"]),
                           st.sampled_from(["A100", "H100"]), st.sampled_from([1, 8]),
                           st.sampled_from(["", "z1", "z2", "z3", "z4"]), _PRICES, st.none() | _PRICES),
                 min_size=1, max_size=30)


_ZONES_WITH_AN_OUTLIER = [("aws", "A100", 8, zone, Decimal("21.96"), spot) for zone, spot in
                          (("z1", Decimal("2.47")), ("z2", Decimal("8.19")), ("z3", Decimal("9.73")))]


@settings(max_examples=150, deadline=None)
@given(_ROWS, st.booleans())
@example(_ZONES_WITH_AN_OUTLIER, False)
def test_no_rule_holds_for_a_row_that_passes_import(specs, upstream_flag):
    rows = [_row(p, f"datacrunch__{c}x{g}" if p == "primeintellect" else f"{g}x{c}", g, c, z, od, sp)
            for p, g, c, z, od, sp in specs]
    if upstream_flag:
        rows.append(_row("verda", "1A100.22V", "A100", 1, "", Decimal("1.29"), None,
                         flags=f"on_demand:{Flag.PRICE_NEEDS_REVIEW}"))
    medians = sanity.gpu_medians(rows)  # (d)'s reference: the rows as they came in
    by_provider: dict[str, list[OfferRow]] = {}
    for row in rows:
        by_provider.setdefault(row.provider, []).append(row)
    sanity.check(by_provider)
    rows = [row.csv_fields() for checked in by_provider.values() for row in checked]
    for row in rows:
        per_gpu_od = Decimal(row["on_demand_hourly"]) / Decimal(row["gpu_count"])
        if _unflagged(row, "on_demand") and row["gpu"] in medians:
            assert per_gpu_od >= medians[row["gpu"]] / 5  # (d)
        if row["spot_hourly"] and _unflagged(row, "spot"):
            zones = [Decimal(r["spot_hourly"]) for r in rows if r["zone"] and r["spot_hourly"]
                     and (r["provider"], r["instance_type"]) == (row["provider"], row["instance_type"])]
            if row["zone"] and len(zones) >= sanity.MIN_ZONES:
                assert Decimal(row["spot_hourly"]) >= statistics.median(zones) / 2  # (e)
        if upstream_flag and row["provider"] == "primeintellect" and row["gpu"] == "A100":
            assert not _unflagged(row, "on_demand")


_GCP_HEADER = ("InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,"
               "SpotPrice")
_REGIONS = ("us-central1", "europe-west4", "asia-northeast1")
_PART_RATES = st.sampled_from([Decimal("2.93391"), Decimal("3.10156"), Decimal("1.61365"), Decimal("1.70586"),
                               Decimal("0.5"), Decimal("3.5")])  # A100 list, Flex-start, shares, and a low one


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_PART_RATES, st.decimals(min_value=Decimal("0.5"), max_value=Decimal("9"), places=5),
                          st.none() | st.decimals(min_value=Decimal("5"), max_value=Decimal("60"), places=4),
                          st.sampled_from([Decimal(4), Decimal(10)])),  # the GPU part's spot: 4 or 10 GPUs' rate
                min_size=3, max_size=3))
def test_no_rule_a_b_c_holds_for_a_gcp_row_that_passes_import(tmp_path_factory, regions):
    """For any GCP host + A100 part prices (Flex-start rates among them) and billing-catalog hours: a quotable
    on-demand price has no Flex-start part (c), is not below its parts (a) and is within 10 % of the billing
    catalog where it prices the machine (b)."""
    from gpu_assist.catalog.gpus import load_gpus
    from gpu_assist.sources.committed import WithCommittedPrices
    from gpu_assist.sources.skypilot import SkyPilotSource

    directory = tmp_path_factory.mktemp("gcp")
    lines, cud = [_GCP_HEADER], ["machine_type,region,hour,hour_spot,month,month_1y,month_3y,commit"]
    for region, (rate, host, hour, spot_gpus) in zip(_REGIONS, regions):
        lines += [f"a2-highgpu-8g,96,680,,,,{region},{region}-a,{host},{host / 2}",
                  f",,,A100,8,,{region},{region}-a,{rate * 8},{rate * spot_gpus}"]
        if hour is not None:
            cud.append(f"a2-highgpu-8g,{region},{hour},,,,,x")
    (directory / "gcp_gpu.csv").write_text("\n".join(lines) + "\n")
    (directory / "gcp_cud.csv").write_text("\n".join(cud) + "\n")
    source = WithCommittedPrices(SkyPilotSource("gcp", directory, load_gpus(CATALOGS / "gpus.csv"), "2026-12-02"),
                                 directory)
    rows = [row.csv_fields() for row in source.rows()]
    assert len(rows) == len(_REGIONS)
    parts = {region: (rate, host, rate * spot_gpus) for region, (rate, host, _, spot_gpus) in zip(_REGIONS, regions)}
    rates = {rate for rate, *_ in regions}

    def flex_start(rate):  # the published A100 Flex-start rate, or 0.55 of another region's rate (part B)
        return rate == Decimal("1.61365") or any(rate == (other * Decimal("0.55")).quantize(Decimal("0.00001"))
                                                 for other in rates - {rate})

    list_rate = min((r for r in rates if not flex_start(r)), default=None)
    hours = {region: hour for region, (_, _, hour, _) in zip(_REGIONS, regions) if hour is not None}
    for row in rows:
        if not _unflagged(row, "on_demand"):
            continue
        on_demand, (rate, host, spot_part) = Decimal(row["on_demand_hourly"]), parts[row["region"]]
        if row["region"] in hours:  # (b) the billing catalog's price, within 10 %
            assert abs(on_demand - hours[row["region"]]) <= hours[row["region"]] * Decimal("0.1")
            continue
        assert not flex_start(rate)  # (c)
        assert on_demand >= host + max(8 * (list_rate or 0), spot_part)  # (a): its parts' least list prices


def test_a_resale_far_below_its_upstreams_own_price_is_flagged_and_labelled():
    """Prime Intellect resells Datacrunch (now Verda) H200s at $2.00/GPU-h where Verda asks $3.39: flagged, so
    the resale is left out of quotes, and labelled with the upstream's own price; a resale near it is not."""
    def row(provider, instance_type, on_demand):
        return OfferRow.from_csv_fields(offer(provider=provider, instance_type=instance_type, gpu="H200",
                                              gpu_count="1", on_demand_hourly=on_demand))
    rows = [row("verda", "1H200.141S.44V", "3.39"), row("primeintellect", "datacrunch__1xH200", "2.0"),
            row("primeintellect", "datacrunch__1xH200_b", "3.0")]
    sanity.flag_resold_below(rows)
    own, cheap, near = (checked.csv_fields() for checked in rows)
    assert cheap["flags"] == f"on_demand:{Flag.RESOLD_BELOW_SOURCE}" and not near["flags"] and not own["flags"]
    (label,) = parse_labels(cheap["notes"])
    assert label.upstream == "verda" and label.per_gpu == Decimal("3.39")
    assert "resold below its source" in said([label])[0]


def test_no_resale_below_its_source_ranks(catalog):
    for words in ("8xH200 72h", "1xH200 10h", "8xA100 72h"):
        for option in quote(parse_request(words, catalog.gpus), catalog, today=TODAY).options:
            assert not option.notes or not any(getattr(n, "flags", ()) for n in option.notes), option
            offers = catalog.offers_of_type(option.provider, option.instance_type)
            assert not any(o.flagged(option.pricing_model) for o in offers if o.region == option.region
                           and o.zone == (option.zone or o.zone)), option
