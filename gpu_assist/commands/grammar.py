"""The one command grammar: `/gpu` text, the words after a CLI verb, a notebook route's `q` → command objects.

A quote's words and the option parsers every verb shares are `quote_grammar.py`'s (exported here too); this module
reads the other verbs' words, each through the core it parses for (workload, tco, budgets, spend periods).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from ..catalog.gpus import GpuTable
from ..errors import ParseError
from ..facts import PricingModel
from ..catalog.providers import LAUNCH_PROVIDERS, cloud_of, not_launchable
from ..lifecycle.records import ENGINE_CLUSTER
from ..lifecycle.specs import OptionId
from ..plan.plans import PLAN_SORTS
from ..plan.tco import parse_tco
from ..plan.workload import parse_workload_words
from ..pricing.query_parser import normalise, parse_duration, parse_request_words
from ..team.budgets import PROJECT
from .objects import (
    CatalogCommand,
    Command,
    ExtendCommand,
    HelpCommand,
    LaunchCommand,
    RecommendCommand,
    StopCommand,
    TcoCommand,
    UtilCommand,
)
from .team_grammar import parse_commit, parse_requests, parse_spend, request_id
from .quote_grammar import (
    QUOTE_OPTIONS,
    parse_max_price,
    parse_min_gpu_memory,
    parse_quote,
    parse_sort,
    parse_top,
    take_options,
    words_of,
)

__all__ = ["QUOTE_OPTIONS", "parse_command", "parse_commit", "parse_instance_id", "parse_max_price",
           "parse_min_gpu_memory", "parse_plan_sort", "parse_quote", "parse_recommend", "parse_sort", "parse_spend",
           "parse_threshold", "parse_top", "parse_util", "parse_verb", "parse_window", "words_of"]

_HELP_WORDS = ("help", "-h", "--help", "?")


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


def parse_recommend(words: list[str], gpus: GpuTable) -> RecommendCommand:
    """A workload and `recommend`'s own words: `top=`, `explain`, `sort=cost|fastest|fewest-gpus` (a plan's
    orders, not a quote's), `spot` (plan a serving job on spot too: `interruptible=yes`) and `include-flagged`."""
    plain: list[str] = []
    sort, spot = "cost", False
    for word in words:
        key, has_value, value = word.lower().removeprefix("--").partition("=")
        if key == "sort" and has_value:
            sort = parse_plan_sort(value)
        elif key == "spot" and not has_value:
            spot = True
        else:
            plain.append(word)
    rest, options = take_options(plain)
    workload = parse_workload_words(rest, gpus)
    return RecommendCommand(workload=replace(workload, interruptible=True) if spot else workload,
                            top=options.get("top", 10), explain=options.get("explain", False), sort=sort,
                            include_flagged=options.get("include-flagged", False))


def parse_plan_sort(value: str) -> str:
    """`recommend`'s order: `cost` (the lowest expected total first), `fastest` or `fewest-gpus`."""
    value = normalise(value).strip().lower()
    if value not in PLAN_SORTS:
        raise ParseError(f"unknown sort '{value[:40]}' for recommend", hint="sort by " + ", ".join(PLAN_SORTS),
                         example="recommend train 7B tokens=1T sort=fastest")
    return value


def _parse_tco(words: list[str], gpus: GpuTable) -> TcoCommand:
    return TcoCommand(parse_tco(words, gpus))


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
    request = parse_request_words(rest, gpus)
    if len(request.providers) == 1 and not_launchable(request.providers[0]):
        raise ParseError(f"cannot launch on {request.providers[0]}: {not_launchable(request.providers[0])}",
                         hint="clouds gpu-assist launches on: " + ", ".join(LAUNCH_PROVIDERS),
                         example="launch 8xH100 24h provider=gcp")
    if len(request.providers) > 1:
        raise ParseError(f"a launch names one cloud of {', '.join(LAUNCH_PROVIDERS)}",
                         example="launch 8xV100 72h provider=tencent")
    if not set(request.pricing_models) <= {PricingModel.ON_DEMAND, PricingModel.SPOT}:
        raise ParseError("launch buys on-demand or spot", example=example)
    if not request.duration_given:
        raise ParseError("say for how long: the duration is the instance's time to live", example=example)
    request = replace(request, providers=request.providers or ("aws",),
                      pricing_models=request.pricing_models or (PricingModel.ON_DEMAND,))
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
    return ExtendCommand(request_id(ids[0], example), parse_duration(others[0], example=example))


def _parse_stop(rest: list[str], _gpus: GpuTable) -> StopCommand:
    ids = tuple(w.lower() for w in rest if not w.lower().startswith("region="))
    region = next((w.split("=", 1)[1] for w in rest if w.lower().startswith("region=")), None)
    bad = [i for i in ids if cloud_of(i) is None and not ENGINE_CLUSTER.match(i)]
    if not ids or bad:
        raise ParseError(f"'{bad[0]}' is not an instance id or a cluster gpu-assist launched" if bad
                         else "name the instances to stop",
                         example="stop i-0123456789abcdef0")
    return StopCommand(ids, region)


def _parse_catalog(words: list[str], _gpus: GpuTable) -> CatalogCommand:
    if words:
        raise ParseError(f"catalog takes no words, not '{words[0][:40]}'", example="catalog")
    return CatalogCommand()


_VERBS: dict[str, Callable[[list[str], GpuTable], Command]] = {
    "quote": parse_quote, "recommend": parse_recommend, "tco": _parse_tco, "util": parse_util,
    "launch": _parse_launch, "stop": _parse_stop, "extend": _parse_extend, "requests": parse_requests,
    "spend": parse_spend, "commit": parse_commit, "catalog": _parse_catalog,
}
