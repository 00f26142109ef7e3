"""The words of the verbs that read the team's store: `requests [r-…]`, `spend [period] [by=group] [source=aws]`,
`commit [months=N]`. Apart from `grammar.py` (which takes them into its verbs), so that the CLI's store verbs read
their words without loading the rest of the grammar or the catalog: none of them names a GPU."""

from __future__ import annotations

from typing import Any

from ..catalog.gpus import GpuTable
from ..errors import ParseError
from ..lifecycle.records import REQUEST_ID
from ..team.periods import PERIOD_EXAMPLE, parse_period
from ..team.spending import GROUPS
from .objects import CommitCommand, RequestsCommand, SpendCommand


def request_id(word: str, example: str) -> str:
    """A request id as `Store.new_id` makes them (`r-` and 12 hex digits), lower-cased; else ParseError."""
    if not REQUEST_ID.match(word.lower()):
        raise ParseError(f"'{word[:40]}' is not a request id", hint="request ids look like r-0123456789ab "
                         "(`requests` lists the recent ones)", example=example)
    return word.lower()


def parse_requests(rest: list[str], _gpus: GpuTable | None = None) -> RequestsCommand:
    example = "requests r-0123456789ab"
    if len(rest) > 1:
        raise ParseError("requests takes nothing or one request id", example=example)
    return RequestsCommand(request_id(rest[0], example) if rest else None)


def parse_spend(words: list[str], _gpus: GpuTable | None = None) -> SpendCommand:
    """`spend [period] [by=group] [source=aws]`: the period read once, here, for a clock to place when it runs."""
    values: dict[str, Any] = {}
    for word in words:
        key, has_value, value = word.lower().partition("=")
        if key == "by" and value in GROUPS:
            values["by"] = value
        elif key == "by":
            raise ParseError(f"cannot group spend by '{value[:40]}'", hint="by=" + ", by=".join(GROUPS),
                             example="spend mtd by=project")
        elif key == "source" and value in ("aws", "records"):
            values["source"] = value
        elif key == "source":
            raise ParseError(f"unknown spend source '{value[:40]}'", hint="source=records (default) or source=aws",
                             example="spend 7d source=aws")
        elif not has_value and "period" not in values:
            values["period"] = parse_period(key)
        else:
            raise ParseError(f"didn't understand '{word[:40]}'", hint="spend [period] [by=group] [source=aws]",
                             example=PERIOD_EXAMPLE)
    return SpendCommand(**values)


def parse_commit(words: list[str], _gpus: GpuTable | None = None) -> CommitCommand:
    """`commit [months=N]`: N whole months of history, 1 to 36 (default 3)."""
    months = 3
    for word in words:
        key, _, value = word.lower().partition("=")
        if key == "months" and value.isdigit() and 1 <= int(value) <= 36:
            months = int(value)
        else:
            raise ParseError(f"didn't understand '{word[:40]}'", hint="commit [months=N], N from 1 to 36",
                             example="commit months=6")
    return CommitCommand(months)
