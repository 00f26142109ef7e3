"""A quote's words and the value parsers every verb's options share: `quote 8xA100 72h spot top=5 sort=price`.

Command options are words too: `top=5`, `all-regions`, `include-flagged`, `include-unverified`, `verified-only`,
`list` (the flat per-option list instead of the comparison), `sort=total|price|per-gpu|provider`,
`max-price=30` (per job-hour, in the quote's currency), `min-gpu-memory=80` (GiB per GPU). Each option's value
parser is public so that a face taking the value apart from the words (a CLI flag, a widget) gives the same
message for a bad one. The other verbs' words are `grammar.py`'s; this module is apart so that a quote, which
every face answers most, loads none of the cores those verbs parse for.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from ..catalog.gpus import GpuTable
from ..errors import ParseError
from ..pricing.amounts import parse_amount
from ..pricing.compare import SORTS
from ..pricing.job_data import take_job_data
from ..pricing.query_parser import normalise, parse_request_words
from .objects import MAX_TOP, QuoteCommand

_FLAG_OPTIONS = ("all-regions", "include-flagged", "include-unverified", "verified-only", "explain", "list")
_VALUE_OPTIONS = ("top", "sort", "max-price", "min-gpu-memory")
_JOB_DATA_WORDS = ("disk=", "data-in=", "data-out=", "checkpoints=", "from=")  # `job_data.WORDS`
# A quote's own words beside the request's, as an unknown option's error lists them.
QUOTE_OPTIONS = (*(f"{name}=" for name in _VALUE_OPTIONS), *(f for f in _FLAG_OPTIONS if f != "explain"), "explain",
                 "disk=", "data-in=", "data-out=", "checkpoints=", "from=")



def words_of(text: str) -> list[str]:
    """The grammar's words: NFKC, Chinese units and multiplication signs read (`request.normalise`), split."""
    return normalise(text).split()


def words_from(args: list[str]) -> list[str]:
    """The grammar's words from words a shell already split (the CLI's arguments): each normalised as `words_of`
    does, and split again where normalising made a space (`8卡` → `8 x`)."""
    return [word for arg in args for word in normalise(arg).split()]


def parse_quote(words: list[str], gpus: GpuTable, *, top: int | None = None) -> QuoteCommand:
    """`quote`'s words; `top` is the face's default when the words name none (`top=all` names None). The job's
    data words (`disk=2TB`, `checkpoints=140GB every 30m`, …) are taken first: `30m` is not the job's length."""
    job_data = None
    if any(word.lower().removeprefix("--").startswith(_JOB_DATA_WORDS) for word in words):
        words, job_data = take_job_data(words)
    rest, options = take_options(words)
    return QuoteCommand(
        request=parse_request_words(rest, gpus, also_known=QUOTE_OPTIONS),
        top=options.get("top", top),
        all_regions=options.get("all-regions", False),
        include_flagged=options.get("include-flagged", False),
        verified_only=options.get("verified-only", False),
        include_unverified=options.get("include-unverified", False),
        view="list" if options.get("list") else "compare",
        sort=options.get("sort", "total"),
        max_price=options.get("max-price", (None, None))[0],
        max_price_currency=options.get("max-price", (None, None))[1],
        min_gpu_memory_gib=options.get("min-gpu-memory"),
        job_data=job_data,
        explain=options.get("explain", False),
    )


def take_options(words: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Split command options (`top=5`, `--top 5`, `all-regions`, `sort=price`) from the request's own words."""
    rest: list[str] = []
    options: dict[str, Any] = {}
    remaining = iter(words)
    for word in remaining:
        lowered = word.lower()
        key = lowered[2:] if lowered.startswith("--") else lowered
        name, has_value, value = key.partition("=")
        if key in _FLAG_OPTIONS:
            options[key] = True
        elif name in _VALUE_OPTIONS and has_value:
            options[name] = value
        elif key in _VALUE_OPTIONS and lowered.startswith("--"):
            options[key] = next(remaining, "")
        else:
            rest.append(word)
    for name, parse in _OPTION_PARSERS.items():
        if name in options:
            options[name] = parse(options[name])
    return rest, options


def parse_top(value: str) -> int | None:
    """`top=5` keeps the 5 cheapest, `top=all` every one (None); 0 would show nothing and is refused."""
    value = normalise(value).strip().lower()
    if value == "all":
        return None
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= MAX_TOP:
        raise ParseError(f"top must be a number from 1 to 10000, or all; got '{value[:40]}'",
                         example="quote 8xA100 72h top=5")
    return int(value)


def parse_sort(value: str) -> str:
    value = normalise(value).strip().lower()
    if value not in SORTS:
        raise ParseError(f"unknown sort '{value[:40]}'", hint="sort by " + ", ".join(SORTS),
                         example="quote 8xA100 72h sort=price")
    return value


def parse_max_price(value: str) -> tuple[Decimal, str | None]:
    """Per job-hour: an amount as budgets and tco write them (`30`, `$30`, `¥200`, `30usd`), and the currency it
    is written in, if any; `quote_view` converts one in another currency than the quote's."""
    return parse_amount(normalise(value), example="quote 8xA100 72h max-price=30", name="max-price")


def parse_min_gpu_memory(value: str) -> float:
    """GiB per GPU: `80`, `80gb`, `80GiB`."""
    text = normalise(value).strip().lower().removesuffix("gib").removesuffix("gb")
    return float(_positive(text, "min-gpu-memory", "quote 8xA100 72h min-gpu-memory=80"))


def _positive(text: str, name: str, example: str) -> Decimal:
    try:
        value: Decimal | None = Decimal(text)
    except (InvalidOperation, ValueError):
        value = None
    if value is None or not value.is_finite() or value <= 0:
        raise ParseError(f"{name} must be a positive number, got '{text[:40]}'", example=example)
    return value


_OPTION_PARSERS: dict[str, Callable[[str], Any]] = {
    "top": parse_top, "sort": parse_sort, "max-price": parse_max_price, "min-gpu-memory": parse_min_gpu_memory}
