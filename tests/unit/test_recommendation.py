"""Recommendations, checked against hand computations of the module's documented formulas."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal

import pytest
from support import TODAY, offer

from gpu_assist.catalog.regions import location
from gpu_assist.cli import main
from gpu_assist.commands import Context, RecommendCommand
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.errors import ParseError
from gpu_assist.facts import (
    Derived,
    Fabric,
    Fastest,
    FleetSpotRisk,
    Labelled,
    MultiHost,
    OverBudget,
    OverDeadline,
    Stale,
    TooManyToHold,
    Unverified,
)
from gpu_assist.catalog.offers import MARKETPLACES
from gpu_assist.plan.recommendation import DEFAULT_DATASET, recommend
from gpu_assist.plan.sizing import GIB, Part, memory_needed, min_gpus, spot_overhead, training_hours
from gpu_assist.plan.workload import parse_workload
from gpu_assist.render.notes import words
from gpu_assist.render.sizing import memory_parts

# The CLI reads today's date itself, as a user's run does: its answers here are on support.TODAY's.
pytestmark = pytest.mark.usefixtures("pinned_wall_clock")


def _recommend(catalog, text, **options):
    return recommend(parse_workload(text, catalog.gpus), catalog, today=TODAY, **options)


def test_7b_full_training_needs_112_gb_of_states_and_never_fits_one_80_gb_gpu(catalog):
    workload = parse_workload("train 7B bf16", catalog.gpus)
    memory = memory_needed(workload)
    assert memory.part(Part.MODEL_STATES) == 16 * 7e9 == 112e9
    assert memory.total_bytes > 80 * GIB
    assert min_gpus(memory, catalog.gpus.specs["H100"].memory_gib, 0.9) >= 2
    result = _recommend(catalog, "train 7B tokens=20B", top=500)
    eighty = {s.name for s in catalog.gpus if s.memory_gib <= 80}
    assert result.plans and all(p.gpu_count >= 2 for p in result.plans if p.gpu in eighty)


def test_70b_bf16_serving_needs_at_least_two_80_gb_gpus(catalog):
    memory = memory_needed(parse_workload("serve 70B bf16", catalog.gpus))
    assert memory.part(Part.WEIGHTS) == 140e9
    assert min_gpus(memory, catalog.gpus.specs["H100"].memory_gib, 0.9) >= 2
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
    result = _recommend(catalog, "train 7B tokens=20B deadline=72h max_instances=2", top=1000)
    assert result.plans
    assert all(p.hours <= 72 and p.meets_deadline for p in result.plans)
    late = [p for p in result.rejected if p.meets_deadline is False]
    assert late and all(isinstance(p.reasons[0], OverDeadline) and words(p.reasons[0]).startswith("takes ")
                        for p in late)


def test_budget_is_enforced_and_explained(catalog):
    result = _recommend(catalog, "train 7B tokens=20B budget=$500", top=1000)
    assert all(p.total <= 500 for p in result.plans)
    over = [p for p in result.rejected if p.within_budget is False]
    assert over and isinstance(over[0].reasons[0], OverBudget) and "> budget 500 USD" in words(over[0].reasons[0])


def test_region_cn_returns_only_chinese_regions(catalog):
    result = _recommend(catalog, "train 175B bf16 deadline=2w region=cn", top=1000)
    assert result.plans or result.rejected
    for plan in result.plans + result.rejected:
        assert location(plan.provider, plan.region)[0] == "CN"


def test_a_plan_that_cannot_hold_the_job_under_the_instance_cap_is_not_listed(catalog):
    """175B needs 3,360 GB: 145 A10s of 24 GiB. The cap of 128 instances used to cut a 1-GPU offer to 128 A10s
    and list it as feasible; it is refused now, saying why, and listed again when the cap allows 145."""
    result = _recommend(catalog, "train 175B bf16 deadline=2w region=cn scaling=0.9", top=1000)
    assert result.plans and not any(p.gpu == "A10" for p in result.plans)
    assert any(words(line).startswith("A10 (24 GiB): 3,360 GB needs ≥ 145 GPUs") for line in result.reasoning)
    a10 = next(p for p in result.rejected if p.gpu == "A10")
    assert not a10.fits and a10.gpu_count == 145
    assert a10.reasons[0] == TooManyToHold(145, 1, "A10", 145, a10.reasons[0].needed_gb, 128)
    assert words(a10.reasons[0]) == "needs 145 instances of 1×A10 (145 GPUs) to hold 3,360 GB; max_instances is 128 " \
                             "(max_instances=145 lifts it)"
    raised = _recommend(catalog, "train 175B bf16 deadline=2w region=cn max_instances=200 scaling=0.9", top=1000)
    assert {p.gpu_count for p in raised.plans if p.gpu == "A10"} == {145}


def test_an_offer_listing_less_memory_than_the_datasheet_is_sized_by_its_own(make_catalog):
    """AWS lists an L40S at 44.7 GiB, not the datasheet's 48: a 7B training job (134 GB) takes 4 of them, not 3.
    (Hosts whose network no source states, vouched for by multi_host_efficiency=: a g6e.xlarge's 2.5 Gbps would
    refuse 4 hosts.)"""
    catalog = make_catalog(offer(instance_type="l40s-test.xlarge", gpu="L40S", gpu_count="1", gpu_memory_gib="44.7",
                                 on_demand_hourly="2"),
                           offer(provider="lambda", instance_type="gpu_1x_l40s", gpu="L40S", gpu_count="1",
                                 gpu_memory_gib="48", on_demand_hourly="2"))
    result = _recommend(catalog, "train 7B tokens=1B interruptible=no multi_host_efficiency=0.9", top=50)
    assert {(p.provider, p.gpu_count, p.gpu_memory_gib) for p in result.plans} == {("aws", 4, 44.7),
                                                                                   ("lambda", 3, 48.0)}
    assert words(result.reasoning[0]).startswith(
        "L40S (44.7 GiB): 134 GB needs ≥ 4 GPUs (≥ 3 of the offers with 48 GiB)")


def test_money_has_one_unit_per_figure_without_a_job_length(make_catalog, capsys):
    """No tokens=: each plan has an hourly rate for all its instances (a monthly price per 730 h) and no total;
    every face says so: text and Slack `/h`, JSON `total: null`, CSV and Markdown an `hourly` column apart from
    `total`."""
    catalog = make_catalog(offer(provider="huawei", region="cn", instance_type="GPU-F16", gpu="A10", gpu_count="1",
                                 gpu_memory_gib="24", on_demand_hourly="", monthly="730", source="seed-000",
                                 verified="no"))
    result = _recommend(catalog, "train 70B bf16 max_instances=200 scaling=0.9", top=10)
    monthly = next(p for p in result.plans if p.pricing_model == "monthly")
    assert monthly.hours is None and monthly.total is None
    assert monthly.hourly == Decimal(1) * monthly.instances  # 730 a month is 1 an hour, per instance
    from gpu_assist.render import csv as render_csv  # noqa: F401
    from gpu_assist.render import json as render_json
    from gpu_assist.render import markdown, text
    from gpu_assist.render import plans as _plans  # noqa: F401 - registers the plans

    assert f"${monthly.instances:,}.00/h" in text.render(result)
    plan = json.loads(render_json.render(result))["plans"][0]
    assert plan["total"] is None and plan["hourly"] == monthly.instances and plan["hours"] is None
    header, row = render_csv.render(result).splitlines()[:2]
    cells = dict(zip(header.split(","), row.split(",")))
    assert cells["hourly"] == f"{monthly.instances}.0000" and cells["total"] == "" and cells["hours"] == ""
    assert "| hourly | total |" in markdown.render(result)
    from slackbot.blocks import recommendation_blocks

    assert f"${monthly.instances:,}.00/h" in recommendation_blocks(result)[1]["text"]["text"]  # Slack's card


def test_a_timed_plan_has_a_total_for_the_job_and_its_hourly_rate(catalog):
    result = _recommend(catalog, "train 7B tokens=20B interruptible=no provider=aws gpus=A100", top=50)
    p4d = next(p for p in result.plans if p.instance_type == "p4d.24xlarge" and p.pricing_model == "on-demand")
    assert p4d.hourly == Decimal("21.95764") * p4d.instances  # us-east-2, the cheapest region
    assert p4d.total == p4d.hourly * Decimal(math.ceil(p4d.hours * 3600)) / 3600  # billed per second


def test_spot_plans_carry_the_checkpoint_overhead(catalog):
    workload = parse_workload("train 7B tokens=20B", catalog.gpus)
    a = workload.assumptions
    assert math.isclose(spot_overhead(a), (2 / 60) / 0.5 + 0.05 * (0.25 + 10 / 60))
    result = _recommend(catalog, "train 7B tokens=20B provider=aws gpus=A100", top=100)
    spot = next(p for p in result.plans if p.strategy == "spot + checkpoints" and p.instances == 1)
    on_demand = next(p for p in result.plans if p.strategy == "on-demand" and p.instance_type == spot.instance_type)
    risk = next(r for r in spot.reasons if isinstance(r, FleetSpotRisk))
    assert risk.band is not None  # the Spot Advisor's band for p4d in its region, not the default rate
    assert math.isclose(spot.hours, on_demand.hours * (1 + spot_overhead(a, 1, risk.rate_per_h)))


def test_mixed_fleet_and_interruptible_no(make_catalog):
    catalog = make_catalog(offer(instance_type="p4d.24xlarge", on_demand_hourly="32", spot_hourly="10"))
    mixed = _recommend(catalog, "train 70B tokens=100B deadline=30d", top=50)
    fleet = next(p for p in mixed.plans if p.pricing_model == "spot+on-demand")
    od = round(fleet.instances * 0.2) or 1
    spot_n = fleet.instances - od
    spot_plan = next(p for p in mixed.plans if p.pricing_model == "spot")
    # The fleet runs, and is billed, for its own hours (per second here), shorter than the all-spot run's.
    assert fleet.billed_hours == Decimal(math.ceil(fleet.hours * 3600)) / 3600 < spot_plan.billed_hours
    assert fleet.total == (Decimal(10) * spot_n + Decimal(32) * od) * fleet.billed_hours
    calm = _recommend(catalog, "train 70B tokens=100B deadline=30d interruptible=no", top=50)
    assert {p.pricing_model for p in calm.plans} == {"on-demand"}


def test_own_hardware_is_a_plan_at_zero_marginal_cost(catalog):
    result = _recommend(catalog, "finetune 7B qlora tokens=100M own=2xRTX3090", top=5)
    own = result.plans[0]
    assert own.provider == "own" and own.total == 0 and own.hours is not None
    too_small = _recommend(catalog, "train 7B tokens=20B own=2xRTX3090", top=5)
    # 2 × 24 GiB × 90 % usable = 46.4 GB: GiB of GPU memory and GB of need in one unit
    assert any(p.provider == "own" and not p.fits
               and words(p.reasons[0]) == "2×RTX3090 hold 46 GB usable < 134 GB needed"
               for p in too_small.rejected)


def test_reference_gpu_hours_scale_by_the_tflops_ratio(catalog):
    workload = parse_workload("train 7B gpu_hours=576@A100", catalog.gpus)
    result = _recommend(catalog, "train 7B gpu_hours=576@A100 gpus=H100 provider=aws interruptible=no", top=20)
    p5 = next(p for p in result.plans if p.instance_type == "p5.48xlarge")
    assert math.isclose(p5.hours, 576 * 312 / (8 * 989))
    assert workload.reference_gpu == "A100"


def test_pareto_front_is_marked(catalog):
    result = _recommend(catalog, "train 7B tokens=20B", top=1000)
    front = [p for p in result.plans if p.pareto]
    # the first plan may be dominated by an untrusted one (a derived spot price ranks after it): only the front
    assert front
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
    ("recommend train 7B budget=cheap", "budget 'cheap' is not an amount — write it like 5000, 5k"),
    ("recommend train 7B budget=0", "budget must be above 0, not '0' — example:"),  # a budget is above 0
    ("recommend train 7B budget=0usd", "budget must be above 0, not '0usd' — a shell reads"),
    ("recommend train 7B mfu=2", "mfu is a fraction"),
    ("recommend train 7B gpus=A1000", "unknown GPU 'A1000'"),
    ("recommend train 7B colour=blue", "unknown option 'colour'"),
    ("recommend train 7B gpu_hours=5", "gpu_hours needs the GPU"),
])
def test_bad_workloads_are_parse_errors(catalog, text, message):
    with pytest.raises(ParseError, match=message):
        parse_command(text, catalog.gpus)


@pytest.mark.parametrize("typed, arrives", [
    ("budget=$5000", "budget=000"), ("budget=$5k", "budget=k"), ("budget=$5", "budget="),
    ("budget=$1.5k", "budget=.5k"), ("budget=$10k", "budget=0k"),
])
def test_a_budget_a_shell_ate_is_refused_and_explained(catalog, capsys, typed, arrives):
    """Unquoted, bash reads `$5` as a positional parameter: `budget=$5000` arrives as `budget=000`, which was taken
    as a budget of 0 (every plan "over budget", exit 0). Refused now, naming the shell's `$`, with an example that
    a shell passes unchanged; Slack, which expands nothing, still reads `budget=$5000`."""
    with pytest.raises(ParseError) as caught:
        parse_command(f"recommend train 7B tokens=20B {arrives}", catalog.gpus)
    message = str(caught.value)
    assert "a shell reads $5 in budget=$5000 as a variable" in message and "write budget=5000 or budget=5k" in message
    assert "$" not in message.partition("example: ")[2]
    assert main(["recommend", "train", "7B", arrives]) == 2
    first, *folded = capsys.readouterr().err.splitlines()  # one error, folded within 100 columns
    assert first.startswith("error: ") and all(line.startswith("  ") and len(line) <= 100 for line in folded)
    assert parse_command(f"recommend train 7B {typed}", catalog.gpus).workload.budget > 0


def test_examples_a_user_copies_pass_a_shell_unchanged(catalog):
    """`help` and recommend's errors show examples without `$`, so pasting one into a shell runs it as shown."""
    from gpu_assist.commands.objects import HELP

    assert "$" not in HELP
    for text in ("recommend", "recommend 7B", "recommend train 7B colour=blue", "recommend train 7B budget=x",
                 "recommend train 7B budget=000", "recommend train 7B deadline=soon"):
        with pytest.raises(ParseError) as caught:
            parse_command(text, catalog.gpus)
        example = str(caught.value).partition("example: ")[2]
        assert example and "$" not in example, text


