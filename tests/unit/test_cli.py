"""The CLI and the command grammar: same numbers as the core, one-line errors with exit 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from support import TODAY

from gpu_assist.cli import main
from gpu_assist.commands import HELP, Context, HelpCommand, QuoteCommand
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.commands.quoting import spot_rates
from gpu_assist.errors import ParseError
from gpu_assist.pricing.query_parser import parse_request
from gpu_assist.pricing.compare import compare, in_rank_order, refine
from gpu_assist.pricing.quote import quote

# The CLI reads today's date itself, as a user's run does: its answers here are on support.TODAY's.
pytestmark = pytest.mark.usefixtures("pinned_wall_clock")


@pytest.fixture
def context(catalog):
    return Context(catalog_loader=lambda: catalog, today=lambda: TODAY, currency="USD")


def test_command_text_and_core_give_the_same_options(catalog, context):
    command = parse_command("quote 8xA100 72h spot top=3 all-regions list", catalog.gpus)
    assert isinstance(command, QuoteCommand) and command.top == 3 and command.all_regions
    assert command.view == "list"
    via_command = run(command, context)
    direct = refine(quote(parse_request("8xA100 72h spot", catalog.gpus), catalog, today=TODAY, all_regions=True,
                          spot_rates=spot_rates(catalog)))
    assert via_command.options == in_rank_order(direct, compare(direct)).options[:3]


def test_help_and_unknown_commands(catalog):
    assert isinstance(parse_command("help", catalog.gpus), HelpCommand)
    assert isinstance(parse_command("", catalog.gpus), HelpCommand)
    with pytest.raises(ParseError, match="unknown command 'qoute'"):
        parse_command("qoute 8xA100", catalog.gpus)
    with pytest.raises(ParseError, match="top must be a number"):
        parse_command("quote 8xA100 top=zero", catalog.gpus)


def test_json_lists_options_with_the_documented_fields(capsys):
    assert main(["quote", "8xA100", "72h", "--format", "json", "--top", "5"]) == 0
    options = json.loads(capsys.readouterr().out)
    assert len(options) == 5
    required = {"provider", "region", "zone", "instance_type", "instances", "gpu", "gpu_count", "gpu_memory_gib",
                "pricing_model", "hourly", "total", "currency", "billed_hours", "source", "as_of", "verified", "notes"}
    assert required <= set(options[0])
    assert [o["total"] for o in options] == sorted(o["total"] for o in options)


def test_flags_become_the_same_filters_as_words(capsys):
    assert main(["quote", "8xA100", "72h", "--provider", "aws", "--pricing", "on-demand", "--format", "json"]) == 0
    by_flags = json.loads(capsys.readouterr().out)
    assert main(["quote", "8xA100", "72h", "aws", "on-demand", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_flags
    assert {o["provider"] for o in by_flags} == {"aws"} and {o["pricing_model"] for o in by_flags} == {"on-demand"}


def test_text_table_shows_the_cheapest_first_and_notices(capsys):
    assert main(["quote", "3xA100", "72h", "aws", "on-demand"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("3×A100 40 GB for 72h")
    assert "p4d.24xlarge" in out and "5 of 8 GPUs idle" in out  # a footnote under the table
    assert "note: reserved-1y: reserved price unknown" not in out  # not asked for


def test_flags_build_the_command_their_words_would(catalog):
    """Flags reach the command object through the grammar's value parsers, never through text: the same object as
    the words, with the CLI's own defaults (15 rows on a terminal, the flat list for JSON)."""
    from gpu_assist.cli.answers import command_of
    from gpu_assist.cli.parser import build_parser, parse_args

    def built(*argv):
        return command_of(parse_args(build_parser(), ["quote", *argv]), catalog.gpus)

    flags = built("8xA100", "72h", "gcp", "--provider", "aws,amazon", "--region", "US-East-1", "--region", "eu",
                  "--pricing", "spot,reserved", "--currency", "cny", "--top", "7", "--sort", "PRICE", "--max-price",
                  "$30", "--min-gpu-memory", "80GB", "--all-regions", "--include-flagged", "--verified-only",
                  "--include-unverified", "--list")
    words = parse_command("quote 8xA100 72h gcp provider=aws,amazon region=us-east-1,eu pricing=spot,reserved "
                          "currency=CNY top=7 sort=price max-price=$30 min-gpu-memory=80 all-regions include-flagged "
                          "verified-only include-unverified list", catalog.gpus)
    assert flags == words
    assert built("8xA100", "72h").top == 15 and built("8xA100", "72h", "top=all").top is None
    assert built("8xA100", "72h", "--format", "json") == parse_command("quote 8xA100 72h list", catalog.gpus)
    assert built("8xA100", "72h", "top=5", "--top", "9").top == 9  # the flag, as the later word would


