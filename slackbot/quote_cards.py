"""The cards of answers to a question: a quote, a comparison with its "More" button, a recommendation, the fleet,
and any other result as its text."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from gpu_assist import facts
from gpu_assist.catalog.providers import LAUNCH_PROVIDERS
from gpu_assist.clouds.fleet import FleetReport
from gpu_assist.commands.objects import QuoteCommand
from gpu_assist.lifecycle.specs import OptionId, launch_option
from gpu_assist.plan.recommendation import Recommendation
from gpu_assist.pricing.compare import Comparison, ComparisonRow
from gpu_assist.pricing.query import Query
from gpu_assist.pricing.quote import Quote
from gpu_assist.render import freshness as _freshness  # noqa: F401 - the text of /gpu catalog
from gpu_assist.render import operations as _operations  # noqa: F401 - the text of what Slack shows
from gpu_assist.render import plans as _plans  # noqa: F401 - the text of what Slack shows
from gpu_assist.render.comparison import HEADERS, job_length, layout
from gpu_assist.render.money import format_hours, format_money, format_percent, format_plan_cost
from gpu_assist.render.notes import said, where, words
from gpu_assist.render.tables import table, text_table
from gpu_assist.render.text import render as render_text
from slackbot.block_kit import (
    QUOTE_MORE,
    REQUEST_LAUNCH,
    REQUEST_STOP,
    SECTION_LIMIT,
    VALUE_LIMIT,
    Block,
    Launches,
    context_block,
    launch_button_value,
    monospaced,
    section_block,
)

CARD_ROWS = 8  # a card shows at most this many comparison rows; "More" shows the next ones
MORE_VERSION = 1  # of the "More" button's value: a button another version wrote is out of date


# The notes a quote card's caveat line keeps: what can interrupt, commit or doubt the price, and many hosts.
_CAVEATS = (facts.SpotInterruption, facts.Unverified, facts.Stale, facts.ReservedTerm, facts.MultiHost,
            facts.DateUnknown)


def _reason(quote: Quote) -> str:
    """Why a quote has no options, in words."""
    return words(quote.empty_reason) if quote.empty_reason else "try fewer filters"


def quote_blocks(result: Quote, *, top: int = 5, launches: Launches = LAUNCH_PROVIDERS) -> list[Block]:
    request = result.request
    options = result.options[:top]
    title = f"{request.count}×{request.gpu} for {job_length(request.duration_s)}"
    if not options:
        return [section_block(f"*{title}*: no option matches: {_reason(result)}."),
                context_block(said(result.notices) or ["prices from catalogs/SOURCES.md"])]
    rows = [[str(i), o.provider, o.instance_type, where(o), o.pricing_model,
             format_money(o.total, o.currency), format_money(o.per_gpu_hour, o.currency, places=2)]
            for i, o in enumerate(options, 1)]
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": f"{title} — cheapest {len(options)} "
                                    f"of {len(result.options)} ({result.currency})"[:150]}},
        section_block(monospaced(table(["#", "provider", "instance", "where", "pricing", "total", "/GPU-h"], rows,
                             right={0, 5, 6}))),
    ]
    caveats = []
    for i, o in enumerate(options, 1):
        bits = []
        if o.savings_vs_on_demand is not None:
            bits.append(f"saves {format_percent(o.savings_vs_on_demand)} vs on-demand")
        bits += [words(n) for n in o.notes if isinstance(n, _CAVEATS)]
        if bits:
            caveats.append(f"{i}. " + "; ".join(bits))
    blocks.append(context_block(caveats + said(result.notices) or ["prices from catalogs/SOURCES.md"]))
    buttons = [{"type": "button", "action_id": f"{REQUEST_LAUNCH}_{i}",
                "text": {"type": "plain_text", "text": f"Request launch #{i}"},
                "value": launch_button_value(OptionId(o.instance_type, o.region, o.pricing_model, o.provider),
                                             request.duration_s)}
               for i, o in enumerate(options, 1)
               if o.provider in launches and o.pricing_model in ("on-demand", "spot") and o.verified]
    if buttons:
        blocks.append({"type": "actions", "elements": buttons[:5]})
    return blocks


def _launch_button(row: ComparisonRow, index: int, request: Query, launches: Launches) -> Block | None:
    """A "Request launch" accessory for a verified row of a launch cloud (native or SkyPilot's): `launch_option`."""
    option = launch_option(row, launches)
    if option is None:
        return None
    return {"type": "button", "action_id": f"{REQUEST_LAUNCH}_{index}",
            "text": {"type": "plain_text", "text": f"Request launch ({option.pricing_model})"},
            "value": launch_button_value(option, request.duration_s)}


def comparison_blocks(result: Comparison, *, command: QuoteCommand | None = None, start: int = 0,
                      launches: Launches = LAUNCH_PROVIDERS) -> list[Block]:
    """The comparison as Block Kit: a section per offer (at most 8), the legend in a context block and, when
    `command` (the quote that asked) is given, a "More" button for the next rows. It speaks Slack's grammar
    (`include-flagged`, `top=20`), never CLI flags."""
    view = layout(result)
    rows = result.rows[start:start + CARD_ROWS]
    lines = view.rows[start:start + CARD_ROWS]
    header = f"{view.title}" if not start else f"{view.title} (from #{start + 1})"
    blocks: list[Block] = [{"type": "header", "text": {"type": "plain_text", "text": header[:150]}}]
    if not rows and not result.untrusted:
        reason = _reason(result.quote)
        return blocks + [section_block(f"No offer matches: {reason}."), context_block(list(view.notices) or [reason])]
    columns = result.columns
    for index, (row, line) in enumerate(zip(rows, lines), start + 1):
        cells = line[4:4 + len(columns)]
        prices = " · ".join(f"*{HEADERS[m]} {c.rstrip('*')}*" if c.endswith("*") else f"{HEADERS[m]} {c}"
                            for m, c in zip(columns, cells) if c)
        if len(line) > 5 + len(columns):  # the whole bill's disk+data column
            prices += f" · disk+data {line[4 + len(columns)]}"
        marks = f"  _notes {line[-1]}_" if line[-1] else ""
        section = section_block(f"*{index}. {row.provider}* `{line[2]}` · {line[3]}{marks}\n{prices}")
        button = _launch_button(row, index, result.request, launches)
        if button:
            section["accessory"] = button
        blocks.append(section)
    if result.untrusted and not start:
        unranked = [f"{r.provider} `{r.instance_type}`: {line[-1] and 'notes ' + line[-1]}"
                    for r, line in zip(result.untrusted, view.untrusted)]
        blocks.append(section_block("*Not ranked: unverified, stale or derived prices* (`include-unverified` ranks "
                                    "them)\n" + "\n".join(unranked)))
    legend = "\n".join(("*bold*: the cheapest way to buy each row", *view.legend[1:], *view.notices))
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": legend[:SECTION_LIMIT]}]})
    shown = start + len(rows)
    remaining = len(result.rows) - shown + result.more
    more = _more_button(command, shown, remaining, cut=shown >= len(result.rows)) if command else None
    if more:
        blocks.append({"type": "actions", "elements": [more]})
    return blocks


def _more_button(command: QuoteCommand, shown: int, remaining: int, *, cut: bool) -> dict[str, Any] | None:
    """The "More" button carries the command itself (its fields, with a version), not text to parse again; where
    the command's own `top` cut the rest, it asks for more rows. None when nothing remains or it would not fit."""
    if remaining <= 0:
        return None
    asked = (replace(command, top=shown + CARD_ROWS) if cut else command).to_fields()
    value = json.dumps({"v": MORE_VERSION, "quote": asked, "start": shown}, ensure_ascii=False, separators=(",", ":"))
    if len(value) > VALUE_LIMIT:
        return None
    return {"type": "button", "action_id": QUOTE_MORE, "value": value,
            "text": {"type": "plain_text", "text": f"More ({remaining} offers)"}}


def read_more(value: str) -> tuple[QuoteCommand, int]:
    """The command and the first row a "More" button carries; ValueError for a value this version did not write
    (an older card, or anything malformed)."""
    asked = json.loads(value)
    if not isinstance(asked, dict) or asked.get("v") != MORE_VERSION or set(asked) != {"v", "quote", "start"}:
        raise ValueError("not a More button of this version")
    start = asked["start"]
    if type(start) is not int or start < 0:
        raise ValueError("bad start row")
    return QuoteCommand.from_fields(asked["quote"]), start


def recommendation_blocks(result: Recommendation, *, top: int = 5) -> list[Block]:
    workload = result.workload
    plans = result.plans[:top]
    blocks = [{"type": "header", "text": {"type": "plain_text",
                                          "text": f"Plan: {workload.describe()} ({result.currency})"[:150]}}]
    if plans:
        rows = [[str(i), f"{p.gpu_count:,}x{p.gpu}", p.provider, p.instance_type, p.strategy, format_hours(p.hours),
                 format_plan_cost(p)] for i, p in enumerate(plans, 1)]
        headers = ["#", "GPUs", "provider", "instance", "strategy", "time", "total"]
        blocks.append(section_block(monospaced(text_table(headers, rows, right={0, 5, 6}))))
    else:
        blocks.append(section_block("No plan meets every constraint."))
    why = [f"not chosen: {p.gpu_count:,}×{p.gpu} — {words(p.reasons[0])}" for p in result.rejected[:3] if p.reasons]
    why += [f"not chosen: {words(fact)}" for fact in result.not_planned[:2]]
    blocks.append(context_block([words(basis) for basis in result.assumptions[:4]] + why))
    return blocks


def text_blocks(result: object) -> list[Block]:
    """Results without a card of their own (tco, local util, requests, help): their text, monospaced."""
    return [section_block(monospaced(render_text(result)))]


def fleet_blocks(report: FleetReport) -> list[Block]:
    blocks = [section_block(monospaced(render_text(report)))]
    buttons = [{"type": "button", "action_id": f"{REQUEST_STOP}_{i}", "style": "danger",
                "text": {"type": "plain_text", "text": f"Request stop {u.instance_id}"[:75]}, "value": u.instance_id}
               for i, u in enumerate(report.idle[:5], 1) if u.request_id]
    if buttons:
        blocks.append({"type": "actions", "elements": buttons})
    return blocks


def more_message(result: Comparison, command: QuoteCommand, start: int, launches: Launches = LAUNCH_PROVIDERS
                 ) -> tuple[str, list[Block]]:
    """The "More" button's answer: the comparison's rows from `start` on, with the next "More"."""
    return (f"More offers for {result.request.describe()}",
            comparison_blocks(result, command=command, start=start, launches=launches))
