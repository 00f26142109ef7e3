"""The parts of Slack's Block Kit every card is made of: the action ids the listeners answer, Slack's size limits, a
section, a context block, monospaced text, and the Request launch button's value (a quote card's and a Relaunch's)."""

from __future__ import annotations

import json
from typing import Any

from gpu_assist.errors import ParseError
from gpu_assist.lifecycle.specs import OptionId
from gpu_assist.pricing.query import is_duration_s

Block = dict[str, Any]  # one Block Kit block, as Slack's Web API takes it
Launches = tuple[str, ...]  # the clouds whose quote rows get a Request launch button (the policy's allowed ones)

APPROVE = "approve_request"
REJECT = "reject_request"
REQUEST_LAUNCH = "request_launch"
REQUEST_STOP = "request_stop"
QUOTE_MORE = "quote_more"
IDLE_STOP, IDLE_KEEP, IDLE_EXTEND = "idle_stop", "idle_keep", "idle_extend"  # the idle alert's buttons
SECTION_LIMIT = 2900  # Slack allows 3000 characters of text in a section
VALUE_LIMIT = 2000  # Slack allows 2000 characters in a button's value


def section_block(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_LIMIT]}}


def context_block(lines: list[str]) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": line[:2900]} for line in lines[:10]]}


def monospaced(text: str) -> str:
    """`text` as a code block, cut to fit a section."""
    return "```" + text[: SECTION_LIMIT - 6] + "```"


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