def test_util_takes_the_grammars_words_as_help_and_slack_say_them(catalog, capsys):
    """`util fleet region=us-east-1 window=30m threshold=10`, the example `help` prints, exited 2 with
    "unrecognized arguments": the CLI's util took only flags."""
    from gpu_assist.cli.parser import build_parser, parse_args
    from gpu_assist.cli.util import command_of

    def built(*argv):
        return command_of(parse_args(build_parser("util"), ["util", *argv]), catalog.gpus)

    words = "fleet region=us-east-1 window=30m threshold=10"
    assert f"util {words}" in HELP
    assert built(*words.split()) == parse_command(f"util {words}", catalog.gpus) == built(
        "--fleet", "--region", "us-east-1", "--window", "30m", "--threshold", "10")
    assert built("i-0123456789abcdef0", "--instance", "i-0fedcba987654321f").instance_ids == (
        "i-0123456789abcdef0", "i-0fedcba987654321f")
    assert built("region=eu-west-1", "--region", "us-east-1").region == "us-east-1"  # the flag wins
    assert built() == parse_command("util", catalog.gpus)  # this machine's GPUs
    assert main(["util", "fleet", "window=soon"]) == 2
    assert "'soon' is not a duration" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["quote", "8xA100", "72h", "--top", "5", "--provider", "aws", "--format", "json"], ["quote", "8xA100", "-5h"],
    ["util", "fleet", "region=us-east-1", "window=30m", "--threshold", "5"],
    ["recommend", "train", "7B", "--explain"], ["tco", "1xA100", "hardware=15k"],
    ["util", "--fleet", "--interval", "2"], ["launch", "8xA100", "72h", "--as", "alice"],
    ["approve", "r-0123456789ab", "--break-glass", "--reason", "x"],
    ["requests", "show", "r-0123456789ab"], ["spend"], ["db", "upgrade"], ["reap"], ["help"],
    ["slack", "serve", "--workers", "2"], ["catalog", "refresh", "skypilot", "--providers", "aws"],
])
def test_a_verbs_own_subparser_reads_its_arguments_as_the_whole_tree_does(argv):
    """A command line builds only its verb's subparser (#17): the same Namespace as the whole tree gives."""
    from gpu_assist.cli.parser import build_parser, parse_args

    alone = build_parser(argv[0])
    assert list(alone._subparsers._group_actions[0].choices) == [argv[0]]  # noqa: SLF001 - what was built
    assert parse_args(alone, argv) == parse_args(build_parser(), argv)


