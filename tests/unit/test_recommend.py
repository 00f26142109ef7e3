"""Recommendations, checked against hand computations of the module's documented formulas."""

from __future__ import annotations

import json
import math
from decimal import Decimal

import pytest

from support import TODAY, offer
from gpu_assist.cli import main
from gpu_assist.commands import Context, RecommendCommand, parse_command, run
from gpu_assist.errors import ParseError
from gpu_assist.recommend import GIB, memory_needed, min_gpus, recommend, spot_overhead, training_hours
from gpu_assist.regions import location
from gpu_assist.workload import parse_workload


def _recommend(catalog, text, **options):
    return recommend(parse_workload(text, catalog.gpus), catalog, today=TODAY, **options)


def test_7b_full_training_needs_112_gb_of_states_and_never_fits_one_80_gb_gpu(catalog):
    workload = parse_workload("train 7B bf16", catalog.gpus)
    memory = memory_needed(workload)
    assert memory.parts["weights + gradients + optimizer state"] == 16 * 7e9 == 112e9
    assert memory.total_bytes > 80 * GIB
    assert min_gpus(memory, catalog.gpus.specs["H100"], 0.9) >= 2
    result = _recommend(catalog, "train 7B tokens=20B", top=500)
    eighty = {s.name for s in catalog.gpus if s.memory_gib <= 80}
    assert result.plans and all(p.gpu_count >= 2 for p in result.plans if p.gpu in eighty)


def test_70b_bf16_serving_needs_at_least_two_80_gb_gpus(catalog):
    memory = memory_needed(parse_workload("serve 70B bf16", catalog.gpus))
    assert memory.parts["weights"] == 140e9
    assert min_gpus(memory, catalog.gpus.specs["H100"], 0.9) >= 2
    result = _recommend(catalog, "serve 70B bf16", top=500)
    assert all(p.gpu_count >= 2 for p in result.plans if p.gpu in ("H100", "A100-80GB"))


def test_training_time_is_flops_over_gpus_times_peak_times_mfu(catalog):
    flops = 6 * 7e9 * 20e9
    expected_s = flops / (8 * 312e12 * 0.4)
    workload = parse_workload("train 7B tokens=20B", catalog.gpus)
    assert math.isclose(training_hours(flops, 8, catalog.gpus.specs["A100"], workload, hosts=1) * 3600, expected_s)
    result = _recommend(catalog, "train 7B tokens=20B interruptible=no provider=aws gpus=A100", top=50)
    p4d = next(p for p in result.plans if p.instance_type == "p4d.24xlarge" and p.pricing_model == "on-demand")
    assert p4d.gpu_count == 8 and math.isclose(p4d.hours * 3600, expected_s)
    # The price is the on-demand rate for exactly those billed seconds (AWS bills per second).
    assert p4d.total == p4d.total.quantize(Decimal("1e-12")) and p4d.total > 0


def test_multi_host_jobs_pay_the_scaling_efficiency(catalog):
    workload = parse_workload("train 7B tokens=20B", catalog.gpus)
    one = training_hours(1e21, 8, catalog.gpus.specs["A100"], workload, hosts=1)
    two = training_hours(1e21, 16, catalog.gpus.specs["A100"], workload, hosts=2)
    assert math.isclose(two, one / 2 / 0.9)


def test_a_plan_beyond_its_deadline_is_never_feasible(catalog):
    result = _recommend(catalog, "train 7B tokens=20B deadline=72h", top=1000)
    assert result.plans
    assert all(p.hours <= 72 and p.meets_deadline for p in result.plans)
    late = [p for p in result.rejected if p.meets_deadline is False]
    assert late and all(p.reasons[0].startswith("takes ") for p in late)


def test_budget_is_enforced_and_explained(catalog):
    result = _recommend(catalog, "train 7B tokens=20B budget=$500", top=1000)
    assert all(p.total <= 500 for p in result.plans)
    over = [p for p in result.rejected if p.within_budget is False]
    assert over and "> budget 500 USD" in over[0].reasons[0]


def test_region_cn_returns_only_chinese_regions(catalog):
    result = _recommend(catalog, "train 175B bf16 deadline=2w region=cn", top=1000)
    assert result.plans or result.rejected
    for plan in result.plans + result.rejected:
        assert location(plan.provider, plan.region)[0] == "CN"


