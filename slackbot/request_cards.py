"""The cards and lines of requests: the approval card and what a decision says, the Slack app's own acks and answers
to buttons, an error, and the posts that offer a button (an interruption's Relaunch, an idle alert's Stop, Keep and
Extend)."""

from __future__ import annotations

import datetime as dt
from typing import Sequence

from gpu_assist.facts import LaunchCloud
from gpu_assist.lifecycle.identity import slack_mention
from gpu_assist.lifecycle.records import RequestRecord
from gpu_assist.lifecycle.specs import Checks, ExtendSpec, LaunchSpec, OptionId
from gpu_assist.pricing.query import format_duration
from gpu_assist.render.money import format_money
from gpu_assist.render.notes import words
from gpu_assist.render.spend import budget_line, idle_alert, interruption_line, team_line
from gpu_assist.team.budgets import BudgetStatus
from gpu_assist.team.interruptions import Interruption
from gpu_assist.team.standing import TeamStanding
from gpu_assist.team.watch import EXTENSION_S, IdleAlert
from slackbot.block_kit import (
    APPROVE,
    IDLE_EXTEND,
    IDLE_KEEP,
    IDLE_STOP,
    REJECT,
    REQUEST_LAUNCH,
    Block,
    context_block,
    launch_button_value,
    section_block,
)


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
    blocks = [section_block(what)]
    if budgets:
        blocks.append(section_block("\n".join((f":red_circle: *{budget_line(b)}* — needs an over-budget approver"
                                           if b.over else budget_line(b)) for b in budgets)))
    if team is not None and not decided:
        blocks.append(context_block([team_line(team)]))
    if decided:
        blocks.append(context_block([decided]))
    else:
        blocks.append(context_block([f"expires {record.expires_at:%Y-%m-%d %H:%M} UTC · approvers only"]))
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
    return [section_block(f":warning: {message}")]


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


def interruption_blocks(event: Interruption, relaunch: OptionId, duration_s: int) -> list[Block]:
    """The interruption post with its Relaunch button: a Request launch of the same option for the launch's time to
    live, answered like a quote card's (`specs.launch_button_value`), so it goes through the approval path once per
    click."""
    return [section_block(interruption_line(event)),
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