def test_a_line_that_starts_with_no_verb_gets_the_whole_tree_and_its_messages(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out
    assert all(verb in listed for verb in ("quote", "recommend", "spend", "catalog"))
    assert main(["quot", "8xA100"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: unknown command 'quot' — did you mean quote?\n") and "'catalog'" not in error
    assert main(["catalgo", "validate"]) == 2  # an operator's verb is suggested too
    assert "did you mean catalog?" in capsys.readouterr().err


@pytest.mark.parametrize("flag, word", [
    (["--top", "0"], "top=0"), (["--sort", "cheap"], "sort=cheap"), (["--max-price", "abc"], "max-price=abc"),
    (["--min-gpu-memory", "lots"], "min-gpu-memory=lots"), (["--provider", "nowhere"], "provider=nowhere"),
    (["--pricing", "cheap"], "pricing=cheap"), (["--currency", "EUR"], "currency=EUR"),
])
def test_a_bad_flag_value_gets_the_message_its_word_gets(capsys, flag, word):
    assert main(["quote", "8xA100", "72h", *flag]) == 2
    by_flag = capsys.readouterr().err
    assert main(["quote", "8xA100", "72h", word]) == 2
    assert capsys.readouterr().err == by_flag and by_flag.startswith("error: ")


@pytest.mark.parametrize("argv, message", [
    (["quote", "8xA1000", "72h"], "error: unknown GPU 'A1000' — did you mean A100? — example: 8xA100 72h"),
    (["quote", "8xA100", "72h", "--currency", "EUR"], "error: unknown currency 'EUR'"),
    (["quote"], "error: gpu-assist quote: nothing to answer: write what you ask after 'quote'"),
    (["frobnicate"], "error: unknown command 'frobnicate'\n  commands: quote, recommend, tco, util, launch"),
    (["util", "--instance", "x-1"], "error: 'x-1' is not an instance id — example: util fleet i-0123456789abcdef0"),
    (["util", "--fleet", "--window", "soon"], "error: 'soon' is not a duration"),
])
def test_bad_input_exits_2_with_one_error(capsys, argv, message):
    """One line when it fits 100 columns; else the message, the hint and the example start lines of their own,
    continuation lines indented."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message)
    first, *rest = err.strip().splitlines()
    assert "Traceback" not in err and first.startswith("error: ") and all(line.startswith("  ") for line in rest)
    assert all(len(line) <= 100 for line in err.splitlines())
    assert rest or len(first) <= 100


def test_catalog_commands(capsys, tmp_path):
    assert main(["catalog", "validate"]) == 0
    summary = capsys.readouterr().out
    assert ": OK\n" in summary and "16 offers where two sources disagree" in summary
    assert max(map(len, summary.splitlines())) <= 100 and "Standard_ND96isr_H100_v5" not in summary
    assert main(["catalog", "validate", "--verbose"]) == 0
    out = capsys.readouterr().out
    # issue #31: every corrected and every dropped row with its reason, money as quotes show it, in 100 columns
    assert "  azure Standard_ND96isr_H100_v5 eastus: corrected: gpu count 12 → 8 (the source's figure is wrong;\n" \
           "    per MicrosoftDocs/azure-docs:ndh100v5-series.md)\n" in out
    assert "  gcp a3-highgpu-8g us-central1 us-central1-a: on-demand from the provider's billing catalog\n" \
           "    (gcp-cud, 2026-07-30); skypilot-gcp's $43.0662/h is a Dynamic Workload Scheduler (Flex-start)\n" in out
    assert "  verda 1V100.6V FIN-01: on_demand:price-needs-review; on_demand:far-below-gpu-median\n" in out
    assert max(map(len, out.splitlines())) <= 100
    assert main(["catalog", "list-gpus", "--format", "json"]) == 0
    gpus = {g["gpu"]: g for g in json.loads(capsys.readouterr().out)}
    assert "aws" in gpus["A100"]["providers"] and gpus["A100"]["offers"] > 100
    assert main(["catalog", "list-gpus"]) == 0
    prices = [line.split()[-1] for line in capsys.readouterr().out.splitlines()[1:-1] if line.startswith(tuple(gpus))]
    assert prices and all(re.fullmatch(r"\$\d+\.\d{4}|\$[1-9][\d,]*\.\d\d", p) for p in prices if p.startswith("$"))
    assert f"${gpus['A100']['min_verified_on_demand_per_gpu_hour_usd']:.4f}" in prices  # below $1: four places
    assert main(["catalog", "status", "--format", "json"]) == 0
    status = {s["provider"]: s for s in json.loads(capsys.readouterr().out)}
    assert status["huawei"]["verified"] == "0%" and status["aws"]["verified"] == "100%"
    assert (status["aws"]["billing"], status["lambda"]["billing"]) == ("per second", "per minute")
    assert status["vast"]["billing"] == status["aliyun"]["billing"] == "per hour, assumed"
    assert main(["catalog", "status"]) == 0
    text = capsys.readouterr().out
    assert "per hour, assumed (the source does not say" in text and "vast" in text.split("billing ")[1]
    assert max(map(len, text.splitlines())) <= 100
    (tmp_path / "gpus.csv").write_text("name\nA100\n")
    assert main(["catalog", "validate", str(tmp_path)]) == 1
    assert "missing columns" in capsys.readouterr().out


@pytest.mark.clock
@pytest.mark.slow  # a subprocess
def test_the_installed_console_script_runs_end_to_end():
    done = subprocess.run([sys.executable, "-m", "gpu_assist", "quote", "8xA100", "72h", "--top", "3"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "8×A100 40 GB for 72h — " in done.stdout and len(done.stdout.splitlines()) > 3
    bad = subprocess.run([sys.executable, "-m", "gpu_assist", "quote", "banana"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_pure_answers_are_remembered_per_command_date_and_currency(catalog):
    context = Context(catalog_loader=lambda: catalog, today=lambda: TODAY, currency="USD")
    command = parse_command("quote 8xA100 72h", catalog.gpus)
    first = run(command, context)
    assert run(parse_command("quote 8xA100 72h", catalog.gpus), context) is first
    context.currency = "CNY"
    assert run(command, context).currency == "CNY"
    for n in range(300):  # bounded: old answers are dropped
        run(parse_command(f"quote {n + 1}xA100 1h", catalog.gpus), context)
    assert len(context._answers) == 256


@pytest.mark.clock
@pytest.mark.slow  # a subprocess
def test_a_quote_loads_neither_the_database_layer_nor_boto3():
    """Cold-start cost: quoting must not import SQLAlchemy, boto3 or the Slack SDK (bench/ measures the time)."""
    code = ("import io, contextlib, sys\nfrom gpu_assist.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['quote', '8xA100', '1h'])\n"
            "print(sorted(m for m in ('sqlalchemy', 'boto3', 'slack_sdk', 'pynvml') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr


@pytest.mark.parametrize("mixed, words_first", [
    (["quote", "8xA100", "72h", "--format", "json", "region=eu"], ["quote", "8xA100", "72h", "region=eu",
                                                                   "--format", "json"]),
    (["quote", "8xA100", "--top", "3", "72h"], ["quote", "8xA100", "72h", "--top", "3"]),
    (["recommend", "train", "7B", "--explain", "tokens=20B"], ["recommend", "train", "7B", "tokens=20B", "--explain"]),
    (["tco", "1xA100", "--format", "json", "hardware=15k"], ["tco", "1xA100", "hardware=15k", "--format", "json"]),
    (["spend", "--format", "json", "by=project"], ["spend", "by=project", "--format", "json"]),
    (["util", "--format", "json", "fleet", "region=us-east-1"], ["util", "fleet", "region=us-east-1", "--format",
                                                                 "json"]),
    (["launch", "8xA100", "--as", "alice", "72h"], ["launch", "8xA100", "72h", "--as", "alice"]),
    (["extend", "r-0123456789ab", "--format", "json", "24h"], ["extend", "r-0123456789ab", "24h", "--format",
                                                                "json"]),
    (["stop", "--as", "alice", "i-0123456789abcdef0"], ["stop", "i-0123456789abcdef0", "--as", "alice"]),
    (["requests", "--format", "json", "r-0123456789ab"], ["requests", "r-0123456789ab", "--format", "json"]),
])
def test_options_and_the_grammars_words_mix_in_any_order(mixed, words_first):
    """Every verb that takes words reads them around its options, as a Unix tool does."""
    from gpu_assist.cli.parser import build_parser, parse_args

    assert parse_args(build_parser(mixed[0]), mixed) == parse_args(build_parser(words_first[0]), words_first)


def test_a_quote_and_a_plan_with_options_amid_their_words(capsys):
    assert main(["quote", "8xA100", "72h", "--format", "json", "region=cn"]) == 0
    assert {o["provider"] for o in json.loads(capsys.readouterr().out)} <= {"aliyun", "tencent", "huawei"}
    assert main(["quote", "8xA100", "--top", "3", "72h"]) == 0
    shown = capsys.readouterr().out
    assert main(["quote", "8xA100", "72h", "top=3"]) == 0
    assert shown.startswith("8×A100 40 GB for 72h") and shown == capsys.readouterr().out
    assert main(["recommend", "train", "7B", "--explain", "tokens=20B"]) == 0
    assert "6 × 7B × 20B tokens" in capsys.readouterr().out
    assert main(["quote", "8xA100", "--bogus", "72h"]) == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


@pytest.mark.parametrize("variable, value, argv, says", [
    ("GPU_ASSIST_CURRENCY", "EUR", ["quote", "8xA100", "72h"],
     "error: GPU_ASSIST_CURRENCY='EUR' is not a currency gpu-assist quotes in"),
    ("GPU_ASSIST_DB_URL", "garbage", ["requests"], "error: GPU_ASSIST_DB_URL is not a database URL gpu-assist can "
                                                   "open: Could not parse SQLAlchemy URL"),
    ("GPU_ASSIST_DB_URL", "nosuchdb://alice:s3cret@db.example/requests", ["requests"],
     "error: GPU_ASSIST_DB_URL is not a database URL gpu-assist can open: Can't load plugin"),
])
def test_a_bad_environment_variable_is_one_error_naming_it(capsys, monkeypatch, variable, value, argv, says):
    """Exit 2 with the variable, what it takes and an example, not `internal error: KeyError` (exit 1); a URL is
    never echoed (it may hold a password)."""
    monkeypatch.setenv(variable, value)
    assert main(argv) == 2
    error = capsys.readouterr().err
    folded = " ".join(error.split())
    assert folded.startswith(" ".join(says.split())) and f"example: {variable}=" in folded
    assert "s3cret" not in error and "internal error" not in error


@pytest.mark.parametrize("argv, says, example", [
    (["quote"], "gpu-assist quote: nothing to answer", "gpu-assist quote 8xA100 72h"),
    (["tco"], "gpu-assist tco: nothing to answer", "gpu-assist tco 1xA100 hardware=100k"),
    (["quote", "8xA100", "72h", "--format", "xml"], "argument --format: invalid choice: 'xml'",
     "gpu-assist quote 8xA100 72h"),
    (["catalog"], "required: {validate,list-gpus,status,import-skypilot,import-china,refresh,import-fx}",
     "gpu-assist catalog validate"),
    (["catalog", "refresh"], "required: provider", "gpu-assist catalog refresh aws-public"),
    (["db"], "required: {upgrade,current}", "gpu-assist db upgrade"),
    (["reap", "now"], "gpu-assist reap: unrecognized arguments: now", "gpu-assist reap"),
    (["recommend", "train", "7B", "--bogus"], "unrecognized arguments: --bogus", "gpu-assist recommend train 7B"),
    (["quote", "8xA100", "72h", "foo=bar"], "unknown option 'foo' known: region=, provider=, pricing=, "
     "currency=, top=, sort=, max-price=, min-gpu-memory=, all-regions, include-flagged, include-unverified, "
     "verified-only, list, explain, disk=, data-in=, data-out=, checkpoints=, from=", "8xA100 72h region=us-east-1"),
    (["requests", "show", "r-nope"], "'r-nope' is not a request id", "requests r-0123456789ab"),
])
def test_every_usage_error_ends_with_an_example_that_works_for_its_verb(capsys, argv, says, example):
    assert main(argv) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert says in error and f"example: {example}" in error
    words = error.split("example: ", 1)[1].split()
    if words[0] == "gpu-assist" and words[1] in ("quote", "tco", "recommend"):  # the example itself works
        assert main([*words[1:], "--format", "json"]) == 0
        capsys.readouterr()


def test_every_verb_is_answered_by_a_module_of_the_cli():
    """`gpu-assist VERB` imports the one module `ANSWERED_BY` names for it: there is one for every verb the parser
    builds, and each has `answer(args)`."""
    import importlib

    from gpu_assist.cli import ANSWERED_BY
    from gpu_assist.cli.parser import build_parser

    verbs = build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001 - the verbs argparse knows
    assert set(ANSWERED_BY) == set(verbs)
    for module in set(ANSWERED_BY.values()):
        assert callable(importlib.import_module(f"gpu_assist.cli.{module}").answer)


def test_the_shells_words_reach_the_grammar_as_words(catalog):
    """argparse's words go to the grammar as the list they are, each normalised (full-width letters, Chinese
    units and counts), never joined into text to be split again: the same command as the plain words."""
    from gpu_assist.cli.answers import command_of
    from gpu_assist.cli.parser import build_parser, parse_args

    def built(*argv):
        return command_of(parse_args(build_parser("quote"), ["quote", *argv]), catalog.gpus)

    plain = built("8xA100", "72h", "spot")
    assert built("8卡A100", "72小时", "ｓｐｏｔ") == plain == built("8", "x", "A100", "72h", "spot")
