"""`gpu-assist …`: the command-line face. Errors exit 2 with one line, never a traceback."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

from .errors import CatalogError, GpuAssistError, ParseError
from .plural import plural

EXIT_USER_ERROR = 2
EXIT_NOTHING_TO_WATCH = 1
# Killed by SIGPIPE, as a shell reports it for `yes | head -1`.
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
# A word argparse would take for an option although it is a (negative) duration or count: `-5h`, `-8xA100`.
_NEGATIVE_WORD_RE = re.compile(r"^-\d")


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments as one line, like every other user error."""

    def error(self, message: str):
        raise GpuAssistError(f"{self.prog}: {message}", hint=f"see '{self.prog} --help'")

    def format_help(self) -> str:
        """An epilog may be a function, called only when help is shown: building the parser imports nothing."""
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


class _Version(argparse.Action):
    """`--version`, read from the installed package's metadata only when asked (not on every start)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"gpu-assist {version('gpu-assist')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            print("gpu-assist (version unknown: not installed)")
        parser.exit()


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpu-assist", description="GPU prices, plans and utilization across clouds.")
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    q = commands.add_parser("quote", help="price a GPU job: gpu-assist quote 8xA100 72h")
    q.add_argument("words", nargs="+", help="the request, e.g. 8xA100 72h spot region=us-east-1")
    q.add_argument("--top", help="show the N cheapest offers, or all (default 15; JSON: all)")
    q.add_argument("--list", action="store_true", help="every option as a flat list, not the comparison")
    q.add_argument("--sort", help="total (default), price (per job-hour), per-gpu, provider")
    q.add_argument("--max-price", help="at most this much per hour for the whole job, e.g. 30")
    q.add_argument("--min-gpu-memory", help="GPUs with at least this many GiB, e.g. 80")
    q.add_argument("--include-unverified", action="store_true", help="rank unverified and stale prices too")
    q.add_argument("--provider", action="append", default=[],
                   help="aws, gcp, azure, lambda, oci, nebius, vast, … (see README)")
    q.add_argument("--region", action="append", default=[], help="a region or a group (us, eu, asia, cn)")
    q.add_argument("--pricing", help="on-demand,spot,reserved-1y,reserved-3y,monthly")
    q.add_argument("--currency", help="USD or CNY")
    q.add_argument("--all-regions", action="store_true", help="every region, not only the cheapest per offer")
    q.add_argument("--include-flagged", action="store_true", help="include prices with known data defects")
    q.add_argument("--verified-only", action="store_true", help="leave out unverified list prices")
    q.add_argument("--format", choices=("text", "json", "csv", "markdown"), default="text")

    r = commands.add_parser("recommend", help="plan a workload: gpu-assist recommend train 7B tokens=20B deadline=72h")
    r.add_argument("words", nargs="+", help="the workload, e.g. finetune 70B lora budget=$2000")
    r.add_argument("--top", help="show the N cheapest feasible plans, or all (default 10)")
    r.add_argument("--explain", action="store_true", help="print every formula and assumption used")
    r.add_argument("--format", choices=("text", "json", "csv", "markdown"), default="text")

    t = commands.add_parser("tco", help="buy or rent: gpu-assist tco 1xA100 hardware=100k ops=50k currency=CNY",
                            epilog=_tco_keys,  # type: ignore[arg-type]  # called by the parser when help is shown
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("words", nargs="+", help="GPUs and key=value options (below), e.g. 1xA100 hardware=100k")
    t.add_argument("--format", choices=("text", "json"), default="text")

    u = commands.add_parser("util", help="GPU utilization: this machine (NVML), or the fleet (--fleet, CloudWatch)")
    u.add_argument("--fleet", action="store_true", help="gpu-assist's AWS instances, from CloudWatch")
    u.add_argument("--region", help="AWS region of the fleet")
    u.add_argument("--window", help="averaging window for idle detection (default 30m)")
    u.add_argument("--threshold", help="idle below this average GPU utilisation, percent (default 10)")
    u.add_argument("--instance", action="append", default=[], help="these instance ids instead of the tagged ones")
    u.add_argument("--watch", action="store_true", help="refresh every --interval seconds until Ctrl-C")
    u.add_argument("--interval", type=float, default=1.0)
    u.add_argument("--format", choices=("text", "json"), default="text")

    for verb, help_text in (("launch", "ask to launch: gpu-assist launch 8xA100 72h spot --as alice"),
                            ("stop", "ask to stop instances gpu-assist launched: gpu-assist stop i-… --as alice"),
                            ("extend", "ask to move a running launch's time to live: gpu-assist extend r-… 24h")):
        p = commands.add_parser(verb, help=help_text)
        p.add_argument("words", nargs="+")
        p.add_argument("--as", dest="actor", help="who asks (default GPU_ASSIST_USER, else your login); recorded as "
                       "unauthenticated:NAME, which can never approve")
        p.add_argument("--format", choices=("text", "json"), default="text")
    s = commands.add_parser("spend", help="what gpu-assist's launches cost: gpu-assist spend 2026-11 by=project")
    s.add_argument("words", nargs="*", help="a period (mtd, 2026-11, 7d, yesterday), by=requester|project|"
                   "instance-type|pricing, source=aws")
    s.add_argument("--format", choices=("text", "json"), default="text")
    for verb in ("approve", "reject"):
        p = commands.add_parser(verb, help=f"operators only: {verb} with --break-glass (approvers decide in Slack "
                                "or Jupyter)")
        p.add_argument("request_id")
        p.add_argument("--break-glass", action="store_true",
                       help="override as this shell's login, audited; needs break_glass = true in the policy")
        p.add_argument("--reason", default="", help="why (required with --break-glass)")
        p.add_argument("--format", choices=("text", "json"), default="text")
    q = commands.add_parser("requests", help="recent requests, or one with its audit trail: requests show r-…")
    q.add_argument("words", nargs="*", help="list | show ID")
    q.add_argument("--format", choices=("text", "json"), default="text")
    db = commands.add_parser("db", help="the request store's schema: db upgrade | db current")
    db_commands = db.add_subparsers(dest="db_command", required=True, parser_class=_Parser)
    db_commands.add_parser("upgrade", help="create or upgrade the schema to the newest migration (idempotent)")
    db_commands.add_parser("current", help="the store's schema revision and the newest one known")
    commands.add_parser("reconcile", help="finish requests a crash left half-done (no second launch)")
    commands.add_parser("reap", help="stop launches whose approved duration is over")
    commands.add_parser("expire", help="expire pending requests past their deadline")

    sl = commands.add_parser("slack", help="run the Slack app")
    slack = sl.add_subparsers(dest="slack_command", required=True, parser_class=_Parser)
    sv = slack.add_parser("serve", help="HTTP server for Slack's events (waitress; gunicorn with --workers N)")
    sv.add_argument("--host", default="0.0.0.0")
    sv.add_argument("--port", type=int, default=3000)
    sv.add_argument("--threads", type=int, default=16, help="request threads per process")
    sv.add_argument("--workers", type=int, default=1,
                    help="processes: 1 serves on waitress; more run under gunicorn's pre-fork master")
    sv.add_argument("--no-jobs", action="store_true", help="do not run expire/reap/reconcile in this process")
    slack.add_parser("socket", help="connect over Socket Mode (SLACK_APP_TOKEN)")

    commands.add_parser("help", help="examples of every command")

    c = commands.add_parser("catalog", help="validate, list and import catalogs")
    cat = c.add_subparsers(dest="catalog_command", required=True, parser_class=_Parser)
    v = cat.add_parser("validate", help="report every defect with file and line")
    v.add_argument("directory", nargs="?", type=Path)
    g = cat.add_parser("list-gpus", help="the GPUs known and where they are offered")
    g.add_argument("--format", choices=("text", "json"), default="text")
    s = cat.add_parser("status", help="offers, age and flagged rows per provider")
    s.add_argument("--format", choices=("text", "json"), default="text")
    i = cat.add_parser("import-skypilot", help="convert SkyPilot catalog extracts into catalogs/")
    i.add_argument("path", type=Path, help="directory of the extracts (catalogs/sources: <provider>_gpu.csv, "
                                          "aws_reserved_3y_allupfront.csv, gcp_cud.csv)")
    i.add_argument("--as-of", required=True, help="date of the extract, YYYY-MM-DD")
    i.add_argument("--catalog-dir", type=Path)
    rf = cat.add_parser("refresh",
                        help="fetch fresh prices: aws (account APIs); aws-public, azure or skypilot "
                             "(public price lists, no account)")
    rf.add_argument("provider", choices=("aws", "aws-public", "azure", "skypilot"))
    rf.add_argument("--commit", help="skypilot: the skypilot-catalog commit to download (40 hex digits)")
    rf.add_argument("--providers", help="skypilot: which clouds (default: all 17)")
    rf.add_argument("--regions", help="comma-separated (default: AWS_REGION or us-east-1)")
    rf.add_argument("--families", help="instance families, e.g. p4d,p5,g6e (default p*, g*)")
    rf.add_argument("--catalog-dir", type=Path)
    f = cat.add_parser("import-fx", help="write fx.csv from the ECB reference rates")
    f.add_argument("--catalog-dir", type=Path)
    return parser


def _tco_keys() -> str:
    """The keys `tco` reads, for `tco --help`, within 100 columns."""
    import textwrap

    from .tco import EXAMPLE, OPTIONS

    width = max(len(key) for key in OPTIONS) + 1
    lines = ["keys:"]
    for key, meaning in OPTIONS.items():
        lines += textwrap.wrap(meaning, 100, initial_indent=f"  {key + '=':<{width}}  ",
                               subsequent_indent=" " * (width + 4))
    return "\n".join([*lines, "example:", f"  gpu-assist {EXAMPLE}"])


def _parse_args(parser: argparse.ArgumentParser, argv: list[str] | None):
    """argparse, except that `-5h` or `-8xA100` reach the command grammar (which says what is wrong with
    them) instead of being refused as unknown options."""
    args, extra = parser.parse_known_args(argv)
    negative = [word for word in extra if _NEGATIVE_WORD_RE.match(word)]
    if negative and hasattr(args, "words") and len(negative) == len(extra):
        args.words = [*args.words, *negative]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _command_text(args) -> str:
    """The CLI's arguments as the shared command grammar, so every face runs the same words."""
    words = list(getattr(args, "words", []))
    if args.command == "requests" and words[:1] in (["list"], ["show"]):
        words = words[1:]
    if args.command == "util":
        words += ["fleet"] if args.fleet else []
        words += [f"{key}={getattr(args, key)}" for key in ("region", "window", "threshold") if getattr(args, key)]
        words += args.instance
        return "util " + " ".join(words)
    for provider in getattr(args, "provider", []):
        words.append(f"provider={provider}")
    for region in getattr(args, "region", []):
        words.append(f"region={region}")
    for key in ("pricing", "currency", "top", "sort", "max-price", "min-gpu-memory"):
        if getattr(args, key.replace("-", "_"), None) is not None:
            words.append(f"{key}={getattr(args, key.replace('-', '_'))}")
    words += [f"--{flag}" for flag in ("all-regions", "include-flagged", "include-unverified", "verified-only",
                                       "explain", "list") if getattr(args, flag.replace("-", "_"), False)]
    if getattr(args, "format", "text") == "json" and args.command == "quote":
        words.append("list")  # JSON is the flat list of options (each names its comparison row)
    return f"{args.command} " + " ".join(words)


