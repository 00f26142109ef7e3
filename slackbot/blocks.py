"""Slack Block Kit for every command result: compact tables in code blocks, caveats in context blocks,
buttons where the user can act (request a launch from a quote row, a stop from an idle instance,
approve or reject a request, see more rows of a comparison).

`message` picks the card for the result's type (`functools.singledispatch`) with the notification text beside it.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from functools import singledispatch
from typing import Any, Sequence

from gpu_assist import facts
from gpu_assist.clouds.fleet import FleetReport
from gpu_assist.commands.objects import QuoteCommand
from gpu_assist.errors import ParseError
from gpu_assist.facts import LaunchCloud
from gpu_assist.lifecycle.identity import slack_mention
from gpu_assist.lifecycle.records import RequestRecord
from gpu_assist.lifecycle.specs import Checks, ExtendSpec, LaunchSpec, OptionId
from gpu_assist.plan.recommendation import Recommendation
from gpu_assist.plural import plural
from gpu_assist.pricing.compare import Comparison, ComparisonRow
from gpu_assist.pricing.query import Query, format_duration, is_duration_s
from gpu_assist.pricing.quote import Quote
from gpu_assist.render import operations as _operations  # noqa: F401 - the text of what Slack shows
from gpu_assist.render import freshness as _freshness  # noqa: F401 - the text of /gpu catalog
from gpu_assist.render import plans as _plans  # noqa: F401 - the text of what Slack shows
from gpu_assist.render.comparison import HEADERS, job_length, layout
from gpu_assist.render.money import format_hours, format_money, format_percent, format_plan_cost
from gpu_assist.render.notes import said, where, words
from gpu_assist.render.spend import budget_line, idle_alert, interruption_line, team_line
from gpu_assist.render.tables import table, text_table
from gpu_assist.render.text import render as render_text
from gpu_assist.team.budgets import BudgetStatus
from gpu_assist.team.interruptions import Interruption
from gpu_assist.team.standing import TeamStanding
from gpu_assist.team.watch import EXTENSION_S, IdleAlert

Block = dict[str, Any]  # one Block Kit block, as Slack's Web API takes it

APPROVE = "approve_request"
REJECT = "reject_request"
REQUEST_LAUNCH = "request_launch"
REQUEST_STOP = "request_stop"
QUOTE_MORE = "quote_more"
IDLE_STOP, IDLE_KEEP, IDLE_EXTEND = "idle_stop", "idle_keep", "idle_extend"  # the idle alert's buttons
CARD_ROWS = 8  # a card shows at most this many comparison rows; "More" shows the next ones
MORE_VERSION = 1  # of the "More" button's value: a button another version wrote is out of date
_SECTION_LIMIT = 2900  # Slack allows 3000 characters of text in a section
_VALUE_LIMIT = 2000  # Slack allows 2000 characters in a button's value


@singledispatch
def message(result: object, *, command: object = None) -> tuple[str, list[dict[str, Any]]]:
    """A command's answer as Slack shows it: (notification text, blocks). `command` is the command that asked, so
    that a comparison's "More" button can ask it again. Results without a card of their own are their text."""
    rendered = text_blocks(result)
    return rendered[0]["text"]["text"].strip("`")[:300], rendered


@message.register(Comparison)
def _comparison_message(result: Comparison, *, command: object = None) -> tuple[str, list[dict[str, Any]]]:
    asked = command if isinstance(command, QuoteCommand) else None
    return (f"{len(result.rows) + result.more} offers for {result.request.describe()}",
            comparison_blocks(result, command=asked))


@message.register(Quote)
def _quote_message(result: Quote, *, command: object = None) -> tuple[str, list[dict[str, Any]]]:
    return f"{plural(len(result.options), 'option')} for {result.request.describe()}", quote_blocks(result)


@message.register(Recommendation)
def _recommendation_message(result: Recommendation, *, command: object = None) -> tuple[str, list[dict[str, Any]]]:
    return f"{plural(len(result.plans), 'plan')} for {result.workload.describe()}", recommendation_blocks(result)


