"""Quote, recommend and TCO answers as the CLI prints them (text and JSON) and as Slack shows them (Block Kit).

Driven through the command grammar and the renderers with a fixed date, so a catalog's age never changes a label.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_assist.commands import Context
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.render import json as render_json, text as render_text
from gpu_assist.render import operations as _operations, plans as _plans  # noqa: F401 - they register
from slackbot import blocks
from support import TODAY

EXPECTED = Path(__file__).parent / "expected"  # as in tests/golden/conftest.py, which another conftest may shadow

QUOTES = {
    "quote-8xA100-72h": "quote 8xA100 72h",
    "quote-8xH100-1h": "quote 8xH100 1h",
    "quote-8xA100-1mo-reserved-3y": "quote 8xA100 1mo pricing=reserved-3y",
    "quote-8xA100-1mo-reserved-1y-gcp": "quote 8xA100 1mo pricing=reserved-1y provider=gcp",
    "quote-1xA100-72h-eu-top3": "quote 1xA100 72h region=eu top=3",
    "quote-4xH100-24h-spot-flagged": "quote 4xH100 24h spot include-flagged top=5",
    "quote-8xH100-1mo-monthly-empty": "quote 8xH100 1mo monthly",
    "quote-1xA100-8h-cn": "quote 1xA100 8h region=cn",
    "quote-1xH200-10h-all": "quote 1xH200 10h top=all",
}
RECOMMENDS = {
    "recommend-train-7B": "recommend train 7B tokens=20B deadline=7d",
    "recommend-serve-70B": "recommend serve 70B users=50",
    "recommend-finetune-13B-budget": "recommend finetune 13B tokens=1B deadline=2d budget=2000",
}
TCO = {"tco-8xA100": "tco 8xA100 hardware=25000 years=3", "tco-2xRTX4090-cny": "tco 2xRTX4090 hardware=¥15000"}


@pytest.fixture(scope="module")
def context(catalog):
    return Context(catalog_loader=lambda: catalog, today=lambda: TODAY, currency="USD")


def _answer(context, line):
    return run(parse_command(line, context.catalog.gpus), context)


def _slack(result) -> str:
    """The Block Kit a Slack answer carries, one JSON document, keys in a fixed order."""
    if hasattr(result, "rows"):
        rendered = blocks.comparison_blocks(result)
    elif hasattr(result, "plans"):
        rendered = blocks.recommendation_blocks(result)
    elif hasattr(result, "options"):
        rendered = blocks.quote_blocks(result)
    else:
        rendered = blocks.text_blocks(result)
    return json.dumps(rendered, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("name", sorted(QUOTES) + sorted(RECOMMENDS))
def test_text_json_and_slack(golden, context, name):
    line = {**QUOTES, **RECOMMENDS}[name]
    result = _answer(context, line)
    golden(f"{name}.txt", render_text.render(result) + "\n")
    if name in RECOMMENDS:
        golden(f"{name}.explain.txt", render_text.render(result, explain=True) + "\n")
    golden(f"{name}.json", render_json.render(result) + "\n")
    golden(f"{name}.slack.json", _slack(result))


@pytest.mark.parametrize("name", sorted(TCO))
def test_tco(golden, context, name):
    result = _answer(context, TCO[name])
    golden(f"{name}.txt", render_text.render(result) + "\n")
    golden(f"{name}.json", render_json.render(result) + "\n")


def test_pinned_text_fits_100_columns():
    """Every pinned text answer fits a 100-column terminal: a check on the goldens themselves."""
    wide = [f"{path.name}:{number}" for path in sorted(EXPECTED.glob("*.txt"))
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if len(line) > 100]
    assert wide == []


def _shown(document: str) -> str:
    """What a page shows after `$ gpu-assist quote 8xA100 72h`, up to the end of its code block."""
    text = (EXPECTED.parents[2] / document).read_text(encoding="utf-8")
    return text.split("```\n$ gpu-assist quote 8xA100 72h\n", 1)[1].split("```", 1)[0]


def test_the_docs_first_quote_is_the_pinned_answer():
    """docs/quotes.md shows `gpu-assist quote 8xA100 72h` as the tool prints it (on the pinned date), and the
    README its first lines, cut with "…"."""
    pinned = (EXPECTED / "quote-8xA100-72h.txt").read_text(encoding="utf-8")
    assert _shown("docs/quotes.md") == pinned
    head = _shown("README.md")
    assert head.endswith("\n…\n") and pinned.startswith(head.removesuffix("…\n")) and head.count("\n") > 4