def _command(args) -> int:
    from .commands import Context, QuoteCommand, RecommendCommand, parse_command, run
    from .render import csv as render_csv, json as render_json, markdown as render_markdown, text as render_text

    context = Context()
    command = parse_command(_command_text(args), context.catalog.gpus)
    output = getattr(args, "format", "text")
    words = getattr(args, "words", [])
    asked_top = getattr(args, "top", None) is not None or any(w.lower().startswith("top=") for w in words)
    if isinstance(command, QuoteCommand) and output != "json" and not asked_top:
        command = dataclasses.replace(command, top=15)
    explain = isinstance(command, RecommendCommand) and command.explain
    renderer = {"json": render_json, "csv": render_csv, "markdown": render_markdown}.get(output, render_text)
    options = {"color": sys.stdout.isatty()} if renderer is render_text else {}
    while True:
        result = run(command, context, actor=_actor(args))
        if not getattr(args, "watch", False):
            print(renderer.render(result, explain=explain, **options))
            _say_why_empty(result, output)
            return 0
        if _nothing_to_watch(result):
            print(f"{render_text.render(result)}: nothing to watch", file=sys.stderr)
            return EXIT_NOTHING_TO_WATCH
        print("\x1b[H\x1b[2J" + renderer.render(result, **options), flush=True)  # clear the screen, redraw
        time.sleep(max(0.1, args.interval))


