"""The whole bill (#33): a job's disks and data priced as parts of each total, from the bundled source rows."""

from __future__ import annotations

import csv
import json
from decimal import Decimal

import pytest
from support import CATALOGS, TODAY, offer

from gpu_assist.catalog import load_catalog
from gpu_assist.cli import main
from gpu_assist.commands import QuoteCommand
from gpu_assist.commands.execute import quote_view
from gpu_assist.commands.grammar import parse_command
from gpu_assist.errors import ParseError
from gpu_assist.facts import JobItem, NoCharge, PartsUnknown
from gpu_assist.pricing.job_data import JobData, Place

pytestmark = pytest.mark.usefixtures("pinned_wall_clock")


def _rows(provider: str, item: str, region: str) -> list[dict[str, str]]:
    """The bundled source rows of one item, tiers in order, as the catalog file states them."""
    with open(CATALOGS / "data_prices.csv", encoding="utf-8") as file:
        return [r for r in csv.DictReader(file) if r["provider"] == provider and r["item"] == item
                and r["region"] == region]


def _tiered(gb: Decimal, rows: list[dict[str, str]]) -> Decimal:
    """`gb` through the rows' tiers, worked out here from the file, not by the code under test."""
    total, floor = Decimal(0), Decimal(0)
    for row in rows:
        ceiling = Decimal(row["up_to"]) if row["up_to"] else gb
        units = max(Decimal(0), min(gb, ceiling) - floor)
        total += units * Decimal(row["price"])
        floor = ceiling
    return total


def _view(words: str, catalog, **changes):
    command = parse_command(words, catalog.gpus)
    assert isinstance(command, QuoteCommand)
    return quote_view(command, catalog, today=TODAY, currency="USD")


def test_disk_and_data_out_add_exactly_the_sourced_ebs_and_egress_to_aws_rows(catalog):
    plain = _view("quote 8xA100 72h aws top=all all-regions list", catalog)
    whole = _view("quote 8xA100 72h aws disk=2TB data-out=140GB top=all all-regions list", catalog)
    (gp3,) = _rows("aws", "block", "us-east-1")
    disk = Decimal(2000) * Decimal(gp3["price"]) * Decimal(72) / Decimal(730)
    egress = _tiered(Decimal(140), _rows("aws", "egress-internet", "us-east-1"))
    assert egress == Decimal(40) * Decimal("0.09")  # 100 GB free a month, then $0.09
    east = [o for o in whole.options if o.region == "us-east-1"]
    assert east
    for option in east:
        assert option.parts is not None and option.parts.complete
        assert option.parts.part("storage") == disk
        assert option.parts.part("transfer") == egress
        assert option.whole == option.total + disk + egress
        twin = plain.cheapest(region=option.region, zone=option.zone, instance_type=option.instance_type,
                              pricing_model=option.pricing_model)
        assert twin is not None and twin.total == option.total  # the GPUs' total is unchanged


def test_rows_with_every_part_known_rank_before_rows_with_an_unknown_part(catalog):
    plain = _view("quote 8xA100 72h", catalog)
    assert plain.rows[0].provider != "aws"  # without data, a cheaper GPU row leads
    whole = _view("quote 8xA100 72h disk=2TB data-out=140GB", catalog)
    known = [row.best.parts_known for row in whole.rows]
    assert known[0] and known == sorted(known, reverse=True)  # all known first, then the unknown ones
    assert whole.rows[0].provider == "aws"
    totals = [row.best.whole for row in whole.rows if row.best.parts_known]
    assert totals == sorted(totals)  # ranked by the whole job


def test_a_provider_stating_free_egress_adds_0_and_says_so(catalog):
    result = _view("quote 8xH100 72h lambda data-out=200GB list", catalog)
    assert result.options
    for option in result.options:
        assert option.parts.part("transfer") == 0 and option.whole == option.total
        assert NoCharge(JobItem.DATA_OUT, "lambda", "lambda-billing") in option.notes


