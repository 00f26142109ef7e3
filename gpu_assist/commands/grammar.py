"""The one command grammar: `/gpu` text, the words after a CLI verb, a notebook route's `q` → command objects.

Command options are words too: `top=5`, `all-regions`, `include-flagged`, `include-unverified`, `verified-only`,
`list` (the flat per-option list instead of the comparison), `sort=total|price|per-gpu|provider`,
`max-price=30` (per job-hour, in the quote's currency), `min-gpu-memory=80` (GiB per GPU). Each option's value
parser is public so that a face taking the value apart from the words (a CLI flag, a widget) gives the same
message for a bad one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from ..compare import SORTS
from ..errors import ParseError
from ..facts import PricingModel
from ..gpus import GpuTable
from ..request import normalise, parse_duration, parse_request
from .objects import (MAX_TOP, Command, CommitCommand, ExtendCommand, HelpCommand, LaunchCommand, QuoteCommand,
                      RecommendCommand, RequestsCommand, SpendCommand, StopCommand, TcoCommand, UtilCommand)

_FLAG_OPTIONS = ("all-regions", "include-flagged", "include-unverified", "verified-only", "explain", "list")
_VALUE_OPTIONS = ("top", "sort", "max-price", "min-gpu-memory")
_HELP_WORDS = ("help", "-h", "--help", "?")
_JOB_DATA_WORDS = ("disk=", "data-in=", "data-out=", "checkpoints=", "from=")  # `job_data.WORDS` (#33)
# A quote's own words beside the request's, as an unknown option's error lists them.
QUOTE_OPTIONS = (*(f"{name}=" for name in _VALUE_OPTIONS), *(f for f in _FLAG_OPTIONS if f != "explain"), "explain",
                 "disk=", "data-in=", "data-out=", "checkpoints=", "from=")


def words_of(text: str) -> list[str]:
    """The grammar's words: NFKC, Chinese units and multiplication signs read (`request.normalise`), split."""
    return normalise(text).split()


def parse_command(text: str, gpus: GpuTable) -> Command:
    """Text → command object; ParseError for anything else."""
    words = words_of(text) if isinstance(text, str) else []
    if not words or words[0].lower() in _HELP_WORDS:
        return HelpCommand()
    return parse_verb(words[0].lower(), words[1:], gpus)


def parse_verb(verb: str, words: list[str], gpus: GpuTable) -> Command:
    """The words after `verb` → its command object."""
    parse = _VERBS.get(verb)
    if parse is None:
        raise ParseError(f"unknown command '{verb}'", hint="commands: quote, recommend, tco, spend, commit, help",
                         example="quote 8xA100 72h")
    return parse(words, gpus)


