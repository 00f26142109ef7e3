"""The comparison view a buyer acts on, checked on the bundled catalogs and on hand-made ones."""

from __future__ import annotations

import csv
import io
import json

import pytest
from support import TODAY, offer

from gpu_assist.catalog.providers import LAUNCH_PROVIDERS
from gpu_assist.cli import main
from gpu_assist.commands import Context, QuoteCommand
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.errors import ParseError
from gpu_assist.facts import AlsoAs, Derived, Labelled, MemoryFilter, MultiHost, PriceCap, Stale
from gpu_assist.pricing.compare import Comparison, compare, in_rank_order, job_hourly, refine
from gpu_assist.pricing.query_parser import parse_request
from gpu_assist.pricing.quote import Quote, QuoteOption, quote
from gpu_assist.render import csv as render_csv
from gpu_assist.render import markdown as render_markdown
from gpu_assist.render.notes import said, words as words_of
from gpu_assist.render.text import render
from slackbot.blocks import CARD_ROWS, QUOTE_MORE, comparison_blocks, read_more

# The CLI reads today's date itself, as a user's run does: its answers here are on support.TODAY's.
pytestmark = pytest.mark.usefixtures("pinned_wall_clock")


@pytest.fixture
def context(catalog):
    return Context(catalog_loader=lambda: catalog, today=lambda: TODAY, currency="USD")


def _run(context, text):
    return run(parse_command(text, context.catalog.gpus), context)


def test_8xa100_leads_with_verified_providers_and_the_aws_row_a_buyer_compares_against(context):
    result = _run(context, "quote 8xA100 72h")
    assert isinstance(result, Comparison)
    first_six = result.rows[:6]
    assert len({r.provider for r in first_six if r.trusted}) >= 4
    p4d = next(r for r in result.rows if r.provider == "aws" and r.instance_type == "p4d.24xlarge")
    assert p4d.cell("on-demand") is not None and p4d.cell("spot") is not None
    assert p4d.cell("on-demand").total > p4d.cell("spot").total
    # sorted by each row's best verified total, one host before a split over hosts
    keys = [(r.instances > 1, r.best.total) for r in result.rows]
    assert keys == sorted(keys)


def test_no_two_rows_of_a_provider_differ_only_in_host_split(context):
    result = _run(context, "quote 8xA100 72h")
    rows = result.rows + result.untrusted
    for a in rows:
        for b in rows:
            if a is b or a.provider != b.provider or a.gpu != b.gpu or a.instances == b.instances:
                continue
            same = [m for m, _ in a.cells if b.cell(m)]
            assert not same or any(abs(a.cell(m).total - b.cell(m).total) > a.cell(m).total / 200 for m in same), \
                (a.key, b.key)
    gcp = next(r for r in result.rows if r.instance_type == "a2-highgpu-8g")
    assert "8× a2-highgpu-1g" in gcp.folded and AlsoAs(gcp.folded) in gcp.notes
    lambda_row = next(r for r in result.rows if r.provider == "lambda")
    assert lambda_row.instances == 1 and lambda_row.folded


def test_fewest_hosts_win_only_a_tie(make_catalog):
    catalog = make_catalog(
        offer(provider="gcp", region="us-central1", instance_type="big-8", gpu_count=8, on_demand_hourly="24",
              source="skypilot-gcp"),
        offer(provider="gcp", region="us-central1", instance_type="small-1", gpu_count=1, on_demand_hourly="3",
              spot_hourly="1", source="skypilot-gcp"),
        offer(provider="gcp", region="us-central1", instance_type="mid-4", gpu_count=4, on_demand_hourly="12",
              source="skypilot-gcp"))
    result = compare(quote(parse_request("8xA100 10h", catalog.gpus), catalog, today=TODAY))
    keys = {r.key: r for r in result.rows}
    assert keys["gcp/big-8"].folded == ("2× mid-4",)  # same price, more hosts: folded
    assert "gcp/small-1" in keys  # offers spot, which big-8 does not: not the same purchase
    assert MultiHost(8) in keys["gcp/small-1"].notes
    assert result.group_of(next(o for o in result.quote.options if o.instance_type == "mid-4")) == "gcp/big-8"


