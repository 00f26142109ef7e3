"""Fuzzing: the command router and the catalog loader raise only their own errors, whatever they are fed.
`make test` runs a few thousand examples; `make soak` (GPU_ASSIST_SOAK=1) runs ≥ 100,000 per property."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings, strategies as st

from gpu_assist.catalog import OFFER_COLUMNS, load_catalog
from gpu_assist.commands import parse_command
from gpu_assist.errors import CatalogError, GpuAssistError
from gpu_assist.sources import rows_to_csv
from support import offer, soak

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
        parse_command(text, catalog_for_fuzz.gpus)
    except GpuAssistError:
        _count("router refused")


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
    text = rows_to_csv(rows)
    lines = text.splitlines()
    target = 1 + seed % 3
    if corruption == "drop column":
        column = OFFER_COLUMNS.index(OFFER_COLUMNS[seed % len(OFFER_COLUMNS)])
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
        lines = lines[:target] + [lines[target][: seed % max(1, len(lines[target]))]]
    if lines is not None:
        (directory / "aws.csv").write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    try:
        load_catalog(directory, cache_dir=None)
    except CatalogError as error:
        _count("catalog refused")
        assert "aws.csv" in str(error) and re.search(r"aws\.csv:\d+:", str(error)), str(error)


def test_fuzz_report(record_case):
    """Runs after the properties in this file (pytest keeps file order)."""
    record_case("Fuzzing the command router (hypothesis)", tried=_COUNTS.get("router", 0),
                refused=_COUNTS.get("router refused", 0), note="only ParseError/GpuAssistError ever raised")
    record_case("Fuzzing the catalog loader with corrupt CSV", tried=_COUNTS.get("catalog", 0),
                refused=_COUNTS.get("catalog refused", 0),
                note="every refusal is a CatalogError naming aws.csv and a line; the rest loaded cleanly")
    assert _COUNTS.get("router", 0) >= min(EXAMPLES, 1_000)