def _say_why_empty(result, output: str) -> None:
    """A machine-readable answer with no options still tells the person why, on stderr (the text view says it)."""
    quote = getattr(result, "quote", result)
    reason = getattr(quote, "empty_reason", None)
    if output != "text" and reason and not quote.options:
        print(f"no options: {reason}", file=sys.stderr)


def _nothing_to_watch(result) -> bool:
    """A machine without GPUs will not grow one while we redraw: `util --watch` says so and stops."""
    from .utilization import Snapshot

    return isinstance(result, Snapshot) and not result.gpus


def _catalog(args) -> int:
    from .catalog import default_catalog_dir

    directory = getattr(args, "catalog_dir", None) or getattr(args, "directory", None) or default_catalog_dir()
    if args.catalog_command == "validate":
        from .catalog import source_disagreements, validate_directory

        _require_directory(directory, "catalog directory", "gpu-assist catalog validate catalogs")
        defects = validate_directory(directory)
        for defect in defects:
            print(defect)
        print(f"{directory}: {plural(len(defects), 'defect')}" if defects else f"{directory}: OK")
        if defects:
            return 1
        disagreements = source_disagreements(directory)
        if disagreements:
            print(f"{plural(len(disagreements), 'offer')} where two sources disagree (kept, labelled in quotes):")
            print("\n".join(f"  {line}" for line in disagreements))
        return 0
    if args.catalog_command == "import-skypilot":
        from .gpus import load_gpus
        from .importers.committed import WithCommittedPrices
        from .importers.skypilot import EXTRACTS, SkyPilotSource
        from .sources import refresh

        _check_as_of(args.as_of)
        example = "gpu-assist catalog import-skypilot catalogs/sources --as-of 2026-12-02"
        _require_directory(args.path, "SkyPilot extract folder", example)
        for extract in EXTRACTS.values():
            _require_file(args.path / extract.file, f"the extract {extract.file}", example)
        gpus = load_gpus(directory / "gpus.csv")
        for provider in EXTRACTS:
            source = WithCommittedPrices(SkyPilotSource(provider, args.path, gpus, args.as_of), args.path)
            print(refresh(source, directory).summary())
        return 0
    if args.catalog_command == "refresh" and args.provider in ("aws-public", "azure", "skypilot"):
        return _refresh_public(args, directory)
    if args.catalog_command == "refresh":
        from .aws import default_region
        from .gpus import load_gpus
        from .importers.aws_api import DEFAULT_FAMILIES, AwsPriceSource
        from .sources import refresh

        regions = [r for r in (args.regions or default_region()).split(",") if r]
        families = tuple(f for f in (args.families or ",".join(DEFAULT_FAMILIES)).split(",") if f)
        aws = AwsPriceSource(regions, load_gpus(directory / "gpus.csv"), families=families, today=dt.date.today())
        try:
            print(refresh(aws, directory).summary())
        except GpuAssistError:
            raise
        except Exception as error:  # noqa: BLE001 - botocore's failures, as one line; the old file stays
            from .aws import explain

            raise explain(error, "refreshing AWS prices (the previous catalog is unchanged)") from None
        return 0
    if args.catalog_command == "import-fx":
        from .importers.ecb import write_fx

        print(write_fx(directory / "fx.csv"))
        return 0
    from .catalog import load_catalog
    from .catalog_report import billing_footnote, gpu_summary, provider_status

    catalog = load_catalog(directory)
    frame = gpu_summary(catalog) if args.catalog_command == "list-gpus" else provider_status(catalog, dt.date.today())
    if args.format == "json":
        print(json.dumps(frame.to_dict(orient="records"), ensure_ascii=False, indent=2, default=str))
    else:
        from .render.comparison import wrap
        from .render.text import table

        shown = frame.drop(columns=["billing"]) if "billing" in frame else frame
        print(table(list(shown.columns), [[str(v) for v in row] for row in shown.itertuples(index=False)]))
        if "billing" in frame:
            print("\n".join(wrap(billing_footnote(frame))))
    return 0