def test_a_dearer_type_over_more_hosts_keeps_its_own_row(make_catalog):
    """"also as 8× …" says "same per-GPU price": a type that buys the same GPUs over more hosts at a higher
    per-GPU price is another choice, not the same purchase (the Huawei GPU-F32 case: $4.51 against $1.32)."""
    catalog = make_catalog(
        offer(provider="huawei", region="cn-north-4", instance_type="gpu-accel-a100", gpu_count=4,
              on_demand_hourly="5.28", source="seed-002"),
        offer(provider="huawei", region="cn-north-4", instance_type="GPU-F32", gpu_count=1, on_demand_hourly="4.51",
              source="seed-000"),
        offer(provider="huawei", region="cn-north-4", instance_type="twin", gpu_count=2, on_demand_hourly="2.64",
              source="seed-000"))
    result = compare(quote(parse_request("8xA100 72h", catalog.gpus), catalog, today=TODAY))
    keys = {r.key: r for r in result.rows}
    assert keys["huawei/gpu-accel-a100"].folded == ("4× twin",)  # $1.32 per GPU-hour both: folded
    assert "huawei/GPU-F32" in keys and not keys["huawei/GPU-F32"].folded
    assert not any("GPU-F32" in note for row in result.rows for note in said(row.notes))


@pytest.mark.parametrize("text", ["quote 8xA100 72h", "quote 8xA100 72h provider=huawei", "quote 16xH100 1w",
                                  "quote 8xA100 1mo include-unverified", "quote 4xL4 10h all-regions"])
def test_every_fold_is_at_the_same_per_gpu_price(context, text):
    """What a folded row's note claims, checked on the bundled catalogs: each option of a folded type costs
    the same per GPU-hour (within half a percent) as the row that shows it, in every pricing model."""
    result = _run(context, text)
    rows = {r.key: r for r in result.rows + result.untrusted}
    cheapest: dict[tuple[str, str], QuoteOption] = {}  # a folded type's cell: its cheapest region per model
    for o in result.quote.options:
        key = (f"{o.provider}/{o.instance_type}", o.pricing_model)
        if result.group_of(o) != key[0] and (key not in cheapest or o.total < cheapest[key].total):
            cheapest[key] = o
    for option in cheapest.values():
        shown = rows[result.group_of(option)].cell(option.pricing_model)
        assert shown is not None and option.instances * option.gpu_count == shown.instances * shown.gpu_count
        per_gpu, shown_per_gpu = option.hourly / option.gpu_count, shown.hourly / shown.gpu_count
        assert abs(per_gpu - shown_per_gpu) <= shown_per_gpu / 200, (option.instance_type, shown.instance_type)


def test_unverified_rows_get_their_own_section_unless_asked_for(context):
    default = _run(context, "quote 8xA100 72h")
    assert default.untrusted and all(r.trusted for r in default.rows)
    assert all(not r.trusted for r in default.untrusted)
    # Tencent's published A100 list prices (2021-09-27) are stale; the articles' A100 claims are flagged.
    assert {r.provider for r in default.untrusted} & {"tencent", "aliyun", "huawei"}
    text = render(default)
    assert text.index("not ranked: unverified, stale or derived") > text.index("p4d.24xlarge")
    assert "stale: price as of 2021-09-27" in text
    for words in ("include-unverified", "provider=tencent", "region=cn"):
        asked = _run(context, f"quote 8xA100 72h {words}")
        assert any(not r.trusted for r in asked.rows), words
    cn = _run(context, "quote 8xA100 72h region=cn")
    assert not cn.untrusted and all(not r.trusted for r in cn.rows)


def test_a_derived_spot_price_is_never_ranked_above_a_price_someone_set(context):
    spot = _run(context, "quote 4xH100 1w spot")
    derived = [r for r in spot.rows + spot.untrusted if r.provider == "verda"]
    assert derived and all(not r.ranked for r in derived)  # its spot is 0.35 × on-demand, nobody's market price
    assert all(any(isinstance(n, Labelled) and isinstance(n.label, Derived) for n in r.notes) for r in derived)
    assert spot.rows and all(r.trusted for r in spot.rows)
    both = _run(context, "quote 1xH200 10h")
    (row,) = [r for r in both.rows if r.instance_type == "2H200.141S.88V"]
    assert row.best.pricing_model == "on-demand" and row.cell("spot").total < row.best.total  # marked: on-demand