def test_a_provider_with_no_source_says_unknown(catalog):
    result = _view("quote 8xH100 72h vast disk=1TB list", catalog)
    assert result.options
    for option in result.options:
        assert option.parts.part("storage") is None and not option.parts_known
        assert PartsUnknown((JobItem.DISK,), "vast") in option.notes
        assert option.whole == option.total  # the unknown part is left out, never guessed


def test_a_cheaper_gpu_far_from_the_data_loses(make_catalog):
    """data-in from aws:us-east-1 is free there and costs the inter-region rate to us-west-2: a GPU $10 cheaper
    in us-west-2 loses to us-east-1 once 2 TB must move ($40 at $0.02/GB)."""
    directory = make_catalog(offer(region="us-east-1", on_demand_hourly="32"),
                             offer(region="us-west-2", on_demand_hourly="31.9"), load=False)
    (directory / "data_prices.csv").write_text((CATALOGS / "data_prices.csv").read_text(encoding="utf-8"),
                                               encoding="utf-8")
    catalog = load_catalog(directory, cache_dir=None)
    near = _view("quote 8xA100 100h all-regions list", catalog)
    assert near.options[0].region == "us-west-2"
    far = _view("quote 8xA100 100h all-regions list data-in=2TB from=aws:us-east-1", catalog)
    assert [o.region for o in far.options] == ["us-east-1", "us-west-2"]
    (rate,) = _rows("aws", "egress-inter-region", "us-east-1")
    west = far.options[1]
    assert west.parts.part("transfer") == Decimal(2000) * Decimal(rate["price"])
    assert far.options[0].parts.part("transfer") == 0


@pytest.mark.parametrize("words, data", [
    ("disk=2TB", JobData(disk_gb=Decimal(2000))),
    ("data-in=1.5tb from=amazon:US-East-1", JobData(data_in_gb=Decimal("1500"), data_from=Place("aws", "us-east-1"))),
    ("data-out=512GiB", JobData(data_out_gb=Decimal(512 * 2**30) / 10**9)),
    ("checkpoints=140GB every 30m", JobData(checkpoint_gb=Decimal(140), checkpoint_every_s=1800)),
])
def test_the_words_become_typed_values_and_leave_the_duration_alone(catalog, words, data):
    command = parse_command(f"quote 8xA100 72h {words}", catalog.gpus)
    assert command.job_data == data and command.request.duration_s == 72 * 3600
    assert QuoteCommand.from_fields(json.loads(json.dumps(command.to_fields()))) == command  # Slack's More button


def test_no_words_no_job_data(catalog):
    command = parse_command("quote 8xA100 72h", catalog.gpus)
    assert command.job_data is None and "job_data" not in command.to_fields()


@pytest.mark.parametrize("words, message", [
    ("disk=lots", "disk=lots is not a size"),
    ("disk=0GB", "out of range"),
    ("from=aws:us-east-1", "give data-in= too"),
    ("data-in=1TB from=us-east-1", "is not a place"),
    ("data-in=1TB from=nowhere:x", "unknown provider"),
    ("checkpoints=140GB", "say how often"),
    ("checkpoints=140GB every soon", "not a duration"),
    ("disk=1TB disk=2TB", "given twice"),
])
def test_bad_words_are_one_clear_error_with_an_example(catalog, words, message):
    with pytest.raises(ParseError) as error:
        parse_command(f"quote 8xA100 72h {words}", catalog.gpus)
    assert message in str(error.value) and error.value.example


def test_checkpoints_are_kept_in_object_storage_for_the_job(catalog):
    result = _view("quote 8xH100 72h nebius checkpoints=140GB every 30m list", catalog)
    (row,) = _rows("nebius", "object", "*")
    gib = Decimal(140) * Decimal(10**9) / Decimal(2**30)
    for option in result.options:
        assert option.parts.part("storage") == gib * Decimal(row["price"]) * Decimal(72) / Decimal(730)


