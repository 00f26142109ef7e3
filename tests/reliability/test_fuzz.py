"""Fuzzing: the command router and the catalog loader raise only their own errors, whatever they are fed.
`make test` runs a few thousand examples; `make soak` (GPU_ASSIST_SOAK=1) runs ≥ 100,000 per property."""

from __future__ import annotations

import re
import typing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import TODAY, offer, soak

from gpu_assist.catalog import OFFER_COLUMNS, OPTIONAL_COLUMNS, load_catalog, validate_directory
from gpu_assist.commands import Command, Context, QuoteCommand, RecommendCommand, TcoCommand
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.errors import CatalogError, GpuAssistError
from gpu_assist.pricing.quote import Quote
from gpu_assist.sources.refresh import fields_to_csv

EXAMPLES = 100_000 if soak() else 1_500
_COUNTS: dict[str, int] = {}

_WORDS = st.sampled_from([
    "quote", "recommend", "tco", "util", "launch", "stop", "requests", "help", "fleet", "8xA100", "A100:8", "h100*8",
    "2×H100", "8卡A100", "72h", "3天", "1mo", "90m", "0h", "spot", "reserved", "monthly", "aws", "region=cn",
    "region=", "provider=ibm", "currency=EUR", "top=0", "top=5", "--top", "all-regions", "train", "finetune", "serve",
    "7B", "70B", "1.5T", "lora", "qlora", "fp8", "int4", "tokens=20B", "deadline=72h", "budget=$5000", "budget=¥",
    "users=50", "own=2xRTX3090", "gpus=A1000", "mfu=2", "hardware=100k", "usage=900h/mo", "i-0123456789abcdef0",
    "r-0123456789ab", "=", ":", "x", "×", "\x00", "😀", "ＡＢＣ", "9" * 30, "-1", "nan", "inf", "1e309"])


def _count(name: str) -> None:
    _COUNTS[name] = _COUNTS.get(name, 0) + 1


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.text(max_size=80), st.lists(_WORDS, max_size=10).map(" ".join)))
def test_the_command_router_raises_only_its_own_errors(catalog_for_fuzz, text):
    _count("router")
    try:
        command = parse_command(text, catalog_for_fuzz.gpus)
    except GpuAssistError as error:
        _count("router refused")
        assert 0 < len(str(error)) < 1000, repr(error)
        return
    assert isinstance(command, typing.get_args(Command)), command


_CORRUPTIONS = st.sampled_from(["drop column", "bad number", "duplicate row", "garbage bytes", "empty file",
                                "unknown gpu", "negative price", "bad date", "bad flag", "truncated"])