def test_stale_prices_are_labelled_and_not_ranked(make_catalog):
    catalog = make_catalog(offer(instance_type="fresh", on_demand_hourly="40"),
                           offer(instance_type="old", on_demand_hourly="10", as_of="2026-05-01"))
    result = compare(refine(quote(parse_request("8xA100 1h", catalog.gpus), catalog, today=TODAY)))
    assert [r.instance_type for r in result.rows] == ["fresh"]
    assert result.untrusted[0].instance_type == "old"
    assert any(isinstance(n, Stale) for n in result.untrusted[0].notes)


@pytest.mark.parametrize("text", ["quote 8xA100 72h", "quote 8xA100 72h list", "quote 1xH100 1mo",
                                  "quote 64xH100 2w all-regions", "quote 8xA100 72h region=cn currency=CNY",
                                  "quote 8xA100 72h include-unverified include-flagged top=40",
                                  "recommend train 7B tokens=1T", "recommend finetune 70B qlora",
                                  "recommend serve 70B fp8 users=50", "recommend train 70B tokens=2T deadline=none"])
def test_every_text_line_fits_100_columns(context, text):
    out = render(_run(context, text))
    too_wide = [line for line in out.splitlines() if len(line) > 100]
    assert too_wide == []


def test_colour_only_on_a_terminal(context):
    result = _run(context, "quote 8xA100 72h")
    assert "\x1b[" not in render(result)
    coloured = render(result, color=True)
    assert "\x1b[" in coloured and "*" in coloured  # the cheapest cell is highlighted and still marked


def test_slack_card_has_at_most_8_rows_a_more_button_and_no_cli_flags(context):
    result = _run(context, "quote 8xA100 72h include-flagged top=20")
    blocks = comparison_blocks(result, command=parse_command("quote 8xA100 72h include-flagged", context.catalog.gpus))
    assert "--" not in json.dumps(blocks, ensure_ascii=False)
    rows = [b for b in blocks if b["type"] == "section" and b["text"]["text"].startswith("*")
            and ". " in b["text"]["text"][:6]]
    assert 0 < len(rows) <= CARD_ROWS
    launch = [json.loads(b["accessory"]["value"])["option"] for b in rows if "accessory" in b]
    assert any(option.startswith("aws:p4d.24xlarge:") for option in launch)
    assert {option.split(":")[0] for option in launch} <= set(LAUNCH_PROVIDERS)  # SkyPilot's clouds' rows too
    aws_only = comparison_blocks(result, command=parse_command("quote 8xA100 72h include-flagged",
                                                               context.catalog.gpus), launches=("aws",))
    assert {json.loads(b["accessory"]["value"])["option"].split(":")[0] for b in aws_only if "accessory" in b} \
        == {"aws"}  # a team's policy allows AWS alone: only its rows' launches could be asked for
    small = _run(context, "quote 1xA100 72h")
    card = comparison_blocks(small, command=parse_command("quote 1xA100 72h", context.catalog.gpus))
    assert "--" not in json.dumps(card, ensure_ascii=False)
    more = [e for b in card if b["type"] == "actions" for e in b["elements"] if e["action_id"] == QUOTE_MORE]
    if len(small.rows) + small.more > CARD_ROWS:
        assert more and json.loads(more[0]["value"])["start"] == CARD_ROWS
        assert read_more(more[0]["value"]) == (parse_command("quote 1xA100 72h", context.catalog.gpus), CARD_ROWS)


def test_a_more_button_carries_every_field_of_its_command(context):
    """Every option a quote command can hold survives the button's round trip, Decimal and float included."""
    command = parse_command("quote 2xH100 3d spot,on-demand region=us,eu provider=aws,gcp currency=CNY top=40 "
                            "all-regions include-flagged verified-only include-unverified list sort=per-gpu "
                            "max-price=$12.5 min-gpu-memory=80gb", context.catalog.gpus)
    fields = json.loads(json.dumps(command.to_fields()))
    assert QuoteCommand.from_fields(fields) == command
    assert QuoteCommand.from_fields({"gpu": "A100", "variants": ["A100-80GB"]}) == parse_command(
        "quote A100 1h", context.catalog.gpus)
    assert QuoteCommand.to_fields(parse_command("quote 1xA100", context.catalog.gpus)) == {
        "gpu": "A100", "assumptions": ["no duration given: quoting 1 hour"], "duration_given": False,
        "variants": ["A100-80GB"]}
    for bad in ({"gpu": "A100", "count": "8"}, {"gpu": "A100", "sort": "cheap"}, {"gpu": "A100", "extra": 1},
                {"count": 8}, {"gpu": "A100", "max_price": "-1"}, {"gpu": "A100", "all_regions": 1}, ["A100"]):
        with pytest.raises(ValueError):
            QuoteCommand.from_fields(bad)