def test_explain_shows_each_part_arithmetic_within_100_columns(capsys):
    assert main(["quote", "8xA100", "72h", "aws", "disk=2TB", "data-out=140GB", "--explain", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "disk+data" in out and "the whole bill" in out
    assert "disk: block at aws:us-east-1: 2,000 GB × $0.0800/GB-month × 0.0986 months = $15.78" in out
    assert "100 GB × $0.0000 + 40 GB × $0.0900/GB = $3.60" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_json_and_csv_carry_the_parts(capsys):
    assert main(["quote", "8xA100", "72h", "aws", "disk=2TB", "--format", "json"]) == 0
    options = json.loads(capsys.readouterr().out)
    first = options[0]
    assert {"storage_total", "transfer_total", "job_total", "parts_known", "parts"} <= set(first)
    assert first["job_total"] == pytest.approx(first["total"] + first["storage_total"], abs=0.011)
    assert main(["quote", "8xA100", "72h", "aws", "disk=2TB", "--format", "csv", "--list"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split(",")
    assert {"storage", "transfer", "job_total", "parts_known"} <= set(header)


def test_bad_words_on_the_cli_exit_2_with_one_line(capsys):
    assert main(["quote", "8xA100", "72h", "disk=lots"]) == 2
    err = capsys.readouterr().err
    assert "disk=lots is not a size" in err and "Traceback" not in err


def test_recommend_adds_the_checkpoints_its_spot_plans_write(catalog):
    """A 7B model's checkpoint (14 bytes a parameter: 98 GB) kept in Nebius's object storage for the plan's
    billed hours, from the bundled row; total = hourly × billed hours still holds."""
    from gpu_assist.plan.recommendation import recommend
    from gpu_assist.plan.workload import parse_workload

    result = recommend(parse_workload("train 7B tokens=20B provider=nebius", catalog.gpus), catalog, today=TODAY,
                       top=None)
    spot = [plan for plan in result.plans if plan.strategy == "spot + checkpoints"]
    assert spot
    (row,) = _rows("nebius", "object", "*")
    for plan in spot:
        (cost,) = [r for r in plan.reasons if getattr(r, "what", None) == JobItem.CHECKPOINTS]
        gib = Decimal("98.000") * Decimal(10**9) / Decimal(2**30)
        assert abs(cost.amount - gib * Decimal(row["price"]) * plan.billed_hours / Decimal(730)) < Decimal("1e-20")
        assert abs(plan.total - plan.hourly * plan.billed_hours) < Decimal("1e-20")
    on_demand = [plan for plan in result.plans if plan.pricing_model == "on-demand"]
    assert all(not any(isinstance(r, type(spot[0].reasons[-1])) for r in p.reasons) for p in on_demand)


def test_every_data_price_names_a_described_source_and_a_date():
    from gpu_assist.catalog.data_prices import read_data_prices
    from gpu_assist.catalog.files import sources_in

    prices = read_data_prices(CATALOGS / "data_prices.csv")
    assert prices.rows and {row.source for row in prices.rows} <= sources_in(CATALOGS / "SOURCES.md")
    assert all(row.as_of for row in prices.rows)


def test_a_bad_data_price_row_is_named_by_file_and_line(tmp_path):
    from gpu_assist.catalog.data_prices import COLUMNS, read_data_prices
    from gpu_assist.errors import CatalogError

    path = tmp_path / "data_prices.csv"
    path.write_text(",".join(COLUMNS) + "\naws,*,block,GB,cheap,USD,,aws-ebs-gp3,2026-12-05,no\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="data_prices.csv:2:"):
        read_data_prices(path)


def test_the_notebooks_dataframe_has_the_parts_as_columns(catalog):
    from gpu_assist.render.frames import quote_frame

    frame = quote_frame(_view("quote 8xA100 72h disk=2TB top=all list", catalog))
    assert {"storage", "transfer", "job_total", "parts_known"} <= set(frame.columns)
    known = frame[frame["parts_known"]]
    assert not known.empty and (known["job_total"] - known["total"] - known["storage"]).abs().max() < 1e-6
    assert frame[~frame["parts_known"]]["storage"].isna().all()
    assert "storage" not in quote_frame(_view("quote 8xA100 72h list", catalog)).columns  # no data: as before
