"""Quote arithmetic, checked against numbers computed by hand from the catalog rows each test uses."""

from __future__ import annotations

import csv
import math
from decimal import Decimal

from support import CATALOGS, SOURCES, TODAY, offer

from gpu_assist.facts import (
    DateUnknown,
    Flag,
    Flagged,
    IdleGpus,
    MultiHost,
    PricingModel,
    ReservedTerm,
    ReservedUnknown,
    ScopedFlag,
    SpotInterruption,
    Stale,
    Unverified,
)
from gpu_assist.catalog.ages import StaleFigure
from gpu_assist.pricing.query_parser import parse_request
from gpu_assist.pricing.quote import quote
from gpu_assist.render.notes import said


def _quote(catalog, text, **options):
    return quote(parse_request(text, catalog.gpus), catalog, today=TODAY, **options)


def test_cheapest_aws_on_demand_for_8xa100_72h_is_p4d_at_its_cheapest_region(catalog):
    with (CATALOGS / "aws.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r["gpu"] == "A100" and r["on_demand_hourly"] and not r["flags"]]
    cheapest = min(rows, key=lambda r: Decimal(r["on_demand_hourly"]))
    expected_total = Decimal(cheapest["on_demand_hourly"]) * 72  # one 8-GPU instance, 72 billed hours

    result = _quote(catalog, "8xA100 72h on-demand aws")
    best = result.options[0]
    assert (best.provider, best.instance_type, best.instances, best.region) == \
        ("aws", "p4d.24xlarge", 1, cheapest["region"])
    assert best.total == expected_total
    assert best.per_gpu_hour == expected_total / (8 * 72)
    assert result.cheapest(provider="aws", pricing_model="on-demand") is best


def test_sixteen_gpus_need_two_eight_gpu_instances(catalog):
    best = _quote(catalog, "16xA100 10h on-demand aws").options[0]
    assert best.instance_type == "p4d.24xlarge"
    assert best.instances == 2
    assert best.total == 2 * best.hourly * 10
    assert MultiHost(2) in best.notes and any("spans 2 hosts" in note for note in said(best.notes))


def test_three_gpus_on_an_eight_gpu_instance_leave_five_idle(make_catalog):
    catalog = make_catalog(offer(on_demand_hourly="32.77"))
    option = _quote(catalog, "3xA100 2h").options[0]
    assert option.instances == 1
    assert IdleGpus(5, 8) in option.notes and "5 of 8 GPUs idle" in said(option.notes)
    assert option.total == Decimal("32.77") * 2
    assert option.per_gpu_hour == Decimal("32.77") * 2 / (3 * 2)


def test_per_second_and_hourly_billing_bill_90_minutes_differently(make_catalog):
    catalog = make_catalog(
        offer(provider="aws", instance_type="per-second", on_demand_hourly="10", billing_granularity_s="1"),
        offer(provider="lambda", instance_type="hourly", on_demand_hourly="10", billing_granularity_s="3600",
              source="skypilot-lambda"),
    )
    result = _quote(catalog, "8xA100 90m on-demand")
    by_type = {o.instance_type: o for o in result.options}
    assert by_type["per-second"].billed_hours == Decimal("1.5")
    assert by_type["per-second"].total == Decimal(15)
    assert by_type["hourly"].billed_hours == Decimal(2)
    assert by_type["hourly"].total == Decimal(20)


def test_cny_rows_convert_at_the_fx_rate(make_catalog):
    catalog = make_catalog(offer(provider="tencent", region="cn", currency="CNY", on_demand_hourly="28",
                                 billing_granularity_s="3600", source="seed-000", as_of="", verified="no"))
    rate = catalog.fx.per_usd["CNY"]
    usd = _quote(catalog, "8xA100 72h").options[0]
    assert usd.currency == "USD"
    assert usd.total == Decimal(28) * 72 / rate
    assert any(f"converted from CNY at {rate.normalize():f} CNY/USD" in n for n in said(usd.notes))
    assert Unverified("seed-000") in usd.notes and DateUnknown() in usd.notes
    assert "unverified list price (seed-000)" in said(usd.notes) and "price date unknown" in said(usd.notes)
    cny = _quote(catalog, "8xA100 72h currency=CNY").options[0]
    assert cny.total == Decimal(28) * 72


def test_the_bundled_cny_rows_convert_at_the_bundled_rate(catalog):
    option = _quote(catalog, "8xA100 72h provider=tencent on-demand").cheapest(instance_type="GT4.41XLARGE948")
    assert option.instances == 1
    assert option.total == Decimal("237.51") * 72 / catalog.fx.per_usd["CNY"]
    assert option.verified and not option.trusted  # Tencent's own list, 2021-09-27: stale


def test_chinese_rows_carry_their_family_gpu_and_mismatches_are_left_out(catalog):
    """The articles' specs are checked against each instance family's documented GPU: aliyun gn7i is A10."""
    offers = catalog.offers
    gn7i = offers[(offers.provider == "aliyun") & offers.instance_type.str.startswith("gn7i")]
    assert len(gn7i) == 2 and set(gn7i.gpu) == {"A10"} and set(gn7i.gpu_memory_gib) == {24.0}
    tencent = offers[offers.provider == "tencent"]
    assert set(tencent[tencent.instance_type == "GN10Xp"].gpu) == {"V100-32GB"}
    seeds = tencent[tencent.source.str.startswith("seed-")]
    assert (seeds["flags"] == "all:article-claim-contradicted").all()
    assert _quote(catalog, "8xA100-80GB 72h provider=tencent").options == ()
    shown = _quote(catalog, "1xA10 1h provider=aliyun", include_flagged=True).options
    assert {o.instance_type for o in shown} == {"gn7i", "gn7i-c12g1"}
    assert any("contradicted by AL-SPEC-GPU-20210701" in note for o in shown for note in said(o.notes))


def test_flagged_prices_are_left_out_unless_asked_for(make_catalog):
    catalog = make_catalog(
        offer(instance_type="ok", on_demand_hourly="40", spot_hourly="10"),
        offer(instance_type="bad-spot", on_demand_hourly="30", spot_hourly="30", flags="spot:not-below-on-demand"),
        offer(instance_type="bad-all", on_demand_hourly="1", flags="all:zero-host-price"),
    )
    result = _quote(catalog, "8xA100 1h")
    seen = {(o.instance_type, o.pricing_model) for o in result.options}
    assert seen == {("ok", "on-demand"), ("ok", "spot"), ("bad-spot", "on-demand")}
    assert result.flagged_excluded == 2
    included = _quote(catalog, "8xA100 1h", include_flagged=True)
    assert ("bad-all", "on-demand") in {(o.instance_type, o.pricing_model) for o in included.options}
    flagged = included.cheapest(instance_type="bad-all").notes
    assert Flagged((ScopedFlag("all", Flag.ZERO_HOST_PRICE),)) in flagged
    assert "catalog flags: all:zero-host-price (included on request)" in said(flagged)


def test_the_bundled_flags_exclude_spot_equal_to_on_demand(catalog):
    result = _quote(catalog, "8xH100 1h spot provider=azure all-regions".replace(" all-regions", ""), all_regions=True)
    assert all(o.instance_type != "Standard_ND96isr_H100_v5" for o in result.options)
    assert result.flagged_excluded > 0


def test_gcp_offer_prices_are_host_plus_accelerator(catalog):
    with (SOURCES / "gcp_gpu.csv").open() as handle:
        raw = [r for r in csv.DictReader(handle) if r["AvailabilityZone"].startswith("us-central1-")]
    host = {r["AvailabilityZone"]: Decimal(r["Price"]) for r in raw if r["InstanceType"] == "a2-highgpu-8g"}
    gpu = {r["AvailabilityZone"]: Decimal(r["Price"]) for r in raw
           if r["AcceleratorName"] == "A100" and r["AcceleratorCount"] == "8"}
    expected = min(host[zone] + gpu[zone] for zone in host if zone in gpu)

    option = _quote(catalog, "8xA100 1h provider=gcp region=us-central1 on-demand").cheapest(
        instance_type="a2-highgpu-8g")
    assert option.hourly == expected
    assert option.total == expected  # one instance, one hour


def test_spot_notes_interruption_and_reports_savings(make_catalog):
    catalog = make_catalog(offer(on_demand_hourly="40", spot_hourly="10", zone="use1-az1"))
    spot = _quote(catalog, "8xA100 4h spot").options[0]
    assert spot.zone == "use1-az1"
    assert spot.savings_vs_on_demand == Decimal("0.75")
    assert SpotInterruption() in spot.notes and any("may be interrupted" in n for n in said(spot.notes))


def test_reserved_is_the_cost_of_the_whole_term_with_its_break_even(make_catalog):
    catalog = make_catalog(offer(on_demand_hourly="40", reserved_1y_hourly="24", reserved_3y_hourly="16"))
    result = _quote(catalog, "8xA100 72h reserved")
    one_year = result.cheapest(pricing_model="reserved-1y")
    assert one_year.total == Decimal(24) * 8760
    assert one_year.savings_vs_on_demand == Decimal("0.4")
    assert "breaks even vs on-demand at 438 h/month of use" in said(one_year.notes)  # 24 × 730 / 40
    assert result.cheapest(pricing_model="reserved-3y").total == Decimal(16) * 8760 * 3


def test_a_job_longer_than_a_term_buys_as_many_terms_as_it_needs(make_catalog):
    """A 1-year reservation covers 8,760 h: a 16,800 h job buys two of them, not one (its total is for the job)."""
    catalog = make_catalog(offer(on_demand_hourly="40", reserved_1y_hourly="24", reserved_3y_hourly="16"))
    result = _quote(catalog, "8xA100 100w reserved")
    one_year = result.cheapest(pricing_model="reserved-1y")
    assert one_year.total == Decimal(24) * 8760 * 2 and one_year.billed_hours == 8760 * 2
    assert ReservedTerm(1, 2, 16800 * 3600) in one_year.notes
    assert "commits to 2 consecutive 1-year terms (17520 h) for a 16800 h job" in said(one_year.notes)
    assert result.cheapest(pricing_model="reserved-3y").total == Decimal(16) * 8760 * 3  # one 3-year term


def test_reserved_unknown_is_said_not_invented(catalog):
    """AWS has 3-year prices (one dataset, us-east-1) and no 1-year ones: said, not invented."""
    result = _quote(catalog, "8xA100 72h reserved aws")
    assert {(o.pricing_model, o.region, o.source) for o in result.options} == \
        {("reserved-3y", "us-east-1", "aws-reserved-3y")}
    assert ReservedUnknown(PricingModel.RESERVED_1Y) in result.notices
    assert "reserved-1y: reserved price unknown (no source in the catalogs gives one)" in said(result.notices)


def test_monthly_shows_only_when_it_beats_on_demand(make_catalog):
    catalog = make_catalog(offer(provider="tencent", region="cn", on_demand_hourly="10", monthly="3000",
                                 source="seed-000", billing_granularity_s="3600"))
    short = _quote(catalog, "8xA100 72h")  # on-demand 720 < monthly 3000
    assert short.cheapest(pricing_model="monthly") is None
    long = _quote(catalog, "8xA100 2mo")  # on-demand 10 × 1460 = 14600 > 2 × 3000
    monthly = long.cheapest(pricing_model="monthly")
    assert monthly.total == Decimal(6000) and monthly.billed_hours == Decimal(1460)
    assert _quote(catalog, "8xA100 72h monthly").cheapest(pricing_model="monthly").total == Decimal(3000)


def test_stale_prices_are_labelled_with_their_age_and_limit(make_catalog):
    catalog = make_catalog(offer(as_of="2026-05-01"))
    notes = _quote(catalog, "8xA100 1h").options[0].notes
    assert [n for n in notes if isinstance(n, Stale)] == [StaleFigure("2026-05-01", 215, False, 180, True)]
    assert "stale: price as of 2026-05-01 (215 days old; limit 180)" in said(notes)


def test_default_keeps_the_cheapest_region_per_offer_and_all_regions_keeps_each(make_catalog):
    catalog = make_catalog(offer(region="us-east-1", on_demand_hourly="32"),
                           offer(region="eu-west-1", on_demand_hourly="35"))
    assert [o.region for o in _quote(catalog, "8xA100 1h").options] == ["us-east-1"]
    assert [o.region for o in _quote(catalog, "8xA100 1h", all_regions=True).options] == ["us-east-1", "eu-west-1"]


def test_region_groups_and_verified_only(catalog):
    cn = _quote(catalog, "8xA100 72h region=cn")
    assert cn.options and all(o.provider in ("aliyun", "tencent", "huawei") for o in cn.options)
    verified = _quote(catalog, "8xA100 72h", verified_only=True)
    assert verified.options and all(o.verified for o in verified.options)


def test_options_are_sorted_by_total(catalog):
    totals = [o.total for o in _quote(catalog, "8xH100 24h", all_regions=True).options]
    assert totals == sorted(totals) and len(totals) > 50
    assert math.isclose(float(totals[0]), float(min(totals)))
