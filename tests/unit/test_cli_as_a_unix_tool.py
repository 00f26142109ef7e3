"""The CLI as a newcomer meets it (issue #20): run as a real process, through real pipes, with the mistakes people
make. Each test names the behaviour; the process is `python -m gpu_assist`, as the console script runs it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from support import CATALOGS, REPO

pytestmark = pytest.mark.slow  # every test runs the CLI as a subprocess

GPU_ASSIST = [sys.executable, "-m", "gpu_assist"]


def cli(*argv: str, env: dict | None = None, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*GPU_ASSIST, *argv], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def user_error(done: subprocess.CompletedProcess) -> str:
    """The one error of a user error (exit 2, no traceback, no 'internal error'): one line, or, longer than 100
    columns, its message, hint and example each starting an indented line; returned as one line."""
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    first, *rest = done.stderr.strip().splitlines()
    assert first.startswith("error: ") and all(line.startswith("  ") for line in rest), done.stderr
    assert all(len(line) <= 100 for line in rest) and (rest or len(first) <= 100), done.stderr
    return " ".join([first, *(line.strip() for line in rest)])


# 3. Pipes: a reader that goes away ends the program quietly, as it ends `yes | head -1`.

@pytest.mark.clock
@pytest.mark.parametrize("argv", [
    ["quote", "8xA100", "72h", "--format", "json"],
    ["recommend", "train", "7B", "tokens=20B"],
    ["catalog", "list-gpus"],
])
def test_a_closed_pipe_ends_the_command_quietly(argv):
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads: the command's first write meets a broken pipe
    try:
        done = subprocess.run([*GPU_ASSIST, *argv], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141  # 128 + SIGPIPE, what a shell reports for a tool the pipe closed on


@pytest.mark.clock
def test_head_dash_1_on_a_long_answer():
    """More than a pipe buffer (64 KiB) of JSON, so the write after `head` exits really fails."""
    command = " ".join(GPU_ASSIST) + " quote 8xA100 72h --all-regions --format json | head -1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=60)
    assert done.stdout == "[\n" and done.stderr == ""
    assert done.returncode == 141


# 4. Errors a user can reach are user errors with an example, never "internal error".

@pytest.mark.parametrize("argv, message", [
    (["tco", "1xA100", "hardware=100k", "cloud=0"], "cloud must be above 0, not '0' cloud is the price per GPU-hour"),
    (["tco", "1xA100", "hardware=0", "cloud=0"], "hardware must be above 0, not '0' example"),
    (["tco", "1xA100", "hardware=000"], "hardware must be above 0, not '000' a shell reads $5 in hardware=$5000"),
    (["recommend", "train", "7B", "budget=000"], "budget must be above 0, not '000' a shell reads $5"),
])
def test_a_zero_amount_is_a_user_error(argv, message):
    line = user_error(cli(*argv))  # message, hint and example folded onto lines of their own, joined by spaces
    assert message in line and "example: " in line and "$" not in line.partition("example: ")[2]


def test_an_amount_beyond_a_trillion_is_a_user_error():
    """Found by the tco fuzzing: 40 nines overflowed the decimal precision money is shown with."""
    line = user_error(cli("tco", "1xA100", "hardware=" + "9" * 40))
    assert "is more than 1,000,000,000,000" in line and "example: tco" in line


def _catalog_copy(tmp_path):
    directory = tmp_path / "catalog"
    directory.mkdir()
    for path in CATALOGS.glob("*.csv"):
        shutil.copy(path, directory / path.name)
    shutil.copy(CATALOGS / "SOURCES.md", directory / "SOURCES.md")
    return directory


def test_a_catalog_file_that_is_a_directory_is_named(tmp_path):
    directory = _catalog_copy(tmp_path)
    (directory / "aws.csv").unlink()
    (directory / "aws.csv").mkdir()
    line = user_error(cli("quote", "8xA100", "72h", env={"GPU_ASSIST_CATALOG_DIR": str(directory),
                                                        "GPU_ASSIST_CACHE_DIR": "off"}))
    assert line == f"error: {directory / 'aws.csv'}: is a directory, not a CSV file"


def test_a_catalog_directory_that_is_not_there(tmp_path):
    line = user_error(cli("quote", "8xA100", env={"GPU_ASSIST_CATALOG_DIR": str(tmp_path / "nowhere")}))
    assert f"catalog directory {tmp_path / 'nowhere'} not found" in line and "GPU_ASSIST_CATALOG_DIR" in line


def test_import_from_a_missing_extract_folder(tmp_path):
    line = user_error(cli("catalog", "import-skypilot", str(tmp_path / "nope"), "--imported", "2026-12-02",
                          "--catalog-dir", str(_catalog_copy(tmp_path))))
    assert f"SkyPilot extract folder {tmp_path / 'nope'} not found" in line
    assert "example: gpu-assist catalog import-skypilot catalogs/sources --imported" in line
    (tmp_path / "empty").mkdir()
    line = user_error(cli("catalog", "import-skypilot", str(tmp_path / "empty"), "--imported", "2026-12-02"))
    assert f"aws_gpu.csv not found in {tmp_path / 'empty'}" in line
    assert "is not a date" in user_error(cli("catalog", "import-skypilot", "catalogs/sources", "--imported", "2026-1"))


def test_make_catalogs_with_a_missing_extract_says_so(tmp_path):
    """`make catalogs` passes SKYPILOT_EXTRACT to the importer: the user sees its one line, not a traceback."""
    bin_dir = os.path.dirname(sys.executable)
    done = subprocess.run(["make", "-s", "-o", "install", "-o", ".venv/.installed-catalog", "catalogs",
                           f"SKYPILOT_EXTRACT={tmp_path / 'nope'}", f"BIN={bin_dir}"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr and "internal error" not in done.stderr
    said = " ".join(line.strip() for line in done.stderr.splitlines())  # folded to 100 columns
    assert f"error: SkyPilot extract folder {tmp_path / 'nope'} not found" in said


# 5. No silent empty answers.

@pytest.mark.clock
def test_an_unknown_region_is_an_error_with_suggestions():
    line = user_error(cli("quote", "8xA100", "region=mars"))
    assert line.startswith("error: unknown region 'mars' use a group (us, eu, asia, cn)")  # the hint's own line
    assert "did you mean us-east-1" in user_error(cli("quote", "8xA100", "region=us-east-1x"))
    assert "unknown region 'mars'" in user_error(cli("recommend", "train", "7B", "region=mars"))


@pytest.mark.clock
def test_an_empty_quote_says_which_filter_removed_what():
    as_json = cli("quote", "8xH100", "1mo", "monthly", "--format", "json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == []
    reason = re.fullmatch(r"no options: (.*)\n", as_json.stderr).group(1)
    assert re.match(r"no monthly prices for H100 in the catalogs; on-demand from \$[\d.]+/GPU-h, "
                    r"spot from \$[\d.]+/GPU-h", reason), reason
    done = cli("quote", "8xH100", "1mo", "monthly")
    assert done.returncode == 0 and all(len(line) <= 100 for line in done.stdout.splitlines())
    assert f"no options: {reason}" in " ".join(line.strip() for line in done.stdout.splitlines())
    assert "H100 is offered by aws" in cli("quote", "8xH100", "tencent").stdout
    assert "no H100 offers in cn; offered in" in cli("quote", "8xH100", "region=cn").stdout


# 6. Consistency.

@pytest.mark.clock
def test_text_and_json_show_the_same_options_and_top_means_the_same():
    """JSON is the flat list, every option unless `--top` says otherwise; the text list with `--top all` shows the
    same options, and the comparison counts its rows the same way whatever the top."""
    text = cli("quote", "8xA100", "72h", "--list", "--top", "all").stdout
    options = json.loads(cli("quote", "8xA100", "72h", "--format", "json").stdout)
    count = int(re.match(r"8×?x?A100 .*?for 72h — (\d+) options", text).group(1))
    assert count == len(options) > 15
    assert len(json.loads(cli("quote", "8xA100", "72h", "--top", "3", "--format", "json").stdout)) == 3
    default = re.match(r".* — (\d+) offers", cli("quote", "8xA100", "72h").stdout).group(1)
    assert f"— {default} offers" in cli("quote", "8xA100", "72h", "--top", "all").stdout
    assert "top must be a number from 1 to 10000, or all; got '0'" in user_error(cli("quote", "8xA100", "--top", "0"))


@pytest.mark.clock
def test_one_is_singular():
    assert "— 1 option, verified first" in cli("quote", "8xA100", "72h", "--list", "--top", "1").stdout


@pytest.mark.parametrize("argv, message", [
    (["quote", "8xA100", "-5h"], "error: '-5h': durations are positive — example: 8xA100 72h"),
    (["quote", "-8xA100", "5h"], "error: '-8xA100': GPU counts are positive — example: 8xA100 72h"),
    (["quote", "8xA100", "72h", "--frobnicate"], "error: gpu-assist quote: unrecognized arguments: --frobnicate"),
])
def test_negative_words_reach_the_grammar(argv, message):
    assert user_error(cli(*argv)).startswith(message)


def test_a_long_bad_input_is_cut_in_the_echo():
    word = "z" * 10_000
    for argv in (["quote", "8xA100", word], [word]):
        line = user_error(cli(*argv))
        echoed = re.search(r"'(z+…?)'", line).group(1)  # on a line of its own, whole
        assert echoed == "z" * 79 + "…" and len(line) < 400


def test_validate_names_each_location_once_and_says_not_found(tmp_path):
    directory = _catalog_copy(tmp_path)
    lines = (directory / "aws.csv").read_text().splitlines()
    columns = len(lines[0].split(","))
    lines[36] += ",surplus"
    (directory / "aws.csv").write_text("\n".join(lines) + "\n")
    done = cli("catalog", "validate", str(directory))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{directory / 'aws.csv'}:37: {columns + 1} fields where the header has {columns}", f"{directory}: 1 defect"]
    (directory / "fx.csv").unlink()
    assert cli("catalog", "validate", str(directory)).stdout.splitlines()[0] == f"{directory / 'fx.csv'}: not found"
    line = user_error(cli("catalog", "validate", str(tmp_path / "nowhere")))
    assert line.startswith(f"error: catalog directory {tmp_path / 'nowhere'} not found")


def test_version_and_tco_help():
    from importlib.metadata import version

    assert cli("--version").stdout.strip() == f"gpu-assist {version('gpu-assist')}"
    helped = cli("tco", "--help")
    assert helped.returncode == 0
    for key in ("hardware=", "facility=", "power=", "ops=", "cloud=", "currency=", "years=", "usage="):
        assert f"\n  {key}" in helped.stdout
    assert max(len(line) for line in helped.stdout.splitlines()) <= 100


@pytest.mark.clock
def test_watch_without_a_gpu_says_there_is_nothing_to_watch(tmp_path):
    """A stand-in pynvml that fails as a machine without a driver does, whatever GPU this machine has."""
    (tmp_path / "pynvml.py").write_text("def nvmlInit():\n    raise RuntimeError('no NVIDIA driver here')\n")
    done = cli("util", "--watch", env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
               timeout=30)
    assert done.returncode == 1 and done.stdout == "" and "\x1b" not in done.stderr
    assert done.stderr.strip() == "no GPUs: NVML could not start (no NVIDIA driver here): nothing to watch"


def test_the_grammar_page_states_the_real_length_of_a_month():
    grammar = (REPO / "docs" / "grammar.md").read_text(encoding="utf-8")
    assert "`2mo` (730 h)" not in grammar and "`1mo` = 730 h" in grammar


# 7. Each command installs what it needs.

def test_make_demo_installs_no_test_system_packages():
    """Even where every package is missing, `make demo` asks only for Node.js (to build the extension)."""
    everything = ["NODE_PACKAGE=nodejs", "TEST_PACKAGES=nodejs postgresql chromium"]
    done = subprocess.run(["make", "-n", "-B", "demo", *everything], cwd=REPO, capture_output=True, text=True,
                          timeout=60)  # -n -B: what a fresh clone would run, printed, not run
    assert done.returncode == 0 and "nodejs" in done.stdout and "pip install --quiet -e .\n" in done.stdout
    assert "postgresql" not in done.stdout and "chromium" not in done.stdout and "[test]" not in done.stdout
    test = subprocess.run(["make", "-n", "-B", "test", *everything], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert "nodejs postgresql chromium" in test.stdout and "'.[test]'" in test.stdout