def test_spot_plans_carry_the_checkpoint_overhead(catalog):
    workload = parse_workload("train 7B tokens=20B", catalog.gpus)
    a = workload.assumptions
    assert math.isclose(spot_overhead(a), (2 / 60) / 0.5 + 0.05 * (0.25 + 10 / 60))
    result = _recommend(catalog, "train 7B tokens=20B provider=aws gpus=A100", top=100)
    spot = next(p for p in result.plans if p.strategy == "spot + checkpoints" and p.instances == 1)
    on_demand = next(p for p in result.plans if p.strategy == "on-demand" and p.instance_type == spot.instance_type)
    assert math.isclose(spot.hours, on_demand.hours * (1 + spot_overhead(a)))


def test_mixed_fleet_and_interruptible_no(make_catalog):
    catalog = make_catalog(offer(instance_type="p4d.24xlarge", on_demand_hourly="32", spot_hourly="10"))
    mixed = _recommend(catalog, "train 70B tokens=100B deadline=30d", top=50)
    fleet = next(p for p in mixed.plans if p.pricing_model == "spot+on-demand")
    od = round(fleet.instances * 0.2) or 1
    spot_n = fleet.instances - od
    spot_plan = next(p for p in mixed.plans if p.pricing_model == "spot")
    assert fleet.total == (Decimal(10) * spot_n + Decimal(32) * od) * (
        spot_plan.total / (Decimal(10) * spot_plan.instances))
    calm = _recommend(catalog, "train 70B tokens=100B deadline=30d interruptible=no", top=50)
    assert {p.pricing_model for p in calm.plans} == {"on-demand"}


def test_own_hardware_is_a_plan_at_zero_marginal_cost(catalog):
    result = _recommend(catalog, "finetune 7B qlora tokens=100M own=2xRTX3090", top=5)
    own = result.plans[0]
    assert own.provider == "own" and own.total == 0 and own.hours is not None
    too_small = _recommend(catalog, "train 7B tokens=20B own=2xRTX3090", top=5)
    assert any(p.provider == "own" and "48 GB < 134 GB needed" in p.reasons[0] for p in too_small.rejected)


def test_reference_gpu_hours_scale_by_the_tflops_ratio(catalog):
    workload = parse_workload("train 7B gpu_hours=576@A100", catalog.gpus)
    result = _recommend(catalog, "train 7B gpu_hours=576@A100 gpus=H100 provider=aws interruptible=no", top=20)
    p5 = next(p for p in result.plans if p.instance_type == "p5.48xlarge")
    assert math.isclose(p5.hours, 576 * 312 / (8 * 989))
    assert workload.reference_gpu == "A100"


def test_pareto_front_is_marked(catalog):
    result = _recommend(catalog, "train 7B tokens=20B", top=1000)
    front = [p for p in result.plans if p.pareto]
    assert front and result.plans[0].pareto  # the cheapest feasible plan is never dominated
    for p in front:
        assert not any(q.total < p.total and q.hours < p.hours for q in result.plans if q.hours is not None)


def test_command_grammar_gives_the_same_plans(catalog):
    context = Context(catalog_loader=lambda: catalog, today=lambda: TODAY)
    command = parse_command("recommend finetune 70B lora top=3", catalog.gpus)
    assert isinstance(command, RecommendCommand) and command.top == 3
    assert run(command, context).plans == _recommend(catalog, "finetune 70B lora", top=3).plans


def test_json_has_the_documented_plan_fields(capsys):
    assert main(["recommend", "train", "7B", "tokens=20B", "deadline=72h", "budget=$5000", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    plan = payload["plans"][0]
    for field in ("gpu", "gpu_count", "provider", "region", "instance_type", "pricing_model", "hours", "total",
                  "currency", "meets_deadline", "within_budget", "assumptions"):
        assert field in plan
    assert plan["meets_deadline"] is True and plan["within_budget"] is True and plan["total"] <= 5000


def test_explain_prints_the_formulas(capsys):
    assert main(["recommend", "serve", "70B", "fp8", "users=50", "--explain", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "training FLOPs = 6 × params × tokens" in out and "KV cache" in out


@pytest.mark.parametrize("text, message", [
    ("recommend 7B", "say what to do"),
    ("recommend train", "give the model size"),
    ("recommend train 7B tokens=lots", "tokens 'lots' is not a number"),
    ("recommend train 7B int4", "training in int4 is not supported"),
    ("recommend serve 7B lora", "lora applies to finetune"),
    ("recommend train 7B budget=cheap", "'cheap' is not an amount"),
    ("recommend train 7B mfu=2", "mfu is a fraction"),
    ("recommend train 7B gpus=A1000", "unknown GPU 'A1000'"),
    ("recommend train 7B colour=blue", "unknown option 'colour'"),
    ("recommend train 7B gpu_hours=5", "gpu_hours needs the GPU"),
])
def test_bad_workloads_are_parse_errors(catalog, text, message):
    with pytest.raises(ParseError, match=message):
        parse_command(text, catalog.gpus)