def _refresh_public(args, directory: Path) -> int:
    """`catalog refresh azure|skypilot`: public price lists, no account; the catalog is unchanged on failure."""
    import re

    from .importers import public
    from .sources import refresh

    today = dt.date.today()
    if args.provider == "aws-public":
        return _refresh_aws_public(args, directory, today)
    if args.provider == "azure":
        print(refresh(public.AzureRetailSource(directory, today), directory).summary())
        return 0
    if not args.commit or not re.fullmatch(r"[0-9a-f]{40}", args.commit):
        raise GpuAssistError("refresh skypilot needs --commit with a full 40-digit commit hash",
                             hint="example: gpu-assist catalog refresh skypilot --commit "
                                  "00148f2af3672e2229b4f7bf8157d5a3f36e3c35 --providers aws")
    providers = [p for p in (args.providers or ",".join(public.SKYPILOT_PATHS)).split(",") if p]
    unknown = [p for p in providers if p not in public.SKYPILOT_PATHS]
    if unknown:
        raise GpuAssistError(f"unknown SkyPilot cloud '{unknown[0]}'",
                             hint="known: " + ", ".join(public.SKYPILOT_PATHS))
    for line in public.refresh_skypilot(args.commit, providers, directory, today):
        print(line)
    return 0


def _refresh_aws_public(args, directory: Path, today: dt.date) -> int:
    """`catalog refresh aws-public`: the public EC2 and Savings Plans price list files of some regions."""
    from .aws import default_region
    from .importers import aws_public, public
    from .sources import refresh

    stray = next((flag for flag, value in (("--commit", args.commit), ("--providers", args.providers),
                                           ("--families", args.families)) if value), None)
    if stray:
        raise GpuAssistError(f"refresh aws-public takes --regions, not {stray}",
                             hint="example: gpu-assist catalog refresh aws-public --regions us-east-1,us-west-2")
    regions = [r.strip() for r in (args.regions or default_region()).split(",") if r.strip()]
    source = aws_public.AwsPublicPriceSource(directory, regions, today)
    report = refresh(source, directory)
    print(report.summary())
    print("read: " + ", ".join(f"{k} {v}" for k, v in sorted(source.counts.items())))
    public.append_refresh_log(directory / "SOURCES.md", [
        f"| {today.isoformat()} | `{aws_public.SOURCE_KEY}` | {url} | streamed | {report.rows_written} aws rows |"
        for url in source.urls])
    return 0


