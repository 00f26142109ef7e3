"""Every line the CLI prints as text fits 100 terminal columns: answers, help, --help, errors, the request
store's views and `catalog validate`, as a newcomer met them (and the commands of test_cli*.py). Widths by
rich's `cell_len` (a CJK character takes two). JSON, CSV and Markdown are data for other programs: not here."""

from __future__ import annotations

import re

import pytest
from rich.cells import cell_len

from gpu_assist.cli import main
from gpu_assist.cli.verbs import ABOUT

pytestmark = pytest.mark.clock  # the CLI quotes on today's date: a stale price's label widens a line

HELP = [["help"], ["--help"], *([verb, "--help"] for verb in ABOUT),
        *(["catalog", sub, "--help"] for sub in ("validate", "list-gpus", "status", "import-skypilot", "refresh",
                                                 "import-fx")),
        ["db", "upgrade", "--help"], ["slack", "serve", "--help"]]
ANSWERS = [
    ["--version"], ["quote", "8xA100", "72h"], ["quote", "8卡A100", "72小时", "currency=CNY"],
    ["quote", "8xA100", "72h", "--list", "--top", "all"], ["quote", "8xA100", "72h", "list", "currency=CNY"],
    ["quote", "1024xH100", "1mo"], ["quote", "256xH100", "2mo", "currency=CNY"], ["quote", "100000xA100", "72h"],
    ["quote", "100000xA100", "72h", "currency=CNY"], ["quote", "8xA100", "72h", "provider=huawei"],
    ["quote", "8xH100", "1mo", "pricing=reserved-1y,reserved-3y,monthly", "top=5", "all-regions",
     "include-flagged", "verified-only"], ["quote", "8xH100", "1mo", "monthly"], ["quote", "8xH100", "tencent"],
    ["quote", "8xH100", "region=cn"],
    ["recommend", "train", "7B", "tokens=20B"], ["recommend", "train", "7B", "tokens=1T", "budget=$5000"],
    ["recommend", "train", "175B", "bf16", "deadline=2w", "region=cn"], ["recommend", "finetune", "70B", "lora"],
    ["recommend", "serve", "70B", "fp8", "users=50"], ["recommend", "train", "7B", "tokens=1T", "--explain"],
    ["tco", "1xA100", "hardware=15k", "ops=50k", "usage=200h/mo"],
    ["tco", "1xA100", "hardware=100k", "facility=20k", "power=15k", "ops=50k", "currency=CNY", "usage=200h/mo",
     "cloud=12"], ["catalog", "validate"], ["catalog", "list-gpus"], ["catalog", "status"], ["spend"],
]
ERRORS = [
    [], ["frobnicate"], ["quot", "8xA100"], ["z" * 10_000], ["approve"], ["approve", "r-0123456789ab"],
    ["reject", "r-0123456789ab"], ["quote"], ["quote", "8xA100", "72h", "region=mars"],
    ["quote", "8xA100", "region=us-east-1x"], ["quote", "8xA1000", "72h"], ["quote", "8xA100", "z" * 10_000],
    ["quote", "8xA100", "-5h"], ["quote", "-8xA100", "5h"], ["quote", "8xA100", "72h", "--frobnicate"],
    ["quote", "8xA100", "--top", "0"], ["quote", "8xA100", "72h", "--currency", "EUR"],
    ["recommend", "train", "7B", "foo=3"], ["recommend", "bake", "7B"], ["recommend", "train", "7B", "region=mars"],
    ["recommend", "train", "7B", "budget=lots"], ["tco", "1xA100", "hardware=100k", "cloud=0"],
    ["tco", "1xA100", "hardware=" + "9" * 40], ["util", "bogus"], ["util", "--instance", "x-1"],
    ["util", "fleet", "window=soon"], ["util", "fleet", "region=us-east-1", "window=30m", "threshold=10"],
    ["launch", "8xA100"], ["stop", "x-1"], ["extend", "r-1", "24h"], ["requests", "r-nope"],
    ["spend", "by=colour"], ["catalog", "validate", "/nowhere"],
]


@pytest.fixture(autouse=True)
def no_cloud(tmp_path, monkeypatch):
    """A store of this test's own and no AWS credentials, as on a newcomer's laptop."""
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path / 'state.db'}")
    monkeypatch.setenv("GPU_ASSIST_USER", "newcomer")
    for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.delenv("COLUMNS", raising=False)  # not a terminal: the answers are laid out in 100 columns