def test_sort_and_filters_are_words_of_the_grammar(context):
    by_price = _run(context, "quote 8xA100 72h sort=price list")
    prices = [job_hourly(o) for o in by_price.options if o.trusted]
    assert prices == sorted(prices)
    capped = _run(context, "quote 8xA100 72h max-price=30 list")
    assert capped.options and all(job_hourly(o) <= 30 for o in capped.options)
    assert any(isinstance(n, PriceCap) and n.max_price == 30 for n in capped.notices)
    assert any("max-price=30" in n for n in said(capped.notices))
    none = _run(context, "quote 8xA100 72h min-gpu-memory=80 list")  # the filter that left nothing says why
    assert not none.options and isinstance(none.empty_reason, MemoryFilter) and none.empty_reason.largest == 40
    assert "min-gpu-memory=80" in words_of(none.empty_reason) and "40 GB" in words_of(none.empty_reason)
    assert not any(isinstance(n, MemoryFilter) for n in none.notices)  # said once, as the reason
    by_provider = _run(context, "quote 8xA100 72h sort=provider")
    providers = [r.provider for r in by_provider.rows]
    assert providers == sorted(providers)
    for bad, message in (("sort=cheap", "unknown sort 'cheap'"),
                         ("max-price=-3", "max-price '-3' is not an amount"),
                         ("min-gpu-memory=lots", "min-gpu-memory must be a positive number")):
        with pytest.raises(ParseError, match=message):
            parse_command(f"quote 8xA100 72h {bad}", context.catalog.gpus)


def test_cli_flags_become_the_same_words(capsys):
    assert main(["quote", "8xA100", "72h", "--sort", "price", "--max-price", "30", "--format", "json"]) == 0
    by_flags = json.loads(capsys.readouterr().out)
    assert main(["quote", "8xA100", "72h", "sort=price", "max-price=30", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_flags
    assert by_flags and all("group" in o for o in by_flags)
    assert {o["group"] for o in by_flags if o["instance_type"] == "a2-highgpu-1g"} <= {"gcp/a2-highgpu-8g"}


def test_csv_and_markdown(capsys):
    assert main(["quote", "8xA100", "72h", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    p4d = next(r for r in rows if r["instance_type"] == "p4d.24xlarge")
    assert float(p4d["on-demand"]) > float(p4d["spot"]) > 0 and p4d["verified"] == "yes"
    assert {r["verified"] for r in rows if not r["rank"]} == {"no"}
    assert main(["quote", "8xA100", "72h", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| azure | Standard_ND96asr_v4 |" in out and "| 1 | primeintellect |" in out
    assert "| aws | p4d.24xlarge |" in out and "| ---: |" in out
    assert main(["recommend", "train", "7B", "tokens=1T", "--format", "csv"]) == 0
    plans = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert plans and float(plans[0]["hours"]) <= 720
    assert main(["quote", "8xA100", "72h", "--list", "--format", "markdown", "--top", "20"]) == 0
    assert capsys.readouterr().out.count("| aws |") >= 1


def test_the_flat_list_stays_available(context, catalog):
    listed = _run(context, "quote 8xA100 72h list top=5")
    assert isinstance(listed, Quote) and len(listed.options) == 5
    direct = refine(quote(parse_request("8xA100 72h", catalog.gpus), catalog, today=TODAY))
    assert listed.options == in_rank_order(direct, compare(direct)).options[:5]  # the comparison's order
    assert render_csv.render(listed).count("\n") == 5 and "| provider |" in render_markdown.render(listed)


@pytest.mark.parametrize("text", ["recommend train 7B tokens=1T", "recommend finetune 7B lora",
                                  "recommend serve 70B fp8 users=50"])
def test_slack_plan_cards_carry_no_cli_flags(context, text):
    from slackbot.blocks import recommendation_blocks

    assert "--" not in json.dumps(recommendation_blocks(_run(context, text)), ensure_ascii=False)
