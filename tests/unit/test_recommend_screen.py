"""`recommend` as a new user meets it: the README's examples fit a screen, `--top N` gives N plans, the ranking
rule is one sentence that holds (a cheaper spot plan ranks for training, never for serving unless `spot` is
asked), `sort=fastest` orders by time, and the offers pass the filters a quote's do."""

from __future__ import annotations

import json
import re

import pytest
from support import TODAY

from gpu_assist.cli import main
from gpu_assist.facts import LocalZone, PricingModel
from gpu_assist.plan.plans import CAPACITY_BLOCK
from gpu_assist.plan.recommendation import recommend
from gpu_assist.plan.workload import parse_workload

pytestmark = pytest.mark.usefixtures("pinned_wall_clock")

ROW = re.compile(r"^\d+ +[\d,]+×\S+ ")  # a plan's row in the text: its rank, then its GPUs


def _text(capsys, *words):
    assert main(["recommend", *words]) == 0
    return capsys.readouterr().out


def _json(capsys, *words):
    assert main(["recommend", *words, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("columns", ["100", "80"])
@pytest.mark.parametrize("words", ["train 7B tokens=1T", "finetune 70B lora", "serve 70B fp8 users=50"])
def test_the_readme_examples_fit_a_screen(capsys, monkeypatch, columns, words):
    """`recommend train 7B tokens=1T` printed 171 lines: 36 footnotes, a reasoning line for each of ~50 GPU types
    (K80 and RTX3060 among them), 12 plans for the default 10. Now: the plans with one line of reasons each and
    a short footer: within 45 lines at 100 columns; at 80, where a plan's instance moves to its reasons line and
    those lines fold, within 52. No line is wider than the terminal."""
    monkeypatch.setenv("COLUMNS", columns)
    out = _text(capsys, *words.split())
    lines = out.splitlines()
    assert len(lines) <= (45 if columns == "100" else 52), out
    assert max(map(len, lines)) <= int(columns), out
    assert len([line for line in lines if ROW.match(line)]) == 10
    assert "K80" not in out and "reasoning:" not in out  # each GPU's reasoning is `explain`'s
    assert sum("GPU types not planned: " in line for line in lines) == 1


def test_top_n_gives_n_plans_and_names_the_fastest_beside_them(capsys):
    """`--top 3` printed 5 plans (the fastest and a Capacity Block added as rows) and 128 lines."""
    out = _text(capsys, "train", "7B", "tokens=1T", "--top", "3")
    assert len([line for line in out.splitlines() if ROW.match(line)]) == 3
    assert out.splitlines()[0].startswith("train 7B bf16 — 3 of ")
    assert re.search(r"^the fastest: ", out, re.MULTILINE)
    payload = _json(capsys, "train", "7B", "tokens=1T", "top=3")
    assert len(payload["plans"]) == 3 and payload["feasible"] > 3
    assert any(plan["pricing_model"] == CAPACITY_BLOCK for plan in payload["beside"])


def test_a_cheaper_spot_plan_ranks_for_training_but_never_for_serving(catalog, capsys):
    """The rule, one sentence in the answer: among plans that meet the deadline, the lowest expected total first,
    spot plans carrying their interruptions and checkpoints; only jobs that checkpoint rank on spot unless `spot`
    is asked."""
    train = recommend(parse_workload("train 7B tokens=1T", catalog.gpus), catalog, today=TODAY)
    assert train.plans[0].pricing_model == PricingModel.SPOT and train.plans[0].meets_deadline
    totals = [p.total for p in train.plans if p.verified]
    assert totals == sorted(totals)
    serve = _json(capsys, "serve", "70B", "fp8", "users=50", "provider=aws", "--top", "all")
    assert serve["plans"] and not any("spot" in plan["pricing_model"] for plan in serve["plans"])
    asked = _json(capsys, "serve", "70B", "fp8", "users=50", "provider=aws", "spot", "--top", "all")
    assert asked["plans"][0]["pricing_model"] == "spot"  # the cheapest when asked for, never ranked unasked
    assert asked["plans"][0]["total"] < serve["plans"][0]["total"]
    out = _text(capsys, "serve", "70B", "fp8", "users=50")
    assert "a serving plan never runs on spot unless `spot` is asked" in " ".join(out.split())
    out = _text(capsys, "train", "7B", "tokens=1T")
    assert "Ranked: among plans that meet the 30-day deadline, the lowest expected total first; spot plans carry " \
           "their interruption overhead and checkpoints" in " ".join(out.split())


def test_sort_fastest_orders_by_time(capsys):
    plans = _json(capsys, "train", "7B", "tokens=1T", "sort=fastest")["plans"]
    hours = [plan["hours"] for plan in plans if plan["verified"]]
    assert hours == sorted(hours)
    everything = _json(capsys, "train", "7B", "tokens=1T", "--top", "all")["plans"]
    assert hours[0] == min(plan["hours"] for plan in everything if plan["verified"])
    assert _json(capsys, "train", "7B", "tokens=1T", "--sort", "fastest")["plans"] == plans
    fewest = _json(capsys, "train", "7B", "tokens=1T", "sort=fewest-gpus")["plans"]
    counts = [plan["gpu_count"] for plan in fewest if plan["verified"]]
    assert counts == sorted(counts)
    assert "Ranked: by expected time, the shortest first" in _text(capsys, "train", "7B", "tokens=1T", "sort=fastest")
    assert main(["recommend", "train", "7B", "sort=price"]) == 2
    err = capsys.readouterr().err
    assert "unknown sort 'price' for recommend" in err and "recommend train 7B tokens=1T sort=fastest" in err


def _offer(catalog, plan):
    return next(o for o in catalog.offers_of_type(plan.provider, plan.instance_type)
                if o.region == plan.region and (not plan.zone or o.zone == plan.zone))


def test_recommend_draws_its_offers_through_a_quotes_filters(catalog):
    """No Local Zone spot price, no zone's spot outlier and no resale below its source's own price, as a quote;
    `include-flagged` plans on the flagged prices, as a quote shows them on request."""
    words = "finetune 7B lora gpus=A100,A100-80GB,H100,H200,L4,L40S,B200"
    plans = recommend(parse_workload(words, catalog.gpus), catalog, today=TODAY, top=None).plans
    cloud = [p for p in plans if p.provider != "own" and p.pricing_model != CAPACITY_BLOCK]
    assert cloud
    for plan in cloud:
        model = PricingModel.SPOT if "spot" in plan.pricing_model else PricingModel(plan.pricing_model)
        offer = _offer(catalog, plan)
        assert not offer.flagged(model), plan
        assert model != PricingModel.SPOT or not any(isinstance(label, LocalZone) for label in offer.notes), plan
    flagged = recommend(parse_workload(words, catalog.gpus), catalog, today=TODAY, top=None,
                        include_flagged=True).plans
    assert any(_offer(catalog, p).flagged(PricingModel.SPOT if "spot" in p.pricing_model
                                          else PricingModel(p.pricing_model))
               for p in flagged if p.provider != "own" and p.pricing_model != CAPACITY_BLOCK)


def test_a_providers_host_sizes_fold_into_one_row(capsys):
    """Five near-identical A800 host sizes of one provider filled half of `recommend finetune 70B lora`."""
    plans = _json(capsys, "finetune", "70B", "lora", "--top", "all")["plans"]
    keys = [(p["gpu"], p["gpu_count"], p["provider"], p["pricing_model"], p["verified"]) for p in plans]
    assert len(keys) == len(set(keys))
    assert any(note.startswith("also as ") for plan in plans for note in plan["reasons"])


def test_json_and_explain_keep_the_full_reasoning(capsys):
    payload = _json(capsys, "train", "7B", "tokens=1T")
    left_out = {item["gpu"]: item["why"] for item in payload["left_out"]}
    assert "K80" in left_out and payload["reasoning"] and payload["not_planned"]
    assert payload["ranking"].startswith("Ranked: among plans that meet the 30-day deadline")
    out = _text(capsys, "train", "7B", "tokens=1T", "--explain")
    assert "K80" in out and "reasoning:" in out and "assumptions (override with name=value):" in out