def _printed(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        status = main(argv)
    except SystemExit as done:  # --help, --version
        status = done.code or 0
    out, err = capsys.readouterr()
    return status, out, err


def _within_100_columns(out: str, err: str) -> None:
    wide = [f"{cell_len(line)}: {line}" for line in (out + err).splitlines() if cell_len(line) > 100]
    assert wide == []


@pytest.mark.parametrize("argv", HELP + ANSWERS, ids=lambda argv: " ".join(argv)[:60])
def test_answers_and_help_fit_100_columns(capsys, argv):
    status, out, err = _printed(capsys, argv)
    assert status == 0 and out and not err, err
    _within_100_columns(out, err)


@pytest.mark.parametrize("argv", ERRORS, ids=lambda argv: " ".join(argv)[:60])
def test_errors_are_one_folded_error_within_100_columns(capsys, argv):
    status, out, err = _printed(capsys, argv)
    assert status == 2 and not out and "internal error" not in err and "Traceback" not in err
    first, *rest = err.strip().splitlines()
    assert first.startswith("error: ") and all(line.startswith("  ") for line in rest), err
    _within_100_columns(out, err)


def test_a_launch_without_aws_and_its_request_fit_100_columns(capsys):
    """The dry run's error names a 90-character SSM parameter: it was one 229-column line."""
    status, out, err = _printed(capsys, ["launch", "8xA100", "72h"])
    assert status == 0 and not err
    request = re.match(r"r-[0-9a-f]{12}", out).group(0)
    assert "\n  dry run: not checked: no AWS credentials" in out and "\n  quota: " in out
    _within_100_columns(out, err)
    for argv in (["requests"], ["requests", request], ["requests", "show", request]):
        status, out, err = _printed(capsys, argv)
        assert status == 0 and request in out and not err
        _within_100_columns(out, err)


def test_help_lines_its_meanings_up_by_display_width(capsys):
    """The Chinese example's meaning starts where its neighbours' do, in terminal columns."""
    _, out, _ = _printed(capsys, ["help"])
    lines = out.splitlines()
    chinese = next(line for line in lines if "8卡A100" in line)
    neighbour = lines[lines.index(chinese) - 1]
    assert cell_len(chinese[:chinese.index("Chinese works")]) == cell_len(neighbour[:neighbour.index("some")])


def test_help_lists_operator_verbs_apart(capsys):
    _, out, _ = _printed(capsys, ["--help"])
    users, operators = out.split("\ncommands:\n")[1].split("\noperator commands")
    assert "  quote " in users and "  launch " in users and "approve" not in users and "catalog" not in users
    assert all(f"  {verb} " in operators for verb in ("approve", "reject", "reconcile", "db", "slack", "catalog"))
    assert "{quote,recommend" not in out  # argparse's one-line list of every choice


@pytest.mark.parametrize("columns", [80, 100])
def test_the_demos_quote_follows_the_terminals_width_and_folds_names(capsys, monkeypatch, columns):
    """`make demo`'s `quote 8xA100 72h` under `stty cols 80` was 100 columns wide, 23 of its 51 lines over 80, and
    cut 9 of its 14 region names (`asia-north…`, `any of 17 r…`): now every line fits and every name is whole."""
    monkeypatch.setenv("COLUMNS", str(columns))
    status, out, err = _printed(capsys, ["quote", "8xA100", "72h"])
    assert status == 0 and not err
    assert max(map(cell_len, out.splitlines())) <= columns and "…" not in out
    assert "regions" in out and "any of 17" in out  # `where` folded between its words
    for argv in (["quote", "8xA100", "72h", "region=us-eastt"], ["tco", "8xH100", "hardware=300k"]):
        status, out, err = _printed(capsys, argv)
        assert status == 2 and max(map(cell_len, err.splitlines())) <= columns


def test_the_width_is_the_terminals_then_columns_then_100(monkeypatch):
    from gpu_assist.cli import terminal_width

    monkeypatch.setenv("COLUMNS", "93")
    assert terminal_width() == 93
    monkeypatch.delenv("COLUMNS")
    assert terminal_width() == 100  # pytest's stdout is no terminal: what the docs show