@message.register(FleetReport)
def _fleet_message(result: FleetReport, *, command: object = None) -> tuple[str, list[dict[str, Any]]]:
    return f"{plural(len(result.instances), 'GPU instance')}, {len(result.idle)} idle", fleet_blocks(result)


def launch_button_value(option: OptionId, duration_s: int) -> str:
    """A quote card's Request launch button: the option and the time to live, as data, not words to re-read."""
    return json.dumps({"option": str(option), "duration_s": duration_s})


def launch_button_choice(value: str) -> tuple[OptionId, int]:
    """(option, seconds) from a launch button's value; ParseError when it is not one this version made."""
    try:
        asked = json.loads(value)
        option, duration_s = OptionId.parse(str(asked["option"])), asked["duration_s"]
    except (ValueError, KeyError, TypeError):
        option, duration_s = None, None
    if option is None or not is_duration_s(duration_s):
        raise ParseError("that button is out of date", hint="quote again and use the new card")
    return option, duration_s


def _section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:_SECTION_LIMIT]}}


def _context(lines: list[str]) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": line[:2900]} for line in lines[:10]]}


def _code(text: str) -> str:
    return "```" + text[: _SECTION_LIMIT - 6] + "```"


# The notes a quote card's caveat line keeps: what can interrupt, commit or doubt the price, and many hosts.
_CAVEATS = (facts.SpotInterruption, facts.Unverified, facts.Stale, facts.ReservedTerm, facts.MultiHost,
            facts.DateUnknown)


def _reason(quote: Quote) -> str:
    """Why a quote has no options, in words."""
    return words(quote.empty_reason) if quote.empty_reason else "try fewer filters"