@settings(max_examples=max(200, EXAMPLES // 100), deadline=None, suppress_health_check=list(HealthCheck))
@given(_CORRUPTIONS, st.integers(min_value=0, max_value=10**6), st.text(max_size=12))
def test_corrupt_catalogs_give_catalog_errors_with_file_and_line(tmp_path_factory, corruption, seed, junk):
    _count("catalog")
    directory = tmp_path_factory.mktemp("fuzzcat")
    from support import CATALOGS

    for name in ("gpus.csv", "fx.csv"):
        (directory / name).write_bytes((CATALOGS / name).read_bytes())
    rows = [offer(instance_type=f"t{n}", on_demand_hourly=str(1 + n)) for n in range(3)]
    text = fields_to_csv(rows)
    lines = text.splitlines()
    target = 1 + seed % 3
    if corruption == "drop column":
        required = [c for c in OFFER_COLUMNS if c not in OPTIONAL_COLUMNS]  # an optional one may be absent
        column = OFFER_COLUMNS.index(required[seed % len(required)])
        lines = [",".join(c for i, c in enumerate(line.split(",")) if i != column) for line in lines]
    elif corruption == "bad number":
        lines[target] = lines[target].replace(",32,", ",", 1).replace(f",{target},", f",{junk or 'x'}x,", 1)
    elif corruption == "duplicate row":
        lines.append(lines[target])
    elif corruption == "garbage bytes":
        (directory / "aws.csv").write_bytes(bytes([seed % 256]) * 10 + b"\xff\xfe" + junk.encode())
        lines = None
    elif corruption == "empty file":
        lines = []
    elif corruption == "unknown gpu":
        lines[target] = lines[target].replace(",A100,", f",Z{seed},", 1)
    elif corruption == "negative price":
        lines[target] = lines[target].replace(f",{target},", ",-5,", 1)
    elif corruption == "bad date":
        lines[target] = lines[target].replace("2026-12-01", f"2026-13-{seed % 99}", 1)
    elif corruption == "bad flag":
        lines[target] = lines[target].replace(",yes,", f",yes,{junk.replace(',', '')}x:y", 1)
    else:
        cut = 1 + seed % (len(lines[target]) - 1)  # 1 character to all but the last: never a blank line
        lines = lines[:target] + [lines[target][:cut]]
    if lines is not None:
        (directory / "aws.csv").write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    try:
        load_catalog(directory, cache_dir=None)
    except CatalogError as error:
        _count("catalog refused")
        assert re.search(r"aws\.csv:\d+:", str(error)), str(error)
    else:
        raise AssertionError(f"the loader accepted a catalog with '{corruption}' (seed {seed}, junk {junk!r})")


@pytest.mark.parametrize("column", ["as_of", "reserved_as_of"])
def test_an_impossible_date_is_refused_with_file_and_line(tmp_path, column):
    """Written YYYY-MM-DD but no day of the calendar: the loader refused nothing of it before (it loaded, and the
    first quote or `catalog status` that aged the price failed)."""
    from support import CATALOGS

    for name in ("gpus.csv", "fx.csv"):
        (tmp_path / name).write_bytes((CATALOGS / name).read_bytes())
    row = offer(reserved_1y_hourly="20", reserved_source="skypilot-aws", reserved_as_of="2026-12-01")
    row[column] = "2026-13-10"
    (tmp_path / "aws.csv").write_text(fields_to_csv([row]), encoding="utf-8")
    with pytest.raises(CatalogError, match=rf"aws\.csv:2: {column} '2026-13-10' is not a day of the calendar"):
        load_catalog(tmp_path, cache_dir=None)


_TCO_KEYS = st.sampled_from(["hardware", "facility", "power", "ops", "cloud", "currency", "years", "usage", "gpus",
                              "HARDWARE", ""])
_TCO_VALUES = st.one_of(
    st.sampled_from(["0", "0.0", "00", "-1", "1", "0.000001", "100k", "$0", "¥0", "5万", "1e5", "nan", "inf", "cny",
                     "USD", "EUR", "730", "731", "0h/mo", "200h/mo", "20", "21", "9" * 40, "9" * 40 + "k", ""]),
    st.decimals(allow_nan=False, allow_infinity=False).map(str), st.text(max_size=8))


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["1xA100", "8xH100", "A100", "2xRTX3090", "0xA100", "1xA1000", ""]),
       st.lists(st.tuples(_TCO_KEYS, _TCO_VALUES).map("=".join), max_size=6))
def test_any_tco_input_is_answered_or_refused_by_our_own_errors(catalog_for_fuzz, gpus, options):
    """Parse, compute and render in every face: DivisionByZero, InvalidOperation or Overflow never escape."""
    _count("tco")
    try:
        _answer_in_every_face(catalog_for_fuzz, " ".join(["tco", gpus, *options]))
    except GpuAssistError:
        _count("tco refused")


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["quote", "recommend"]), st.lists(_WORDS, max_size=8),
       st.sampled_from(["", "region=mars", "region=us-east-1", "region=cn", "region=eu,mars", "provider=tencent",
                        "monthly", "reserved", "verified-only", "top=all", "top=1", "currency=CNY"]))
def test_any_quote_or_plan_is_answered_or_refused_in_every_face(catalog_for_fuzz, verb, words, option):
    """A quote either has options or says why it has none; nothing but our own errors escapes."""
    _count("answer")
    try:
        result = _answer_in_every_face(catalog_for_fuzz, " ".join([verb, *words, option]))
    except GpuAssistError as error:
        _count("answer refused")
        assert len(str(error)) < 1000, str(error)
        return
    if isinstance(result, Quote):
        assert bool(result.options) != bool(result.empty_reason), result


def _answer_in_every_face(catalog, text: str):
    from gpu_assist.render import json as render_json
    from gpu_assist.render import text as render_text
    from slackbot import blocks

    context = Context(catalog_loader=lambda: catalog, today=lambda: TODAY, currency="USD")
    command = parse_command(text, catalog.gpus)
    if not isinstance(command, (QuoteCommand, RecommendCommand, TcoCommand)):
        return None  # other verbs reach AWS, NVML or the store: the router property covers their parsing
    result = run(command, context)
    render_text.render(result)
    render_json.render(result)
    if isinstance(result, Quote):
        blocks.quote_blocks(result)
    return result


