"""Plans a buyer could run (issue #32): each plan names its fabric and scales by it, spot risk grows with the
fleet, a marketplace listing is one machine, AWS plans say their quota, Capacity Blocks are a strategy, tco rents
the same host class, and twins fold. Properties over random inputs, then the issue's acceptance checks against the
bundled catalogs."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import TODAY, offer

from gpu_assist.catalog import Catalog
from gpu_assist.catalog.fabric import Link, SpotBand, block_days, load_plan_data
from gpu_assist.catalog.files import offer_values
from gpu_assist.cli import main
from gpu_assist.commands.quote_grammar import words_of
from gpu_assist.facts import (
    CapacityBlock,
    Fabric,
    FleetSpotRisk,
    Folded,
    MarketplaceHosts,
    NoFabric,
    QuotaNeeded,
    SpotOverheadHigh,
)
from gpu_assist.catalog.offers import MARKETPLACES
from gpu_assist.plan.recommendation import recommend
from gpu_assist.plan.sizing import CALIBRATION, calibrated, finish_chance, scaling, spot_overhead
from gpu_assist.plan.tco import parse_tco, total_cost_of_ownership
from gpu_assist.plan.workload import parse_workload
from gpu_assist.render.notes import words

pytestmark = pytest.mark.usefixtures("pinned_wall_clock")


def _recommend(catalog, text, **options):
    return recommend(parse_workload(text, catalog.gpus), catalog, today=TODAY, **options)


def _fabric(plan) -> Fabric:
    return next(r for r in plan.reasons if isinstance(r, Fabric))


# ---- properties --------------------------------------------------------------------------------------------

@given(instances=st.integers(1, 500), more=st.integers(1, 500), rate=st.floats(1e-6, 0.5))
def test_expected_spot_overhead_grows_with_the_instance_count(catalog, instances, more, rate):
    a = parse_workload("train 7B tokens=1T", catalog.gpus).assumptions
    assert spot_overhead(a, instances + more, rate) > spot_overhead(a, instances, rate)


@given(hosts=st.integers(2, 400), more=st.integers(1, 400), gbps=st.floats(1, 6400), faster=st.floats(1.01, 10),
       size=st.sampled_from(("1B", "7B", "70B", "405B")), gpu=st.sampled_from(("A100", "H100", "B200", "L4")),
       per_host=st.sampled_from((1, 4, 8)))
def test_efficiency_falls_with_hosts_and_rises_with_bandwidth(catalog, hosts, more, gbps, faster, size, gpu,
                                                              per_host):
    workload = parse_workload(f"train {size} tokens=1T", catalog.gpus)
    spec = catalog.gpus.specs[gpu]

    def efficiency(n: int, bandwidth: float) -> float:
        return scaling(workload, spec, per_host, n, Link("aws", "t", bandwidth, "EFA", "test")).efficiency

    assert 0 < efficiency(hosts + more, gbps) < efficiency(hosts, gbps) < 1
    assert efficiency(hosts, gbps * faster) > efficiency(hosts, gbps)
    assert efficiency(1, gbps) == 1.0


@given(value=st.floats(0.05, 1), hosts=st.integers(2, 300), gbps=st.one_of(st.none(), st.floats(1, 6400)))
def test_a_users_multi_host_efficiency_still_wins(catalog, value, hosts, gbps):
    workload = parse_workload(f"train 70B tokens=1T multi_host_efficiency={value!r}", catalog.gpus)
    link = Link("aws", "t", gbps, "EFA", "test") if gbps else None
    scaled = scaling(workload, catalog.gpus.specs["H100"], 8, hosts, link)
    assert scaled.efficiency == value and scaled.basis == "override"


@st.composite
def market_rows(draw):
    """Offers of marketplaces and of a cloud, 1-8 GPUs a host, with and without spot."""
    price = st.decimals(min_value=Decimal("0.2"), max_value=Decimal("40"), places=2)
    return offer(provider=draw(st.sampled_from((*MARKETPLACES, "nebius"))), region="us",
                 instance_type=f"m-{draw(st.integers(0, 10**6))}", gpu=draw(st.sampled_from(("A100", "H100", "L40S"))),
                 gpu_count=draw(st.sampled_from((1, 2, 4, 8))), gpu_memory_gib="", interconnect="unknown",
                 on_demand_hourly=draw(price), spot_hourly=draw(st.one_of(st.just(""), price.map(str))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(market_rows(), min_size=1, max_size=8),
       text=st.sampled_from(("train 7B tokens=1T", "train 70B tokens=100B scaling=0.9", "finetune 13B tokens=1B",
                             "finetune 70B lora tokens=1B", "train 7B tokens=20B deadline=72h scaling=0.8",
                             "serve 70B users=200")))
def test_no_plan_takes_more_marketplace_hosts_than_the_listing_has(catalog, rows, text):
    strings: dict[str, str] = {}
    offers = Catalog([offer_values(row, strings) for row in rows], catalog.gpus, catalog.fx, catalog.directory)
    result = _recommend(offers, text, top=None)
    for plan in result.plans:
        if plan.provider in MARKETPLACES:
            assert plan.instances == 1, plan
    for plan in result.rejected:
        if plan.provider in MARKETPLACES and plan.instances > 1:  # refused, for this or an earlier reason
            assert not plan.fits
            assert isinstance(plan.reasons[0], MarketplaceHosts) or not isinstance(plan.reasons[0], FleetSpotRisk)


@given(hours=st.floats(1, 2000), instances=st.integers(1, 200), rate=st.floats(1e-5, 0.2), slack=st.floats(0, 2))
def test_the_chance_to_finish_grows_with_the_deadline(catalog, hours, instances, rate, slack):
    a = parse_workload("train 7B tokens=1T", catalog.gpus).assumptions
    tight = finish_chance(a, hours, instances, rate, hours * (1 + slack))
    loose = finish_chance(a, hours, instances, rate, hours * (1 + slack) * 2)
    assert 0 <= tight <= loose <= 1


def test_capacity_block_lengths_follow_aws_steps():
    assert [block_days(h) for h in (1, 24, 25, 14 * 24, 14 * 24 + 1, 21 * 24 + 1, 182 * 24, 182 * 24 + 1)] == \
        [1, 1, 2, 14, 21, 28, 182, 0]


# ---- the sourced data ---------------------------------------------------------------------------------------

def test_the_network_and_spot_files_are_read_as_their_sources_state(catalog):
    data = load_plan_data(catalog.directory / "sources")
    p5 = data.link("aws", "p5.48xlarge")
    assert (p5.gbps, p5.trains) == (3200.0, True) and "EFA" in p5.fabric
    assert data.link("aws", "g6.xlarge").trains is False  # 2.5 Gbps Ethernet
    assert data.link("azure", "Standard_ND96asr_v4").gbps == 1600  # the price list's name for the docs' size
    assert data.link("gcp", "a3-ultragpu-8g-nolssd") == data.link("gcp", "a3-ultragpu-8g")
    assert data.link("vast", "anything") is None
    band = data.band("aws", "us-east-1", "p4d.24xlarge")
    assert band.as_of == "2025-06-28" and band.band in range(5)
    # 15 % of instances a month (band 2's upper bound) is -ln(0.85)/730 an instance-hour.
    assert math.isclose(SpotBand("r", "t", 2, "", "").rate_per_h, -math.log(0.85) / 730)
    assert {(w.instance_type, str(w.hourly)) for w in data.windows if w.provider == "aws"} >= \
        {("p5.48xlarge", "39.33"), ("p4d.24xlarge", "14.75")}


def test_the_scaling_model_against_the_published_points(catalog):
    """The calibration table of the closing note: within 10 % of the points the model claims (D4 GPT-3, D5, D1
    weak scaling); optimistic at D1's first node boundary and D4's fixed-size LoRA, which it says it misses."""
    table = {p.name: (p.published, calibrated(p, catalog.gpus), p.note) for p in CALIBRATION}
    assert len(table) == len(CALIBRATION) == 5
    for published, model, note in table.values():
        if note.startswith("not captured"):
            assert model > published
        else:
            assert abs(model - published) / published < 0.1, (published, model)


# ---- acceptance (issue #32) ----------------------------------------------------------------------------------

def test_7b_on_1t_tokens_runs_only_over_fabrics_and_counts_fleet_interruptions(catalog):
    result = _recommend(catalog, "train 7B tokens=1T", top=None)
    assert result.plans
    for plan in result.plans:
        fabric = _fabric(plan)  # each plan names its fabric (or says no source states it)
        assert fabric.instance_type == plan.instance_type and fabric.hosts == plan.instances
        if plan.instances > 2:
            assert fabric.trains, plan
    first = result.plans[0]
    a = result.workload.assumptions
    if first.pricing_model == "spot":
        risk = next(r for r in first.reasons if isinstance(r, FleetSpotRisk))
        assert risk.instances == first.instances
        assert math.isclose(risk.overhead, spot_overhead(a, first.instances, risk.rate_per_h))
        fabric = _fabric(first)
        efficiency = fabric.scaling.efficiency if fabric.scaling else 1.0
        base = 6 * 7e9 * 1e12 / (first.gpu_count * catalog.gpus.specs[first.gpu].bf16_tflops * 1e12 * a.mfu
                                 * efficiency) / 3600
        assert math.isclose(first.hours, base * (1 + risk.overhead))
    refused = [p for p in result.rejected if isinstance(p.reasons[0], NoFabric)]
    assert refused and all("≥ 100 Gbps" in words(p.reasons[0]) for p in refused)


def test_no_sharded_training_on_single_gpu_vms_without_efa(catalog):
    result = _recommend(catalog, "train 7B tokens=20B deadline=72h", top=None)
    assert result.plans
    assert not any(p.instance_type in ("g6.xlarge", "g5.xlarge", "g6e.xlarge") for p in result.plans)
    for plan in result.plans:
        if plan.instances > 2:
            assert _fabric(plan).trains


def test_the_default_rate_at_fleet_scale_ranks_a_spot_plan_behind(make_catalog):
    """At the default 0.05/h each, 14 instances interrupt 0.7 times an hour: +36 % expected time, over the 25 %
    limit, so the spot plan ranks behind the on-demand one though it is cheaper, and says why (20 instances would
    be +48 %)."""
    catalog = make_catalog(offer(provider="nebius", region="eu-north1", instance_type="h100x8", gpu="H100",
                                 on_demand_hourly="30", spot_hourly="17"))
    result = _recommend(catalog, "train 7B tokens=1T scaling=0.9 deadline=400h", top=None)
    spot = next(p for p in result.plans if p.pricing_model == "spot")
    assert spot.instances == 14 and isinstance(spot.reasons[0], SpotOverheadHigh)
    risk = next(r for r in spot.reasons if isinstance(r, FleetSpotRisk))
    assert risk.band is None and math.isclose(risk.overhead, 2 / 30 + 14 * 0.05 * (0.25 + 10 / 60))
    assert "default rate" in words(risk) and "+36% expected time" in words(risk)
    assert 0 < risk.chance < 1
    assert math.isclose(spot_overhead(result.workload.assumptions, 20, 0.05), 2 / 30 + 20 * 0.05 * (0.25 + 10 / 60))
    on_demand = next(p for p in result.plans if p.pricing_model == "on-demand")
    assert spot.total < on_demand.total and result.plans.index(spot) > result.plans.index(on_demand)


def test_aws_plans_say_the_quota_they_need(catalog):
    result = _recommend(catalog, "train 70B tokens=2T", top=None)
    p5 = next(p for p in result.plans if p.instance_type == "p5.48xlarge" and p.pricing_model == "spot")
    quota = next(r for r in p5.reasons if isinstance(r, QuotaNeeded))
    assert quota.code == "L-7212CCBC" and quota.vcpus == 192 * p5.instances and quota.granted is None
    assert "quota unknown" in words(quota)
    assert any("new account starts at 0 vCPUs of P" in words(line) for line in result.assumptions)


def test_a_capacity_block_plan_for_70b_in_21_days(catalog):
    result = _recommend(catalog, "train 70B tokens=2T deadline=21d")
    block = next(p for p in result.plans if p.pricing_model == "capacity-block")
    fact = next(r for r in block.reasons if isinstance(r, CapacityBlock))
    assert fact.days == 21 and block.billed_hours == 21 * 24 and not block.verified
    assert block.hours <= 21 * 24 and block.instances <= 256
    assert block.total == block.hourly * block.billed_hours
    assert block.hourly == Decimal("39.33") * block.instances  # the published p5.48xlarge rate
    assert "valid-before-2025-01-01" in words(fact)


def test_tco_prices_an_eight_gpu_host_for_an_eight_gpu_server(catalog):
    words = words_of("tco 8xH100 hardware=30000 usage=500h/mo")
    result = total_cost_of_ownership(parse_tco(words, catalog.gpus), catalog)
    assert "(8 GPUs)" in result.cloud_rate_source
    assert not result.cloud_rate_source.startswith(MARKETPLACES)


def test_twins_fold_into_one_line(make_catalog):
    catalog = make_catalog(offer(provider="nebius", region="eu-north1", instance_type="a100x2", gpu_count="2",
                                 on_demand_hourly="2"),
                           offer(provider="nebius", region="eu-north1", instance_type="a100x4", gpu_count="4",
                                 on_demand_hourly="4"))
    result = _recommend(catalog, "train 13B tokens=10B interruptible=no scaling=0.9", top=None)
    assert len(result.plans) == 1
    folded = next(r for r in result.plans[0].reasons if isinstance(r, Folded))
    assert folded.splits == ("4× a100x2",) and "also as 4× a100x2" in words(folded)


def test_explain_shows_the_scaling_and_interruption_arithmetic_with_sources(capsys):
    assert main(["recommend", "train", "7B", "tokens=1T", "--explain", "--top", "3"]) == 0
    out = capsys.readouterr().out
    section = out.partition("scaling and interruptions")[2]
    assert "ring all-reduce 2 × (" in section and "S-KARP-BW" in section and "link efficiency: D2" in section
    assert "spot: " in section and "interruptions/h of the job" in section
    assert "the scaling model against published figures" in out and "D5 MLPerf" in out
    assert all(len(line) <= 100 for line in out.splitlines())