def quote_blocks(result: Quote, *, top: int = 5) -> list[Block]:
    request = result.request
    options = result.options[:top]
    title = f"{request.count}×{request.gpu} for {job_length(request.duration_s)}"
    if not options:
        return [_section(f"*{title}*: no option matches: {_reason(result)}."),
                _context(said(result.notices) or ["prices from catalogs/SOURCES.md"])]
    rows = [[str(i), o.provider, o.instance_type, where(o), o.pricing_model,
             format_money(o.total, o.currency), format_money(o.per_gpu_hour, o.currency, places=2)]
            for i, o in enumerate(options, 1)]
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": f"{title} — cheapest {len(options)} "
                                    f"of {len(result.options)} ({result.currency})"[:150]}},
        _section(_code(table(["#", "provider", "instance", "where", "pricing", "total", "/GPU-h"], rows,
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
    blocks.append(_context(caveats + said(result.notices) or ["prices from catalogs/SOURCES.md"]))
    buttons = [{"type": "button", "action_id": f"{REQUEST_LAUNCH}_{i}",
                "text": {"type": "plain_text", "text": f"Request launch #{i}"},
                "value": launch_button_value(OptionId(o.instance_type, o.region, o.pricing_model), request.duration_s)}
               for i, o in enumerate(options, 1)
               if o.provider == "aws" and o.pricing_model in ("on-demand", "spot") and o.verified]
    if buttons:
        blocks.append({"type": "actions", "elements": buttons[:5]})
    return blocks


def _launch_button(row: ComparisonRow, index: int, request: Query) -> Block | None:
    """A "Request launch" accessory for a verified AWS row, for its cheapest on-demand or spot option."""
    options = [o for m, o in row.cells if m in ("on-demand", "spot") and o.verified]
    if row.provider != "aws" or not options:
        return None
    option = min(options, key=lambda o: o.total)
    return {"type": "button", "action_id": f"{REQUEST_LAUNCH}_{index}",
            "text": {"type": "plain_text", "text": f"Request launch ({option.pricing_model})"},
            "value": launch_button_value(OptionId(option.instance_type, option.region, option.pricing_model),
                                         request.duration_s)}


def comparison_blocks(result: Comparison, *, command: QuoteCommand | None = None, start: int = 0) -> list[Block]:
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
        return blocks + [_section(f"No offer matches: {reason}."), _context(list(view.notices) or [reason])]
    columns = result.columns
    for index, (row, line) in enumerate(zip(rows, lines), start + 1):
        cells = line[4:4 + len(columns)]
        prices = " · ".join(f"*{HEADERS[m]} {c.rstrip('*')}*" if c.endswith("*") else f"{HEADERS[m]} {c}"
                            for m, c in zip(columns, cells) if c)
        if len(line) > 5 + len(columns):  # the whole bill's disk+data column
            prices += f" · disk+data {line[4 + len(columns)]}"
        marks = f"  _notes {line[-1]}_" if line[-1] else ""
        section = _section(f"*{index}. {row.provider}* `{line[2]}` · {line[3]}{marks}\n{prices}")
        button = _launch_button(row, index, result.request)
        if button:
            section["accessory"] = button
        blocks.append(section)
    if result.untrusted and not start:
        unranked = [f"{r.provider} `{r.instance_type}`: {line[-1] and 'notes ' + line[-1]}"
                    for r, line in zip(result.untrusted, view.untrusted)]
        blocks.append(_section("*Not ranked: unverified, stale or derived prices* (`include-unverified` ranks them)\n"
                               + "\n".join(unranked)))
    legend = "\n".join(("*bold*: the cheapest way to buy each row", *view.legend[1:], *view.notices))
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": legend[:_SECTION_LIMIT]}]})
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
    if len(value) > _VALUE_LIMIT:
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
        blocks.append(_section(_code(text_table(["#", "GPUs", "provider", "instance", "strategy", "time", "total"],
                                                rows, right={0, 5, 6}))))
    else:
        blocks.append(_section("No plan meets every constraint."))
    why = [f"not chosen: {p.gpu_count:,}×{p.gpu} — {words(p.reasons[0])}" for p in result.rejected[:3] if p.reasons]
    why += [f"not chosen: {line}" for line in result.not_planned[:2]]
    blocks.append(_context(list(result.assumptions[:4]) + why))
    return blocks


def text_blocks(result: object) -> list[Block]:
    """Results without a card of their own (tco, local util, requests, help): their text, monospaced."""
    return [_section(_code(render_text(result)))]


def fleet_blocks(report: FleetReport) -> list[Block]:
    blocks = [_section(_code(render_text(report)))]
    buttons = [{"type": "button", "action_id": f"{REQUEST_STOP}_{i}", "style": "danger",
                "text": {"type": "plain_text", "text": f"Request stop {u.instance_id}"[:75]}, "value": u.instance_id}
               for i, u in enumerate(report.idle[:5], 1) if u.request_id]
    if buttons:
        blocks.append({"type": "actions", "elements": buttons})
    return blocks


def approval_card(record: RequestRecord, *, decided: str | None = None, budgets: Sequence[BudgetStatus] = (),
                  team: TeamStanding | None = None) -> list[Block]:
    """The card approvers see; with `decided`, the buttons give way to what happened. `budgets` are the
    `BudgetStatus` rows the request counts against: one line each, an overrun in bold with a red mark; `team`,
    the team's month so far (spent, committed to TTLs, running) for whoever decides, budgets or not (a decided card
    drops it: the decision is made, and the figures would be of another moment)."""
    spec = record.spec
    if isinstance(spec, LaunchSpec):
        checks = spec.checks or Checks("?", "?")
        what = (f"*Launch request {record.id}* from {slack_mention(record.requester)}\n"
                f"{spec.instances}× `{spec.instance_type}` ({spec.gpus}×{spec.gpu}) *{spec.pricing_model}* "
                f"in {spec.region} for {format_duration(spec.duration_s)} (then stopped automatically)\n"
                f"Estimated *{format_money(spec.estimated_total, record.currency)}* · ceiling "
                f"{format_money(spec.ceiling_hourly, record.currency)}/h per instance\n"
                f"Dry run: {checks.dry_run} · Quota: {checks.quota}") + _cloud_lines(spec)
    elif isinstance(spec, ExtendSpec):
        then = spec.launch_ends_at + dt.timedelta(seconds=spec.extra_s)
        what = (f"*Extension request {record.id}* from {slack_mention(record.requester)}\n"
                f"Time to live of {spec.launch_request} ({spec.instances}× `{spec.instance_type}`, "
                f"{spec.gpus}×{spec.gpu} {spec.pricing_model} in {spec.region}) *+{format_duration(spec.extra_s)}*: "
                f"ends {then:%Y-%m-%d %H:%M} UTC instead of {spec.launch_ends_at:%Y-%m-%d %H:%M} UTC\n"
                f"Estimated *{format_money(spec.estimated_total, record.currency)}* more, at "
                f"{format_money(spec.hourly, record.currency)}/h")
    else:
        what = f"*Stop request {record.id}* from {slack_mention(record.requester)}\n" + \
            ", ".join(f"`{i}`" for i in spec.instance_ids) + f" in {spec.region}"
    blocks = [_section(what)]
    if budgets:
        blocks.append(_section("\n".join((f":red_circle: *{budget_line(b)}* — needs an over-budget approver"
                                           if b.over else budget_line(b)) for b in budgets)))
    if team is not None and not decided:
        blocks.append(_context([team_line(team)]))
    if decided:
        blocks.append(_context([decided]))
    else:
        blocks.append(_context([f"expires {record.expires_at:%Y-%m-%d %H:%M} UTC · approvers only"]))
        blocks.append({"type": "actions", "block_id": f"decide:{record.id}", "elements": [
            {"type": "button", "action_id": APPROVE, "style": "primary", "value": record.id,
             "text": {"type": "plain_text", "text": "Approve"}},
            {"type": "button", "action_id": REJECT, "style": "danger", "value": record.id,
             "text": {"type": "plain_text", "text": "Reject"}},
        ]})
    return blocks


def _cloud_lines(spec: LaunchSpec) -> str:
    """Another cloud than AWS, or an AWS account the policy names: which cloud and account, the price's source and
    date, and a stale price's warning (an AWS card without an account alias reads as it always has)."""
    if spec.provider == "aws" and not spec.account:
        return ""
    source, _, as_of = spec.price_source.partition(" ")
    lines = [f"Cloud: {words(LaunchCloud(spec.provider, spec.account))} · price {source} of {as_of or '?'}"]
    if spec.native_currency and spec.native_ceiling_hourly is not None:  # the cloud's own figure, unconverted
        lines.append(f"In {spec.native_currency}: {format_money(spec.native_ceiling_hourly, spec.native_currency)}/h "
                     f"per instance, as the cloud bills it")
    return "\n" + "\n".join(lines + [f":warning: {words(note)}" for note in spec.price_notes])


def outcome_line(record: RequestRecord) -> str:
    spec = record.spec
    if record.state == "running" and isinstance(spec, LaunchSpec):
        return f"Running: {', '.join(f'`{i}`' for i in record.instance_ids)} in " \
               f"{spec.launched_zone or spec.launched_region or ''}; stops {record.ends_at:%Y-%m-%d %H:%M} UTC"
    if record.state == "stopped":
        return f"Stopped: {', '.join(f'`{i}`' for i in record.instance_ids)}"
    if record.state == "extended" and isinstance(spec, ExtendSpec):
        return f"Extended: {spec.launch_request} now stops {record.ends_at:%Y-%m-%d %H:%M} UTC"
    if record.state == "failed":
        return f"Failed: {record.error} — the request is kept; an admin can fix the cause and rerun `reconcile`"
    return f"{record.state}"


def error_blocks(message: str) -> list[Block]:
    return [_section(f":warning: {message}")]


# ---- the Slack app's own lines: acks, answers to buttons, what a decision says ------------------------------
BUSY = "gpu-assist is busy, try again in a moment."
FAILED = "Something went wrong on our side; the request was not carried out. Try again."
OUT_OF_DATE = "That button is out of date."
KEPT = "Kept: no idle alert for 4 h."
_CARRYING_OUT = {"launch": "launching", "stop": "stopping", "extend": "extending"}  # the card while it happens
_REQUEST_NOUN = {"launch": "Launch request", "stop": "Stop request", "extend": "Extension request"}


def working_line(text: str) -> str:
    """The ack of a `/gpu` command that takes longer than about a second; its answer replaces it."""
    return f"Working on `/gpu {text}`…"


def card_notification(record: RequestRecord) -> str:
    """The notification text of an approval card (what a phone or a screen reader shows)."""
    return f"{record.kind} request {record.id} from {slack_mention(record.requester)} needs an approver"


def channel_mention(channel: str | None) -> str:
    """The approval channel as Slack links it; without one, cards go to the channel the command came from."""
    return f"<#{channel}>" if channel else "this channel"


def waiting_line(record: RequestRecord, where: str | None = None) -> str:
    """The requester's answer once the card is posted; `where` (`channel_mention`) says which channel it is in."""
    return f"Request `{record.id}` is waiting for an approver" + (f" in {where}." if where else ".")


def submitted_line(record: RequestRecord) -> str:
    """An idle alert button's answer: the request it made and its state (decided at once where the policy says)."""
    return f"{_REQUEST_NOUN[record.kind]} `{record.id}`: {record.state}"


def not_done(error: Exception) -> str:
    """Why a button did nothing (a refusal, a request that cannot be carried out), to the clicker alone."""
    return f"Not done: {error}"


def not_requested(error: Exception) -> str:
    """Why a Request launch or Request stop button made no request."""
    return f"Not requested: {error}"


def carrying_out_line(record: RequestRecord, decider: str) -> str:
    """The card's line between the approval and its outcome (a launch takes a while); `decider` an actor."""
    return f"Approved by {slack_mention(decider)} — {_CARRYING_OUT[record.kind]}…"


def decision_line(record: RequestRecord, decider: str, *, approved: bool) -> str:
    """Who decided (an actor: a Slack one is mentioned), and for an approval what came of it."""
    if approved:
        return f"Approved by {slack_mention(decider)} — {outcome_line(record)}"
    return f"Rejected by {slack_mention(decider)}"


def decided_card(record: RequestRecord, line: str, budgets: Sequence[BudgetStatus] = ()) -> tuple[str, list[Block]]:
    """The approval card once decided (its buttons give way to `line`): (notification text, blocks)."""
    return f"{record.id}: {line}", approval_card(record, decided=line, budgets=budgets)


def decision_notice(record: RequestRecord, line: str) -> str:
    """The decision in the card's thread, naming the requester so they hear of it."""
    return f"{slack_mention(record.requester)} {record.id}: {line}"


def more_message(result: Comparison, command: QuoteCommand, start: int) -> tuple[str, list[Block]]:
    """The "More" button's answer: the comparison's rows from `start` on, with the next "More"."""
    return (f"More offers for {result.request.describe()}",
            comparison_blocks(result, command=command, start=start))


def interruption_blocks(event: Interruption, relaunch: OptionId, duration_s: int) -> list[Block]:
    """The interruption post with its Relaunch button: a Request launch of the same option for the launch's time to
    live, answered like a quote card's (`specs.launch_button_value`), so it goes through the approval path once per
    click."""
    return [_section(interruption_line(event)),
            {"type": "actions", "block_id": f"interrupted:{event.instance_id}", "elements": [
                {"type": "button", "action_id": f"{REQUEST_LAUNCH}_1", "style": "primary",
                 "value": launch_button_value(relaunch, duration_s),
                 "text": {"type": "plain_text", "text": f"Relaunch {relaunch.instance_type}"[:75]}}]}]


def idle_alert_blocks(alert: IdleAlert) -> list[Block]:
    """The idle alert with its buttons: Stop (a stop request), Keep 4 h (`watch.SNOOZE`), Extend TTL (an extension
    request of `watch.EXTENSION_S`)."""
    return [{"type": "section", "text": {"type": "mrkdwn", "text": idle_alert(alert)}},
            {"type": "actions", "block_id": f"idle:{alert.instance_id}", "elements": [
                {"type": "button", "action_id": IDLE_STOP, "style": "danger", "value": alert.instance_id,
                 "text": {"type": "plain_text", "text": "Stop"}},
                {"type": "button", "action_id": IDLE_KEEP, "value": alert.instance_id,
                 "text": {"type": "plain_text", "text": "Keep 4 h"}},
                {"type": "button", "action_id": IDLE_EXTEND, "value": alert.request_id,
                 "text": {"type": "plain_text", "text": f"Extend TTL {EXTENSION_S // 3600} h"}}]}]