def _require_directory(path: Path, what: str, example: str) -> None:
    if not path.exists():
        raise CatalogError(f"{what} {path} not found", example=example)
    if not path.is_dir():
        raise CatalogError(f"{what} {path} is a file, not a folder", example=example)


def _require_file(path: Path, what: str, example: str) -> None:
    if not path.is_file():
        raise CatalogError(f"{what} not found in {path.parent}" if not path.exists() else
                           f"{path} is not a regular file", example=example)


def _check_as_of(text: str) -> None:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        raise ParseError(f"--as-of '{text}' is not a date", example="--as-of 2026-12-02") from None


def _actor(args) -> str:
    """Who submits: a name the person chose, so recorded as unauthenticated and never an approver."""
    from .identity import chosen_name

    return chosen_name(getattr(args, "actor", None))


def _decider(args) -> str:
    """The CLI decides only as an audited break-glass override: no identity a shell can claim is an approver's."""
    from .identity import operator_override

    if not args.break_glass:
        raise GpuAssistError(f"the CLI cannot {args.command}: approvers decide in Slack or through the Jupyter "
                             "server", hint="operators may override with --break-glass --reason …, audited, "
                             "when the policy has break_glass = true",
                             example=f"gpu-assist {args.command} {args.request_id} --break-glass --reason 'Slack down'")
    return operator_override()


