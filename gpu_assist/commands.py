"""One command grammar for every face: `quote 8xA100 72h spot top=5`, `help`.

The Slack text after `/gpu`, the CLI's arguments and the Jupyter widgets' inputs all become
the command objects below and run through `run()`, so every face gives the same numbers.
Command options are words too: `top=5`, `all-regions`, `include-flagged`, `verified-only`.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from typing import Callable

from .catalog import Catalog, load_catalog
from .errors import ParseError
from .pricing import Quote, quote
from .recommend import Recommendation, recommend
from .request import Request, normalise, parse_request
from .tco import TcoInput, TcoResult, parse_tco, total_cost_of_ownership
from .workload import Workload, parse_workload

HELP = """\
gpu-assist — GPU prices across clouds, for the whole job.

  quote 8xA100 72h                       every way to rent 8 A100s for 72 hours, cheapest first
  quote 4xA100-80GB 2d spot              spot only
  quote A100:8 3d region=us-east-1       one region (or a group: region=us, eu, asia, cn)
  quote 2×H100 1w provider=aws,gcp       some providers only
  quote 8卡A100 72小时 currency=CNY         Chinese works too; prices in CNY
  quote 8xH100 1mo pricing=reserved-1y,monthly top=5 all-regions include-flagged verified-only

  recommend train 7B tokens=20B deadline=72h budget=$5000     cheapest plan that meets the deadline
  recommend finetune 70B lora                                 which GPUs fit, priced per hour
  recommend serve 70B fp8 users=50                            serving for a month, tokens/s per user
  recommend train 175B bf16 deadline=2w region=cn             only Chinese regions
  recommend train 7B gpu_hours=576@A100 own=2xRTX3090 mfu=0.35 explain

  tco 1xA100 hardware=100k facility=20k power=15k ops=50k currency=CNY usage=200h/mo cloud=12

  help                                   this text
"""

_FLAG_OPTIONS = ("all-regions", "include-flagged", "verified-only", "explain")


@dataclass(frozen=True)
class QuoteCommand:
    request: Request
    top: int | None = None
    all_regions: bool = False
    include_flagged: bool = False
    verified_only: bool = False


@dataclass(frozen=True)
class RecommendCommand:
    workload: Workload
    top: int = 10
    explain: bool = False


@dataclass(frozen=True)
class TcoCommand:
    inputs: TcoInput


@dataclass(frozen=True)
class HelpCommand:
    text: str = HELP


Command = QuoteCommand | RecommendCommand | TcoCommand | HelpCommand
Result = Quote | Recommendation | TcoResult | HelpCommand


@dataclass
class Context:
    """What commands need from outside: the catalog (loaded once, lazily), today's date, defaults."""

    catalog_loader: Callable[[], Catalog] = load_catalog
    today: Callable[[], dt.date] = dt.date.today
    currency: str = field(default_factory=lambda: os.environ.get("GPU_ASSIST_CURRENCY", "USD").upper())
    _catalog: Catalog | None = None

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = self.catalog_loader()
        return self._catalog


def _take_options(words: list[str]) -> tuple[list[str], dict]:
    """Split command options (`top=5`, `--top 5`, `all-regions`) from the request's own words."""
    rest, options = [], {}
    words = iter(words)
    for word in words:
        lowered = word.lower()
        key = lowered[2:] if lowered.startswith("--") else lowered
        if key in _FLAG_OPTIONS:
            options[key] = True
        elif key == "top" and lowered.startswith("--"):
            options["top"] = next(words, "")
        elif key.startswith("top="):
            options["top"] = key.partition("=")[2]
        else:
            rest.append(word)
    if "top" in options:
        value = options["top"]
        if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= 10_000:
            raise ParseError(f"top must be a number from 1 to 10000, got '{value}'", example="quote 8xA100 72h top=5")
        options["top"] = int(value)
    return rest, options


def parse_command(text: str, gpus) -> Command:
    """Text → command object; ParseError for anything else."""
    words = normalise(text).split() if isinstance(text, str) else []
    if not words or words[0].lower() in ("help", "-h", "--help", "?"):
        return HelpCommand()
    verb, rest = words[0].lower(), words[1:]
    if verb == "quote":
        rest, options = _take_options(rest)
        return QuoteCommand(
            request=parse_request(" ".join(rest), gpus),
            top=options.get("top"),
            all_regions=options.get("all-regions", False),
            include_flagged=options.get("include-flagged", False),
            verified_only=options.get("verified-only", False),
        )
    if verb == "recommend":
        rest, options = _take_options(rest)
        return RecommendCommand(workload=parse_workload(" ".join(rest), gpus), top=options.get("top", 10),
                                explain=options.get("explain", False))
    if verb == "tco":
        return TcoCommand(parse_tco(" ".join(rest), gpus))
    raise ParseError(f"unknown command '{verb}'", hint="commands: quote, recommend, tco, help",
                     example="quote 8xA100 72h")


def run(command: Command, context: Context) -> Result:
    """Execute a parsed command against the context; results are rendered by `render/`."""
    if isinstance(command, QuoteCommand):
        return quote(command.request, context.catalog, today=context.today(), currency=context.currency,
                     top=command.top, all_regions=command.all_regions, include_flagged=command.include_flagged,
                     verified_only=command.verified_only)
    if isinstance(command, RecommendCommand):
        return recommend(command.workload, context.catalog, today=context.today(), currency=context.currency,
                         top=command.top)
    if isinstance(command, TcoCommand):
        return total_cost_of_ownership(command.inputs, context.catalog)
    return command