def test_provider_words_and_provider_options_add_up(catalog):
    """`aws provider=gcp` asks for both, in either order, as a quote's words do (it used to fail on a tuple)."""
    for text in ("recommend train 7B aws provider=gcp,aws", "recommend train 7B provider=aws amazon gcp"):
        assert parse_command(text, catalog.gpus).workload.providers == ("aws", "gcp")
    with pytest.raises(ParseError, match="unknown provider 'Nowhere'"):
        parse_command("recommend train 7B provider=aws,Nowhere", catalog.gpus)


# ---- defaults a person would choose ----------------------------------------------------------------------

def test_no_deadline_means_30_days_stated_in_the_assumptions(catalog):
    result = _recommend(catalog, "train 7B tokens=1T")
    assert result.plans[0].hours <= 30 * 24 and result.plans[0].meets_deadline
    assert any(words(line).startswith("deadline: 30 days (none given; deadline=none lifts it)")
               for line in result.assumptions)
    lifted = _recommend(catalog, "train 7B tokens=1T deadline=none")
    assert lifted.workload.deadline_s is None and lifted.plans[0].total <= result.plans[0].total
    assert lifted.plans[0].hours > 30 * 24  # without the deadline the cheapest plan takes longer


def test_the_fastest_plan_is_always_named(catalog, capsys):
    """`--top 3` listed 5 plans (the cheapest Capacity Block and the fastest plan were added to the rows): the
    rows are now what the user asked for, and the two are named beside them."""
    result = _recommend(catalog, "train 7B tokens=1T", top=3)
    assert len(result.plans) == 3 and not any(isinstance(r, Fastest) for p in result.plans for r in p.reasons)
    fastest, block = result.beside
    assert fastest.reasons[0] == Fastest() and block.pricing_model == "capacity-block"
    everything = _recommend(catalog, "train 7B tokens=1T", top=1000)
    assert fastest.hours == min(p.hours for p in everything.plans if p.verified)
    assert main(["recommend", "train", "7B", "tokens=1T", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert len([line for line in out.splitlines() if re.match(r"\d+ +[\d,]+×", line)]) == 3
    assert re.search(r"^the fastest: [\d,]+×\S+, ", out, re.MULTILINE) and "\na Capacity Block: " in out


def test_a_finetune_without_tokens_is_one_epoch_of_the_stated_default_dataset(catalog, capsys):
    """`recommend finetune 70B lora` showed "?" for the time and total of every plan and ranked fewest GPUs
    first (a $4.89/h B200 above a $0.81/h A100 pair). A fine-tune given no tokens= is one epoch of a stated
    default dataset now, said once, and ranked by that total."""
    result = _recommend(catalog, "finetune 70B lora")
    assert result.dataset == DEFAULT_DATASET and result.workload.tokens == DEFAULT_DATASET.tokens
    assert all(p.hours is not None and p.total is not None for p in result.plans)
    trusted = [p.total for p in result.plans if p.verified]
    assert trusted == sorted(trusted)
    given = _recommend(catalog, f"finetune 70B lora tokens={DEFAULT_DATASET.tokens:.0f}")
    assert given.dataset is None and [p.total for p in given.plans] == [p.total for p in result.plans]
    assert main(["recommend", "finetune", "70B", "lora"]) == 0
    out = capsys.readouterr().out
    assert out.count("326M tokens assumed") == 1 and " ? " not in out
    assert "huggingface.co/datasets/Intel/neural-chat-dataset-v1-1" in out


def test_unverified_plans_never_rank_above_verified_ones(catalog):
    result = _recommend(catalog, "serve 70B fp8 users=50", top=1000)
    verified = [p.verified for p in result.plans]
    assert verified[0] and verified == sorted(verified, reverse=True)
    china = _recommend(catalog, "finetune 7B lora region=cn", top=50)
    assert china.plans and not any(p.verified for p in china.plans)
    assert all(isinstance(p.reasons[0], (Unverified, Stale)) for p in china.plans)  # every line says so first


def test_spreading_over_hosts_is_charged_and_noted(catalog):
    result = _recommend(catalog, "train 7B tokens=1T", top=1000)
    multi = next(p for p in result.plans if p.instances > 1 and p.pricing_model == "on-demand")
    assert not any(isinstance(r, MultiHost) for r in multi.reasons)  # the network is named instead
    fabric = next(r for r in multi.reasons if isinstance(r, Fabric))
    assert fabric.hosts == multi.instances and fabric.trains and fabric.scaling.basis == "network"
    workload = parse_workload("train 7B tokens=1T", catalog.gpus)
    spec = catalog.gpus.specs[multi.gpu]
    assert math.isclose(multi.hours, training_hours(6 * 7e9 * 1e12, multi.gpu_count, spec, workload,
                                                    hosts=multi.instances, efficiency=fabric.scaling.efficiency))
    assert math.isclose(training_hours(1e21, 16, spec, workload, hosts=16),
                        training_hours(1e21, 16, spec, workload, hosts=1) / 0.9)


def test_text_speaks_in_days_and_years_with_thousands_separators(capsys):
    assert main(["recommend", "train", "70B", "tokens=2T", "deadline=none", "gpus=A100", "--top", "1",
                 "--explain"]) == 0
    out = capsys.readouterr().out
    assert " years " in out and "GPU-hours" in out
    assert all(len(line) <= 100 for line in out.splitlines())


# ---- LoRA / QLoRA memory against the published figures ---------------------------------------------------

def _memory_gb(catalog, text):
    return memory_needed(parse_workload(text, catalog.gpus)).total_bytes / 1e9


def test_lora_memory_matches_the_lora_paper(catalog):
    """Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models" (arXiv:2106.09685), §4.2: on
    GPT-3 175B with r = 4 on W_q and W_v, training VRAM falls from 1.2 TB to 350 GB."""
    estimate = _memory_gb(catalog, "finetune 175B lora fp16 lora_rank=4 lora_targets=qv batch_tokens=512")
    assert abs(estimate - 350) / 350 <= 0.15


@pytest.mark.parametrize("size, published_gb", [
    # Dettmers et al. 2023, "QLoRA: Efficient Finetuning of Quantized LLMs" (arXiv:2305.14314), with the
    # paper's setting (r = 64 on every linear layer, paged 32-bit AdamW, batch 1 × 512 tokens):
    ("65B", 48),  # abstract and §1: a 65B model finetunes on a single 48 GB GPU
    ("33B", 24),  # §5.3: Guanaco 33B trains on 24 GB consumer GPUs
])
def test_qlora_memory_matches_the_single_gpu_figures_of_the_qlora_paper(catalog, size, published_gb):
    estimate = _memory_gb(catalog, f"finetune {size} qlora lora_rank=64 batch_tokens=512")
    assert abs(estimate - published_gb) / published_gb <= 0.15
    assert estimate <= published_gb  # it does fit the GPU the paper used


def test_qlora_7b_matches_the_papers_breakdown(catalog):
    """QLoRA §2, for LLaMA 7B, batch size 1, LoRA weights 0.2 % of the model: the 4-bit base model takes
    5,048 MB, the LoRA parameters 26 MB, the input gradients 18 MB per sequence with gradient checkpointing:
    5,092 MB in all (before optimizer state). r = 8 on all linear layers is 0.3 % of 7B here."""
    published_gb = (5048 + 26 + 18) / 1e3
    estimate = _memory_gb(catalog, "finetune 7B qlora lora_rank=8 batch_tokens=512")
    assert abs(estimate - published_gb) / published_gb <= 0.15


def test_qlora_13b_lies_between_the_published_7b_and_33b_figures(catalog):
    """The paper gives no 13B training figure we could check; the estimate must at least sit between 7B's
    breakdown (5.1 GB) and 33B's 24 GB, and below the 16-bit model alone (26 GB, Table 6's Vicuna 13B)."""
    estimate = _memory_gb(catalog, "finetune 13B qlora lora_rank=64 batch_tokens=512")
    assert 5.1 < estimate < 24 and estimate < 26


def test_lora_breakdown_parts_and_explain(catalog, capsys):
    workload = parse_workload("finetune 7B qlora", catalog.gpus)
    memory = memory_needed(workload)
    names = list(memory_parts(workload, memory))
    assert names[0].startswith("base weights (NF4 + double quant") and "paged AdamW" in names[1]
    assert names[2].startswith("activations (gradient checkpointing")
    lora_workload = parse_workload("finetune 7B lora", catalog.gpus)
    assert memory_parts(lora_workload, memory_needed(lora_workload))["base weights (bf16, frozen)"] == 14e9
    assert main(["recommend", "finetune", "7B", "qlora", "--explain", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "NF4 with double quantisation" in out and "base weights (NF4 + double quant" in out


# ---- plans a buyer acts on ---------------------------------------------------------------------------------

def _cli_json(capsys, *words):
    assert main(["recommend", *words, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_plan_at_a_precision_runs_at_that_precisions_rate_or_is_not_chosen(catalog, capsys):
    """V100 and T4 have fp16 tensor cores and no bf16 (gpus.csv leaves bf16 blank): a bf16 job was planned on
    them at their fp16 rate while A10G was left out for an unknown one. One rule now: a plan at a precision runs at
    that precision's rate; a GPU without it is not chosen, and "not chosen" says why and what to ask for."""
    payload = _cli_json(capsys, "train", "7B", "tokens=20B", "deadline=72h", "budget=5000")
    assert payload["plans"]
    for plan in payload["plans"]:
        spec = catalog.gpus.specs[plan["gpu"]]
        assert spec.bf16_tflops is not None, plan["gpu"]
        peak = plan["gpu_count"] * spec.bf16_tflops * 0.4  # × the plan's scaling over hosts, 1 on one host
        assert plan["effective_tflops"] <= peak * (1 + 1e-9)
        assert plan["instances"] > 1 or math.isclose(plan["effective_tflops"], peak)
    fp16_only = next(line for line in payload["not_planned"] if "V100," in line)
    assert {"T4", "V100", "V100-32GB"} <= set(fp16_only.partition(":")[0].split(", "))
    assert fp16_only.endswith("not planned at bf16 (gpus.csv gives no bf16 rate, only fp16: ask for fp16)")
    assert any(line.startswith("A10G") or ", A10G," in line for line in payload["not_planned"])
    assert main(["recommend", "train", "7B", "tokens=20B", "deadline=72h", "budget=5000", "--explain"]) == 0
    chosen, _, rest = capsys.readouterr().out.partition("not chosen:")
    assert "V100" not in chosen and "ask for fp16)" in rest.partition("reasoning:")[0]
    assert "  V100: not planned at bf16" in rest  # and the reasoning line of the GPU
    # Asked for fp16, the same V100s are planned, at their fp16 rate.
    fp16 = _cli_json(capsys, "train", "7B", "fp16", "tokens=20B", "deadline=72h", "gpus=V100", "scaling=0.9")
    assert fp16["plans"] and all(math.isclose(p["effective_tflops"], p["gpu_count"] * 125 * 0.4
                                              * (0.9 if p["instances"] > 1 else 1)) for p in fp16["plans"])


def test_fp8_is_planned_only_on_gpus_with_an_fp8_rate_and_own_gpus_follow_the_same_rule(catalog, capsys):
    payload = _cli_json(capsys, "train", "7B", "fp8", "tokens=20B", "own=8xV100")
    assert payload["plans"] and all(catalog.gpus.specs[p["gpu"]].fp8_tflops for p in payload["plans"])
    assert any(line.endswith("not planned at fp8 (gpus.csv gives no fp8 rate, only bf16, fp16: ask for bf16)")
               and "A100," in line for line in payload["not_planned"])
    own = next(p for p in payload["rejected"] if p["provider"] == "own")
    assert own["reasons"][0].startswith("not planned at fp8")
    # fp32 trains in 16-bit mixed precision, which the reasoning says.
    result = _recommend(catalog, "train 7B fp32 tokens=20B gpus=V100,A100", top=5)
    assert any(words(line).endswith("(fp32 computes in fp16 on V100)") for line in result.reasoning)


def test_reference_gpu_hours_need_the_reference_gpus_rate_at_the_precision(capsys):
    assert main(["recommend", "train", "7B", "gpu_hours=576@V100"]) == 2
    err = capsys.readouterr().err
    assert "gpus.csv gives no bf16 rate for V100" in err and "name the precision it ran at (fp16)" in err
    assert main(["recommend", "train", "7B", "fp16", "gpu_hours=576@V100", "--top", "1"]) == 0


@pytest.mark.parametrize("words", [
    ("train", "7B", "tokens=1T"), ("train", "70B", "tokens=100B", "deadline=none"),
    ("finetune", "13B", "tokens=1B", "deadline=2d"), ("train", "7B", "tokens=20B", "interruptible=no"),
    ("serve", "70B", "users=50"), ("finetune", "7B", "qlora", "tokens=100M", "own=2xRTX3090"),
])
def test_every_plans_total_is_its_own_hours_billed_at_its_own_rate(capsys, words):
    """An 80/20 fleet was billed for the longer all-spot run (701.57 h × $50.376/h shown as $35,867.71, 712 h).
    Every plan's total is now hourly × billed hours, the billed hours its own hours rounded up to whole billing
    units (reserved: whole terms), and `--explain` lists each plan's."""
    plans = _cli_json(capsys, *words, "--top", "1000")["plans"]
    assert plans
    if words[0] == "train" and "interruptible=no" not in words:
        assert any(p["pricing_model"] == "spot+on-demand" for p in plans)
    for plan in plans:
        assert math.isclose(plan["total"], plan["hourly"] * plan["billed_hours"], rel_tol=1e-9, abs_tol=0.006), plan
        assert plan["billed_hours"] >= plan["hours"] - 1e-6
        if not plan["pricing_model"].startswith(("reserved", "monthly", "capacity-block")):  # whole terms, days
            assert plan["billed_hours"] - plan["hours"] < 1.001, plan
    assert main(["recommend", *words, "--explain", "--top", "3"]) == 0
    billing = capsys.readouterr().out.partition("billing (total = hourly × billed hours")[2].splitlines()[1:4]
    assert len(billing) == min(3, len(plans)) and all(" h billed × " in line for line in billing)


def test_an_80_20_fleet_is_billed_for_its_own_hours(capsys):
    # verda's hosts: no source states their network, so the user vouches for them (multi_host_efficiency=).
    plans = _cli_json(capsys, "train", "7B", "tokens=1T", "multi_host_efficiency=0.9", "--top", "1000")["plans"]
    fleet = next(p for p in plans if p["pricing_model"] == "spot+on-demand" and p["instance_type"] == "1B200.30V")
    spot = next(p for p in plans if p["pricing_model"] == "spot" and p["instance_type"] == "1B200.30V")
    assert fleet["hours"] < spot["hours"] and fleet["billed_hours"] == math.ceil(fleet["hours"])  # verda: hourly
    assert fleet["total"] == round(fleet["hourly"] * fleet["billed_hours"], 2)


def test_serving_obeys_the_instance_cap_and_counts_carry_separators(catalog, capsys):
    """`serve 13B users=1000000` listed `1000000×A40 cudo 1000000× ice-lake-a40…`: serving had no instance cap,
    and counts no separators. Now an offer needing more than `max_instances` instances is refused, saying how to
    lift the cap, with counts written 1,000,000 like money; and it answers at once (one layout per distinct
    number of users per replica, not per replica count)."""
    assert main(["recommend", "serve", "13B", "users=1000000"]) == 0
    out = capsys.readouterr().out
    assert "no plan meets every constraint" in out
    assert re.search(r"\d,\d{3}×\S+ \(.*\): needs \d,\d{3} instances of .* to serve 1,000,000 users; "
                     r"max_instances is 128 \(max_instances=\d+ lifts it\)", " ".join(out.split()))
    assert "1000000" not in out
    payload = _cli_json(capsys, "serve", "13B", "users=1000000")
    assert payload["plans"] == [] and payload["rejected"]
    # (a marketplace listing is one machine whatever the cap: the lifted cap is checked on a cloud's offer)
    needed = next(p for p in payload["rejected"] if "max_instances=" in p["reasons"][0]
                  and p["provider"] not in MARKETPLACES)
    assert needed["instances"] > 128 and f"(max_instances={needed['instances']} lifts it)" in needed["reasons"][0]
    # The cap, lifted as the refusal says, lets that offer be planned.
    lifted = _recommend(catalog, f"serve 13B users=1000000 max_instances={needed['instances']} "
                                 f"gpus={needed['gpu']}", top=1000)
    assert any(p.instance_type == needed["instance_type"] and p.instances == needed["instances"]
               for p in lifted.plans)
    assert all(p.instances <= 128 for p in _recommend(catalog, "serve 13B users=1000", top=1000).plans)
    assert main(["recommend", "serve", "13B", "users=100000", "max_instances=10000", "--top", "3"]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if re.match(r"\d+ +[\d,]+×", line)]
    assert len(table) == 3 and re.match(r"\d +\d,\d{3}×\S+ .* \d{3}× ", table[0]), table  # thousands: a separator
    assert not any(re.search(r"\d{4,}×", line) for line in table), table


def test_a_serving_replica_stays_inside_one_host_by_adding_replicas(make_catalog):
    """A 70B replica of 8 GPUs fits an 8-GPU host for a few users; for 50 users its KV cache needed 16, which
    would span hosts and was refused: more replicas of 8, each serving fewer users, can run (on a cloud's 8-GPU
    hosts: a marketplace listing is one machine)."""
    catalog = make_catalog(offer(provider="nebius", region="eu-north1", instance_type="rtx3090x8", gpu="RTX3090",
                                 gpu_count="8", gpu_memory_gib="24", interconnect="pcie", on_demand_hourly="3"))
    result = _recommend(catalog, "serve 70B users=50 gpus=RTX3090", top=1000)
    eight = [p for p in result.plans if p.gpus_per_instance == 8]
    assert eight and all(p.gpu_count % 8 == 0 and p.gpu_count > 8 for p in eight)


@pytest.mark.parametrize("fmt", ["markdown", "csv"])
def test_tables_leave_a_verdict_blank_where_there_is_nothing_to_judge(capsys, fmt):
    """Serving has no deadline and no budget was given: Markdown printed `None | None`."""
    assert main(["recommend", "serve", "13B", "users=50", "--format", fmt, "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "None" not in out
    header, row = out.splitlines()[0], out.splitlines()[2 if fmt == "markdown" else 1]
    split = (lambda line: [c.strip() for c in line.strip("|").split("|")]) if fmt == "markdown" else \
        (lambda line: line.split(","))
    cells = dict(zip(split(header), split(row)))
    assert cells["meets_deadline"] == "" and cells["within_budget"] == ""
    assert main(["recommend", "train", "7B", "tokens=20B", "budget=5000", "--format", fmt, "--top", "1"]) == 0
    out = capsys.readouterr().out
    cells = dict(zip(split(out.splitlines()[0]), split(out.splitlines()[2 if fmt == "markdown" else 1])))
    assert cells["within_budget"] == ("yes" if fmt == "markdown" else "True")


def test_the_title_says_the_order_the_plans_are_in(capsys):
    """Without tokens= the plans are ranked fewest GPUs first (87×A100 at $392.31/h above 88×A100 at $116.40/h),
    yet the title said "cheapest first"."""
    assert main(["recommend", "train", "175B", "bf16", "deadline=2w", "region=cn", "scaling=0.9"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("train 175B bf16 — 2 feasible plans, fewest GPUs first, then the cheapest hour (USD)\n")
    assert "cheapest first" not in out.splitlines()[0]
    counts = [int(re.match(r"\d+\*? +([\d,]+)×", line)[1].replace(",", "")) for line in out.splitlines()
              if re.match(r"\d+\*? +[\d,]+×", line)]
    assert counts == sorted(counts)
    assert main(["recommend", "train", "7B", "tokens=20B", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith(", cheapest first (USD)")
    assert out.splitlines()[1].startswith("Ranked: among plans that meet the 30-day deadline, the lowest expected")
    assert main(["recommend", "serve", "13B", "users=1000000"]) == 0
    assert capsys.readouterr().out.startswith("serve 13B bf16 — 0 feasible plans (USD)\n")


@pytest.mark.parametrize("word, message, example", [
    ("tokens=20", "tokens=20 is 20 tokens — did you mean 20B?", "recommend train 7B tokens=20B"),
    ("tokens=500k", "tokens=500k is 500,000 tokens — tokens are counted in millions", "tokens=20B"),
    ("tokens=0", "tokens must be above 0, not '0' — leave tokens= out", "tokens=20B"),
    ("context=0", "context must be a positive number, not '0'", "recommend serve 70B context=8k"),
    ("checkpoint=0", "checkpoint must be a positive number, not '0'", "recommend train 7B tokens=20B checkpoint=15m"),
    ("max_instances=0", "max_instances must be a positive number", "max_instances=200"),
    ("max_instances=0.5", "max_instances must be a whole number, not '0.5'", "max_instances=200"),
    ("lora_rank=-1", "lora_rank must be a positive number, not '-1'", "recommend finetune 7B lora lora_rank=16"),
    ("users=-5", "users '-5' is not a number like 50 or 2k", "recommend serve 70B users=50"),
    ("gpu_hours=0@A100", "gpu_hours must be above 0", "recommend train 7B gpu_hours=576@A100"),
    ("region=mars", "unknown region 'mars'", "recommend train 7B region=eu"),
    ("gpus=A1000", "unknown GPU 'A1000' — did you mean A100?", "recommend train 7B gpus=A100,H100"),
    ("own=2xRTX9999", "unknown GPU 'RTX9999'", "recommend finetune 7B qlora own=2xRTX3090"),
    ("currency=EUR", "unknown currency 'EUR' — known: USD, CNY", "recommend train 7B currency=CNY"),
])
def test_nonsense_is_refused_with_an_example_about_the_word_that_was_wrong(capsys, word, message, example):
    """`tokens=20` planned 20 tokens (`9×T4 spot 1 min $0.00`), `tokens=0` read as no job length, `context=0`
    passed; errors suggested `mfu=0.35` for `checkpoint=0` and quote examples (`8xA100 72h`) that fail under
    recommend. Each is one error now, its example a recommend line about the word that was wrong, which works."""
    assert main(["recommend", "train", "7B", word]) == 2
    err = " ".join(capsys.readouterr().err.split())
    # Past 100 columns the message, hint and example each start a line instead of joining with " — ".
    assert all(part in err for part in message.split(" — ")) and err.endswith(example), err
    shown = err.rpartition("example: ")[2]
    assert shown.startswith("recommend ") and "mfu=0.35" not in err and "8xA100" not in err
    assert main(shown.split() + ["--top", "1"]) == 0, shown  # the example itself runs
    capsys.readouterr()


def test_own_gpus_at_no_marginal_cost_are_on_the_pareto_front(capsys):
    """`own=2xRTX3090` at $0.00 was not marked `*` though no plan is cheaper: own plans were left out of the
    front. They count at the marginal cost their plan states; a cloud plan slower and dearer is then dominated."""
    plans = _cli_json(capsys, "finetune", "7B", "qlora", "tokens=100M", "own=2xRTX3090", "--top", "1000")["plans"]
    own = next(p for p in plans if p["provider"] == "own")
    assert own["pareto"] and own["total"] == 0
    assert not any(p["pareto"] for p in plans if p["hours"] > own["hours"])
    for p in plans:
        dominated = any(q["total"] <= p["total"] and q["hours"] <= p["hours"]
                        and (q["total"] < p["total"] or q["hours"] < p["hours"]) for q in plans)
        assert p["pareto"] is not dominated, p
    assert main(["recommend", "finetune", "7B", "qlora", "tokens=100M", "own=2xRTX3090", "--top", "3"]) == 0
    assert re.search(r"^1 +2×RTX3090 +own ", capsys.readouterr().out, re.MULTILINE)


def test_a_plan_on_a_derived_spot_price_never_ranks_above_one_on_a_price_someone_set(catalog):
    plans = _recommend(catalog, "train 7B tokens=20B deadline=72h budget=5000", top=10_000).plans
    derived = [n for n, p in enumerate(plans)
               if any(isinstance(r, Labelled) and isinstance(r.label, Derived) for r in p.reasons)]
    assert derived, "verda's spot prices (0.35 × on-demand in the source) should still be planned"
    assert all(not plans[n].verified for n in derived)
    assert max(n for n, p in enumerate(plans) if p.verified) < min(derived)