def _lifecycle(args) -> int:
    """approve, reject, reconcile, reap, expire: the request lifecycle's own verbs."""
    from .commands import Context
    from .render import json as render_json, text as render_text

    approvals = Context().approvals
    if args.command in ("approve", "reject"):
        decider = _decider(args)
        record = approvals.approve(args.request_id, decider, reason=args.reason) if args.command == "approve" \
            else approvals.reject(args.request_id, decider, args.reason)
        renderer = render_json if args.format == "json" else render_text
        print(renderer.render(record))
        return 0
    jobs = approvals.orchestration
    done = {"reconcile": jobs.reconcile, "reap": jobs.reap, "expire": jobs.expire_due}[args.command]()
    print(f"{args.command}: {plural(len(done), 'request')}" + (f" ({', '.join(done)})" if done else ""))
    return 0


def _db(args) -> int:
    """`db upgrade`: what every server does at start, for a deploy step; `db current`: where the store is."""
    from . import schema
    from .store import Store

    store = Store(upgrade=False)
    if args.db_command == "upgrade":
        print(f"{store!r}: schema at {store.upgrade()} (newest)")
    else:
        print(f"{store!r}: schema at {store.revision() or 'none'}, newest {schema.head()}")
    return 0


def _dispatch(args) -> int:
    if args.command == "catalog":
        return _catalog(args)
    if args.command in ("approve", "reject", "reconcile", "reap", "expire"):
        return _lifecycle(args)
    if args.command == "db":
        return _db(args)
    if args.command == "slack":
        from slackbot import server

        if args.slack_command == "serve":
            if args.workers < 1 or args.threads < 1:
                raise GpuAssistError("--workers and --threads must be at least 1",
                                     hint="e.g. gpu-assist slack serve --workers 2")
            server.serve(args.host, args.port, threads=args.threads, jobs=not args.no_jobs, workers=args.workers)
        else:
            server.socket_mode()
        return 0
    return _command(args)


def _reader_went_away() -> int:
    """The program reading our output stopped (`gpu-assist quote … | head -1`): stop quietly, as Unix tools do.
    stdout now points at /dev/null, so that Python's own flush at exit has nothing to complain about."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (tests capture it)
        pass
    return EXIT_BROKEN_PIPE


def main(argv: list[str] | None = None) -> int:
    try:
        status = _dispatch(_parse_args(_build_parser(), argv))
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below, not at interpreter exit
        return status
    except BrokenPipeError:
        return _reader_went_away()
    except GpuAssistError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except ValueError as error:  # e.g. a malformed --as-of date
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # noqa: BLE001 - the last line of defence against tracebacks
        if os.environ.get("GPU_ASSIST_DEBUG"):
            raise
        print(f"internal error: {type(error).__name__}: {error} (set GPU_ASSIST_DEBUG=1 for details)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
