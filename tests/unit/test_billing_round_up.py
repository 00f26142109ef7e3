"""A row billed for more hours than the job runs says so in every face: vast bills per hour, so a 90-minute job
costs two hours' price there, and the answer says "billed 2h: per-hour billing" (once, where every row has it)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from support import TODAY
from gpu_assist.cli import main
from gpu_assist.commands import Context
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.commands.grammar import parse_quote, words_of
from slackbot.blocks import comparison_blocks
from gpu_assist.render.json import quote_answer

# The CLI reads today's date itself, as a user's run does: its answers here are on support.TODAY's.
pytestmark = pytest.mark.usefixtures("pinned_wall_clock")

NOTE = "billed 2h: per-hour billing"


@pytest.fixture
def context(catalog):
    return Context(catalog_loader=lambda: catalog, today=lambda: TODAY, currency="USD")


def test_the_text_answer_says_when_a_row_bills_more_hours_than_the_job(capsys):
    assert main(["quote", "1xA100", "90m", "provider=vast"]) == 0
    shown = capsys.readouterr().out
    assert f"all rows: {NOTE}" in shown  # every vast row has it: said once, not as a marker on each
    assert main(["quote", "1xA100", "90m", "--format", "json"]) == 0
    options = json.loads(capsys.readouterr().out)
    rounded = [o for o in options if o["pricing_model"] in ("on-demand", "spot") and o["billed_hours"] > 1.5]
    assert rounded and all(NOTE in o["notes"] for o in rounded)
    assert all(NOTE not in o["notes"] for o in options if o["billed_hours"] == 1.5)
    # Mixed with per-second rows, it is a marker on the rows it concerns, with a legend line.
    assert main(["quote", "1xA100", "90m", "provider=vast,aws"]) == 0
    shown = capsys.readouterr().out
    assert f"all rows: {NOTE}" not in shown
    assert any(line.split(" ", 1)[1:] == [NOTE] for line in shown.splitlines())


def test_a_whole_number_of_billing_units_says_nothing(capsys):
    assert main(["quote", "1xA100", "2h", "provider=vast"]) == 0
    assert "billed" not in capsys.readouterr().out


def test_slack_and_the_notebook_say_it_too(context):
    command = parse_command("quote 1xA100 90m provider=vast", context.catalog.gpus)
    blocks = json.dumps(comparison_blocks(run(command, context), command=command), ensure_ascii=False)
    assert f"all rows: {NOTE}" in blocks
    listed = run(replace(parse_quote(words_of("1xA100 90m provider=vast"), context.catalog.gpus), view="list"),
                 context)
    answer = quote_answer(listed)  # what the JupyterLab sidebar's route answers
    assert answer["options"] and all(NOTE in o["notes"] for o in answer["options"])