_SHAPES = st.sampled_from(["copy", "missing", "empty", "directory", "dangling symlink", "symlink to a directory",
                           "fifo", "junk bytes", "header only"])


def _shape(path, shape: str, original: bytes) -> None:
    import os

    if shape == "copy":
        path.write_bytes(original)
    elif shape == "empty":
        path.write_bytes(b"")
    elif shape == "directory":
        path.mkdir()
    elif shape == "dangling symlink":
        path.symlink_to(path.parent / "nothing-here")
    elif shape == "symlink to a directory":
        path.symlink_to(path.parent)
    elif shape == "fifo":
        os.mkfifo(path)  # reading it would block: the loader must never open one
    elif shape == "junk bytes":
        path.write_bytes(b"\xff\xfe\x00" + original[:200])
    elif shape == "header only":
        path.write_bytes(original.splitlines(keepends=True)[0] if original else b"")


@settings(max_examples=max(300, EXAMPLES // 10), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.fixed_dictionaries({name: _SHAPES for name in ("gpus.csv", "fx.csv", "aws.csv", "gcp.csv", "SOURCES.md")}),
       st.sampled_from(["off", "fresh", "a file"]))
def test_any_shape_of_a_catalog_directory_gives_a_catalog_error(tmp_path_factory, shapes, cache):
    """Missing, empty, a directory, a FIFO, a dangling link… for each file: load refuses with CatalogError naming
    the file, validate lists defects; neither raises anything else nor blocks."""
    from support import CATALOGS

    _count("shapes")
    directory = tmp_path_factory.mktemp("shapes")
    small_offers = fields_to_csv([offer(instance_type=f"t{n}") for n in range(3)]).encode()
    for name, shape in shapes.items():
        if shape != "missing":
            original = small_offers if name in ("aws.csv", "gcp.csv") else (CATALOGS / name).read_bytes()
            _shape(directory / name, shape, original)
    cache_dir = {"off": None, "fresh": directory / "cache", "a file": directory / "SOURCES.md"}[cache]
    try:
        load_catalog(directory, cache_dir=cache_dir)
    except CatalogError as error:
        _count("shapes refused")
        assert str(directory) in str(error), str(error)
    else:
        # An empty fx.csv is a USD-only catalog; a header-only gpus.csv an empty one (with no offers to check).
        assert shapes["gpus.csv"] in ("copy", "header only") and shapes["fx.csv"] in ("copy", "empty", "header only")
    defects = validate_directory(directory)
    assert all(str(defect) for defect in defects)


def test_fuzz_report(record_case, catalog_for_fuzz):
    """Runs after the properties in this file (pytest keeps file order); run alone, it runs the router property
    itself first, so the count it checks is this session's."""
    if not _COUNTS.get("router"):
        test_the_command_router_raises_only_its_own_errors(catalog_for_fuzz)
    record_case("Fuzzing the command router (hypothesis)", tried=_COUNTS.get("router", 0),
                refused=_COUNTS.get("router refused", 0), note="only ParseError/GpuAssistError ever raised")
    record_case("Fuzzing the catalog loader with corrupt CSV", tried=_COUNTS.get("catalog", 0),
                refused=_COUNTS.get("catalog refused", 0),
                note="every refusal is a CatalogError naming aws.csv and a line; the rest loaded cleanly")
    record_case("Fuzzing tco inputs (parse, compute, render)", tried=_COUNTS.get("tco", 0),
                refused=_COUNTS.get("tco refused", 0), note="only GpuAssistError subclasses ever raised")
    record_case("Fuzzing quotes and plans in every face", tried=_COUNTS.get("answer", 0),
                refused=_COUNTS.get("answer refused", 0),
                note="only GpuAssistError raised; a quote has options or says why it has none")
    record_case("Fuzzing the shape of a catalog directory (missing, directory, FIFO, links…)",
                tried=_COUNTS.get("shapes", 0), refused=_COUNTS.get("shapes refused", 0),
                note="every refusal is a CatalogError naming the directory's file; nothing blocks")
    assert _COUNTS.get("router", 0) >= min(EXAMPLES, 1_000)