def parse_quote(words: list[str], gpus: GpuTable, *, top: int | None = None) -> QuoteCommand:
    """`quote`'s words; `top` is the face's default when the words name none (`top=all` names None). The job's
    data words (`disk=2TB`, `checkpoints=140GB every 30m`, …) are taken first: `30m` is not the job's length."""
    job_data = None
    if any(word.lower().removeprefix("--").startswith(_JOB_DATA_WORDS) for word in words):
        from ..job_data import take_job_data  # only where a quote names its data (a plain quote loads none)

        words, job_data = take_job_data(words)
    rest, options = _take_options(words)
    return QuoteCommand(
        request=parse_request(" ".join(rest), gpus, also_known=QUOTE_OPTIONS),
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


def parse_recommend(words: list[str], gpus: GpuTable) -> RecommendCommand:
    from ..workload import parse_workload  # each verb imports the core it parses for (a quote loads no workload)

    rest, options = _take_options(words)
    return RecommendCommand(workload=parse_workload(" ".join(rest), gpus), top=options.get("top", 10),
                            explain=options.get("explain", False))


def _take_options(words: list[str]) -> tuple[list[str], dict[str, Any]]:
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
    from ..amounts import parse_amount  # imported only when a max-price is given

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


def _parse_tco(words: list[str], gpus: GpuTable) -> TcoCommand:
    from ..tco import parse_tco

    return TcoCommand(parse_tco(" ".join(words), gpus))


def parse_window(value: str) -> int:
    """`util`'s averaging window for idle detection, in seconds."""
    return parse_duration(value, example="util fleet window=30m")


def parse_threshold(value: str) -> float:
    """`util`'s idle threshold: an average GPU use in percent, above 0 and at most 100."""
    try:
        threshold = float(value.strip().rstrip("%"))
    except ValueError:
        raise ParseError(f"threshold must be a percentage, not '{value}'",
                         example="util fleet threshold=10") from None
    if not 0 < threshold <= 100:
        raise ParseError("threshold must be between 0 and 100", example="util fleet threshold=10")
    return threshold


def parse_instance_id(value: str) -> str:
    """An EC2 instance id given apart from the words (`util --instance`)."""
    lowered = value.strip().lower()
    if not lowered.startswith("i-"):
        raise ParseError(f"'{value[:40]}' is not an instance id", example="util fleet i-0123456789abcdef0")
    return lowered


def parse_util(words: list[str], _gpus: GpuTable | None = None) -> UtilCommand:
    values: dict[str, Any] = {}
    ids = []
    for word in words:
        lowered = word.lower()
        key, _, value = lowered.partition("=")
        if lowered in ("fleet", "--fleet", "cloud", "aws"):
            values["fleet"] = True
        elif lowered.startswith("i-"):
            values["fleet"] = True
            ids.append(lowered)
        elif key == "region" and value:
            values.update(fleet=True, region=value)
        elif key == "window" and value:
            values["window_s"] = parse_window(value)
        elif key == "threshold" and value:
            values["threshold_pct"] = parse_threshold(value)
        else:
            raise ParseError(f"didn't understand '{word}'", hint="util [fleet] [region=…] [window=30m] "
                             "[threshold=10] [i-…]", example="util fleet region=us-east-1")
    return UtilCommand(instance_ids=tuple(ids), **values)


def _parse_launch(words: list[str], gpus: GpuTable) -> LaunchCommand:
    """`launch 8xA100 72h spot region=… project=…` (on-demand unless spot is said; the duration is the time to
    live, so it must be said), or `launch aws:p4d.24xlarge:us-east-1:spot 72h`."""
    from ..budgets import PROJECT
    from ..specs import OptionId

    example = "launch 8xA100 72h spot region=us-east-1"
    projects = [w.split("=", 1)[1] for w in words if w.lower().startswith("project=")]
    rest = [w for w in words if not w.lower().startswith("project=")]
    if not rest:
        raise ParseError("say what to launch", example=example)
    if len(projects) > 1 or (projects and not PROJECT.match(projects[0])):
        raise ParseError(f"project '{projects[-1]}' must be one word of letters, digits and _.:/+=@- (at most 64)",
                         example="launch 8xA100 72h project=vision")
    project = projects[0] if projects else None
    option = OptionId.parse(rest[0])
    if option is not None:
        if len(rest) != 2:
            raise ParseError("say for how long, and nothing else", example=f"launch {option} 72h")
        return LaunchCommand(option, parse_duration(rest[1], example=f"launch {option} 72h"), project)
    request = parse_request(" ".join(rest), gpus)
    if set(request.providers) - {"aws"}:
        raise ParseError("gpu-assist launches on AWS only", example=example)
    if not set(request.pricing_models) <= {PricingModel.ON_DEMAND, PricingModel.SPOT}:
        raise ParseError("launch buys on-demand or spot", example=example)
    if not request.duration_given:
        raise ParseError("say for how long: the duration is the instance's time to live", example=example)
    request = replace(request, providers=("aws",), pricing_models=request.pricing_models or (PricingModel.ON_DEMAND,))
    return LaunchCommand(request, request.duration_s, project)


def _parse_extend(words: list[str], _gpus: GpuTable) -> ExtendCommand:
    """`extend r-… 24h`: which launch request, and how much longer (a duration of the grammar)."""
    example = "extend r-0123456789ab 24h"
    ids = [w.lower() for w in words if w.lower().startswith("r-")]
    others = [w for w in words if not w.lower().startswith("r-")]
    if len(ids) != 1 or len(others) != 1:
        raise ParseError("say which launch request and how much longer", example=example)
    if others[0].startswith("-"):
        raise ParseError(f"'{others[0]}': an extension is positive", example=example)
    return ExtendCommand(_request_id(ids[0], example), parse_duration(others[0], example=example))


def _request_id(word: str, example: str) -> str:
    """A request id as `Store.new_id` makes them (`r-` and 12 hex digits), lower-cased; else ParseError."""
    from ..records import REQUEST_ID

    if not REQUEST_ID.match(word.lower()):
        raise ParseError(f"'{word[:40]}' is not a request id", hint="request ids look like r-0123456789ab "
                         "(`requests` lists the recent ones)", example=example)
    return word.lower()


def _parse_stop(rest: list[str], _gpus: GpuTable) -> StopCommand:
    from ..aws import INSTANCE_ID

    ids = tuple(w.lower() for w in rest if not w.lower().startswith("region="))
    region = next((w.split("=", 1)[1] for w in rest if w.lower().startswith("region=")), None)
    bad = [i for i in ids if not INSTANCE_ID.match(i)]
    if not ids or bad:
        raise ParseError(f"'{bad[0]}' is not an instance id" if bad else "name the instances to stop",
                         example="stop i-0123456789abcdef0")
    return StopCommand(ids, region)


def _parse_requests(rest: list[str], _gpus: GpuTable) -> RequestsCommand:
    example = "requests r-0123456789ab"
    if len(rest) > 1:
        raise ParseError("requests takes nothing or one request id", example=example)
    return RequestsCommand(_request_id(rest[0], example) if rest else None)


def parse_spend(words: list[str], _gpus: GpuTable | None = None) -> SpendCommand:
    """`spend [period] [by=group] [source=aws]`; the period is checked here, against a fixed date, for its form."""
    from ..spending import GROUPS, PERIOD_EXAMPLE, parse_period

    values: dict[str, str] = {}
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
            parse_period(key, dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
            values["period"] = key
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


_VERBS: dict[str, Callable[[list[str], GpuTable], Command]] = {
    "quote": parse_quote, "recommend": parse_recommend, "tco": _parse_tco, "util": parse_util,
    "launch": _parse_launch, "stop": _parse_stop, "extend": _parse_extend, "requests": _parse_requests,
    "spend": parse_spend, "commit": parse_commit,
}
