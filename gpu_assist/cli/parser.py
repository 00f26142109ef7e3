"""The CLI's argparse tree: one subcommand per grammar verb (`quote`, `recommend`, …) with flags for its options,
and the operator's and the catalog maintainer's verbs. Building it imports nothing heavy."""

from __future__ import annotations

import argparse
import difflib
import re
import textwrap
from pathlib import Path
from typing import Any, Callable, NoReturn, TypeAlias

from ..catalog.providers import REFRESH_VERBS
from ..errors import GpuAssistError
from ..render.tables import width
from .verbs import ABOUT, EXAMPLES, OPERATOR_VERBS

# What `add_subparsers` returns: a verb's (or a subcommand's) parsers are added to it.
Subcommands: TypeAlias = "argparse._SubParsersAction[_Parser]"
# A word argparse would take for an option although it is a (negative) duration or count: `-5h`, `-8xA100`.
_NEGATIVE_WORD_RE = re.compile(r"^-\d")
FORMATS = ("text", "json", "csv", "markdown")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help at the terminal's width, but never wider than 100 columns; descriptions and epilogs as
    written (they are laid out already)."""

    def __init__(self, prog: str, **kwargs: Any):
        super().__init__(prog, width=min(width() - 2, 100), **kwargs)


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments as one error, like every other user error, and writes help within
    100 columns."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        _usage_error(self.prog, message)

    def format_help(self) -> str:
        """An epilog may be a function, called only when help is shown: building the parser imports nothing."""
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


def _usage_error(prog: str, message: str) -> NoReturn:
    """argparse's complaint (a missing word, a bad --format, an unknown option) as one error with the command's
    help and a command line that works for it (`prog` is `gpu-assist quote`, `gpu-assist catalog refresh`, …)."""
    command = prog.split()[1:]
    message = message.replace("the following arguments are required: words", "nothing to answer: write what you "
                              f"ask after '{' '.join(command)}'")
    example = EXAMPLES.get(" ".join(command)) or EXAMPLES.get(command[0] if command else "", EXAMPLES["quote"])
    raise GpuAssistError(f"{prog}: {message}", hint=f"see '{prog} --help'", example=example)


class _Version(argparse.Action):
    """`--version`, read from the installed package's metadata only when asked (not on every start)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any):
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, _namespace: argparse.Namespace, _values: Any,
                 _option_string: str | None = None) -> None:
        # importlib.metadata (with email and zipfile, some 15 ms) only when the version is asked for
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"gpu-assist {version('gpu-assist')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            print("gpu-assist (version unknown: not installed)")
        parser.exit()


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The argparse tree. Given the word a command line starts with, when it is a verb, only that verb's
    subparser is built: a quote need not build the other 20 with their arguments and help texts. Any
    other start (none, an option such as --help) gets the whole tree, so help lists every verb; a word that
    is no verb is refused before (`parse_args`)."""
    parser = _Parser(prog="gpu-assist", usage="%(prog)s [-h] [--version] COMMAND ...",
                     description="GPU prices, plans and utilization across clouds.",
                     epilog=_verbs_help)  # called by format_help, only when help is shown
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, prog="gpu-assist",
                                     metavar="COMMAND", help=argparse.SUPPRESS)  # _verbs_help lists them
    for name, add in _VERBS.items():
        if verb not in _VERBS or name == verb:
            add(commands, name)
    return parser


def _add_parser(commands: Subcommands, verb: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A verb's subparser, its `--help` saying what it does. `gpu-assist --help` lists the verbs itself
    (`_verbs_help`): argparse lists one group of subcommands, and operators' verbs belong apart."""
    return commands.add_parser(verb, description=ABOUT[verb], **kwargs)


def _verbs_help() -> str:
    """The verbs in two groups, a user's and an operator's, each with what it does, within 100 columns."""
    label = max(map(len, ABOUT)) + 2
    lines: list[str] = []
    for title, verbs in (("commands:", [v for v in ABOUT if v not in OPERATOR_VERBS]),
                         ("operator commands (approvers decide in Slack or Jupyter):", OPERATOR_VERBS)):
        lines += ["", title] if lines else [title]
        for verb in verbs:
            lines += textwrap.wrap(ABOUT[verb], min(width(), 100), initial_indent=f"  {verb:<{label}}",
                                   subsequent_indent=" " * (label + 2), break_on_hyphens=False)
    return "\n".join([*lines, "", "gpu-assist COMMAND --help: its options; gpu-assist help: examples"])


def _add_quote(commands: Subcommands, verb: str) -> None:
    q = _add_parser(commands, verb)
    q.add_argument("words", nargs="+", help="the request, e.g. 8xA100 72h spot region=us-east-1")
    q.add_argument("--top", help="show the N cheapest offers, or all (default 15; JSON: all)")
    q.add_argument("--list", action="store_true", help="every option as a flat list, not the comparison")
    q.add_argument("--sort", help="total (default), price (per job-hour), per-gpu, provider")
    q.add_argument("--max-price", help="at most this much per hour for the whole job, e.g. 30")
    q.add_argument("--min-gpu-memory", help="GPUs with at least this many GiB, e.g. 80")
    q.add_argument("--include-unverified", action="store_true", help="rank unverified and stale prices too")
    q.add_argument("--provider", action="append", default=[],
                   help="aws, gcp, azure, lambda, oci, nebius, vast, … (see docs/grammar.md)")
    q.add_argument("--region", action="append", default=[], help="a region or a group (us, eu, asia, cn)")
    q.add_argument("--pricing", help="on-demand,spot,reserved-1y,reserved-3y,monthly")
    q.add_argument("--currency", help="USD or CNY")
    q.add_argument("--all-regions", action="store_true", help="every region, not only the cheapest per offer")
    q.add_argument("--include-flagged", action="store_true", help="include prices with known data defects")
    q.add_argument("--verified-only", action="store_true", help="leave out unverified list prices")
    q.add_argument("--explain", action="store_true", help="the arithmetic of each disk and data part")
    q.add_argument("--format", choices=FORMATS, default="text")


def _add_recommend(commands: Subcommands, verb: str) -> None:
    r = _add_parser(commands, verb)
    r.add_argument("words", nargs="+", help="the workload, e.g. finetune 70B lora budget=2000")
    r.add_argument("--top", help="show the N first feasible plans, or all (default 10)")
    r.add_argument("--sort", help="cost (the lowest expected total first, default), fastest or fewest-gpus")
    r.add_argument("--explain", action="store_true", help="print every plan's notes, every GPU's reasoning, "
                   "every assumption and formula")
    r.add_argument("--format", choices=FORMATS, default="text")


def _add_tco(commands: Subcommands, verb: str) -> None:
    t = _add_parser(commands, verb, epilog=_tco_keys)  # called by format_help, only when help is shown
    t.add_argument("words", nargs="+", help="GPUs and key=value options (below), e.g. 1xA100 hardware=15k, "
                                            "8xH100 hardware=300k per-server")
    t.add_argument("--format", choices=("text", "json"), default="text")


def _add_util(commands: Subcommands, verb: str) -> None:
    u = _add_parser(commands, verb)
    u.add_argument("words", nargs="*", help="the grammar's words, e.g. fleet region=us-east-1 window=30m "
                   "threshold=10 i-…")
    u.add_argument("--fleet", action="store_true", help="gpu-assist's AWS instances, from CloudWatch")
    u.add_argument("--region", help="AWS region of the fleet")
    u.add_argument("--window", help="averaging window for idle detection (default 30m)")
    u.add_argument("--threshold", help="idle below this average GPU utilisation, percent (default 10)")
    u.add_argument("--instance", action="append", default=[], help="these instance ids instead of the tagged ones")
    u.add_argument("--watch", action="store_true", help="refresh every --interval seconds until Ctrl-C")
    u.add_argument("--interval", type=float, default=1.0)
    u.add_argument("--format", choices=("text", "json"), default="text")


def _add_submit(commands: Subcommands, verb: str) -> None:
    """launch, stop, extend: requests an approver decides."""
    p = _add_parser(commands, verb)
    p.add_argument("words", nargs="+")
    p.add_argument("--as", dest="actor", help="who asks (default GPU_ASSIST_USER, else your login); recorded as "
                   "unauthenticated:NAME, which can never approve")
    p.add_argument("--format", choices=("text", "json"), default="text")


def _add_spend(commands: Subcommands, verb: str) -> None:
    s = _add_parser(commands, verb)
    s.add_argument("words", nargs="*", help="a period (mtd, 2026-11, 7d, yesterday), by=requester|project|"
                   "instance-type|pricing, source=aws")
    s.add_argument("--format", choices=("text", "json"), default="text")


def _add_commit(commands: Subcommands, verb: str) -> None:
    c = _add_parser(commands, verb)
    c.add_argument("words", nargs="*", help="months=N: whole months of recorded launches to plan from (default 3)")
    c.add_argument("--format", choices=("text", "json"), default="text")


def _add_decision(commands: Subcommands, verb: str) -> None:
    """approve, reject: the operator's break-glass override."""
    p = _add_parser(commands, verb)
    p.add_argument("request_id")
    p.add_argument("--break-glass", action="store_true",
                   help="override as this shell's login, audited; needs break_glass = true in the policy")
    p.add_argument("--reason", default="", help="why (required with --break-glass)")
    p.add_argument("--format", choices=("text", "json"), default="text")


def _add_requests(commands: Subcommands, verb: str) -> None:
    q = _add_parser(commands, verb)
    q.add_argument("words", nargs="*", help="list | show ID")
    q.add_argument("--format", choices=("text", "json"), default="text")


def _add_db(commands: Subcommands, verb: str) -> None:
    db = _add_parser(commands, verb)
    db_commands = db.add_subparsers(dest="db_command", required=True, parser_class=_Parser)
    db_commands.add_parser("upgrade", help="create or upgrade the schema to the newest migration (idempotent)")
    db_commands.add_parser("current", help="the store's schema revision and the newest one known")
    _name_choices(db_commands)


def _add_plain(commands: Subcommands, verb: str) -> None:
    """reconcile, reap, expire, help: a verb without arguments."""
    _add_parser(commands, verb)


def _add_slack(commands: Subcommands, verb: str) -> None:
    sl = _add_parser(commands, verb)
    slack = sl.add_subparsers(dest="slack_command", required=True, parser_class=_Parser)
    sv = slack.add_parser("serve", help="HTTP server for Slack's events (waitress; gunicorn with --workers N)")
    sv.add_argument("--host", default="0.0.0.0")
    sv.add_argument("--port", type=int, default=3000)
    sv.add_argument("--threads", type=int, default=16, help="request threads per process")
    sv.add_argument("--workers", type=int, default=1,
                    help="processes: 1 serves on waitress; more run under gunicorn's pre-fork master")
    sv.add_argument("--no-jobs", action="store_true", help="do not run expire/reap/reconcile in this process")
    slack.add_parser("socket", help="connect over Socket Mode (SLACK_APP_TOKEN)")
    _name_choices(slack)


def _add_metrics(commands: Subcommands, verb: str) -> None:
    m = _add_parser(commands, verb)
    metrics = m.add_subparsers(dest="metrics_command", required=True, parser_class=_Parser)
    sv = metrics.add_parser("serve", help="GET /metrics in the Prometheus text format: this machine's GPUs, and the "
                                          "team's launches, spend and budgets when a store is configured")
    sv.add_argument("--host", default="0.0.0.0")
    sv.add_argument("--port", type=int, default=9400)
    sv.add_argument("--interval", type=float, default=5.0, help="seconds between GPU samples (default 5)")
    sv.add_argument("--window", type=float, default=600.0,
                    help="seconds of samples a GPU must be idle through to count as idle (default 600)")
    _name_choices(metrics)


def _add_skypilot(commands: Subcommands, verb: str) -> None:
    sk = _add_parser(commands, verb)
    skypilot = sk.add_subparsers(dest="skypilot_command", required=True, parser_class=_Parser)
    sv = skypilot.add_parser("serve", help="POST /skypilot/policy: the admin policy SkyPilot's API server calls "
                                           "(admin_policy: http://HOST:PORT/skypilot/policy)")
    sv.add_argument("--host", default="127.0.0.1", help="the address to bind (default loopback: only this machine)")
    sv.add_argument("--port", type=int, default=8765)
    _name_choices(skypilot)


def _add_spot(commands: Subcommands, verb: str) -> None:
    s = _add_parser(commands, verb)
    spot = s.add_subparsers(dest="spot_command", required=True, parser_class=_Parser)
    w = spot.add_parser("watch", help="run a job; at EC2's 2-minute spot warning run --on-warning, send the job "
                                      "SIGTERM, and SIGKILL at the interruption time")
    w.add_argument("--on-warning", metavar="CMD", help="a shell command to run at the warning (save a checkpoint)")
    w.add_argument("--interval", type=float, default=5.0, help="seconds between polls of the metadata service")
    w.add_argument("job", nargs=argparse.REMAINDER, help="-- then the job's command line")
    _name_choices(spot)


def _add_catalog(commands: Subcommands, verb: str) -> None:
    c = _add_parser(commands, verb)
    cat = c.add_subparsers(dest="catalog_command", required=True, parser_class=_Parser)
    v = cat.add_parser("validate", help="report every defect with file and line")
    v.add_argument("directory", nargs="?", type=Path)
    v.add_argument("--verbose", action="store_true",
                   help="list every offer two sources disagree on, every row corrected and every row dropped")
    g = cat.add_parser("list-gpus", help="the GPUs known and where they are offered")
    g.add_argument("--format", choices=("text", "json"), default="text")
    s = cat.add_parser("status", help="offers, age and flagged rows per provider")
    s.add_argument("--format", choices=("text", "json"), default="text")
    i = cat.add_parser("import-skypilot", help="convert SkyPilot catalog extracts into catalogs/")
    i.add_argument("path", type=Path, help="directory of the extracts (catalogs/sources: <provider>_gpu.csv, "
                                          "aws_reserved_3y_allupfront.csv, gcp_cud.csv)")
    i.add_argument("--imported", required=True,
                   help="the day of the import, YYYY-MM-DD (the extracts' commits carry no date: a price's age counts "
                        "from this day)")
    i.add_argument("--catalog-dir", type=Path)
    ic = cat.add_parser("import-china", help="write aliyun.csv, tencent.csv, huawei.csv from the providers' "
                                             "documented specs, Tencent's published list prices and the articles")
    ic.add_argument("path", type=Path, help="directory of cn_gpu_specs.csv and cn_gpu_prices.csv (catalogs/sources)")
    ic.add_argument("--catalog-dir", type=Path)
    rf = cat.add_parser("refresh",
                        help="fetch fresh prices: aws, tencent, aliyun or huawei (account APIs, the team's own "
                             "keys); gcp (Google's Cloud Billing Catalog: an API key or application-default "
                             "credentials); aws-public, azure or skypilot (public price lists, no account)")
    rf.add_argument("provider", choices=(*REFRESH_VERBS, "aws-public", "skypilot"))  # the registry's, and two lists
    rf.add_argument("--commit", help="skypilot: the skypilot-catalog commit to download (40 hex digits)")
    rf.add_argument("--providers", help="skypilot: which clouds (default: all 17)")
    rf.add_argument("--regions", help="comma-separated (default: aws: AWS_REGION, AWS_DEFAULT_REGION or us-east-1; "
                                      "tencent: ap-guangzhou,ap-shanghai,ap-beijing; aliyun: cn-hangzhou,cn-shanghai,"
                                      "cn-beijing; huawei: cn-north-4,cn-east-3,cn-south-1)")
    rf.add_argument("--families", help="instance families, e.g. p4d,p5,g6e (default p*, g*)")
    rf.add_argument("--catalog-dir", type=Path)
    f = cat.add_parser("import-fx", help="write fx.csv from the ECB reference rates")
    f.add_argument("--catalog-dir", type=Path)
    _name_choices(cat)


def _name_choices(subcommands: Subcommands) -> None:
    """A missing subcommand's error lists the choices (`{validate,list-gpus,…}`), as the usage line does, not the
    attribute it is stored in (`catalog_command`)."""
    subcommands.metavar = "{" + ",".join(subcommands.choices) + "}"


# Every verb's subparser, in the order `gpu-assist --help` lists them.
_VERBS: dict[str, Callable[[Subcommands, str], None]] = {
    "quote": _add_quote, "recommend": _add_recommend, "tco": _add_tco, "util": _add_util,
    "launch": _add_submit, "stop": _add_submit, "extend": _add_submit, "spend": _add_spend, "commit": _add_commit,
    "approve": _add_decision, "reject": _add_decision, "requests": _add_requests,
    "db": _add_db, "reconcile": _add_plain, "reap": _add_plain, "expire": _add_plain, "slack": _add_slack,
    "metrics": _add_metrics, "skypilot": _add_skypilot, "spot": _add_spot, "help": _add_plain, "catalog": _add_catalog}


def _unknown_verb(word: str) -> NoReturn:
    near = difflib.get_close_matches(word.lower(), _VERBS, n=1)
    users = ", ".join(verb for verb in _VERBS if verb not in OPERATOR_VERBS)
    raise GpuAssistError(f"unknown command '{word}'" + (f" — did you mean {near[0]}?" if near else ""),
                         hint=f"commands: {users}",
                         example="gpu-assist quote 8xA100 72h")


def _tco_keys() -> str:
    """The keys `tco` reads, for `tco --help`, within 100 columns."""
    # tco imports the planning core (recommendation, sizing): only for `tco --help`, never on a quote's path
    from ..plan.tco import EXAMPLE, OPTIONS

    label = max(len(key) for key in OPTIONS) + 1
    lines = ["keys:"]
    for key, meaning in OPTIONS.items():
        lines += textwrap.wrap(meaning, min(width(), 100), initial_indent=f"  {key + '=':<{label}}  ",
                               subsequent_indent=" " * (label + 4))
    return "\n".join([*lines, "example:", f"  gpu-assist {EXAMPLE}"])


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """argparse, except that options and the grammar's words mix in any order (`quote 8xA100 --top 3 72h`:
    argparse stops a verb's words at the first option and calls the rest unrecognized), that `-5h` or `-8xA100`
    reach the command grammar (which says what is wrong with them) instead of being refused as unknown options,
    and that an unknown verb gets the user's verbs and the nearest one (argparse would list all 18, operators'
    included, on one line). argparse's own `parse_intermixed_args` does not take subcommands."""
    if argv and not argv[0].startswith("-") and argv[0] not in _VERBS:
        _unknown_verb(argv[0])
    args, extra = parser.parse_known_args(argv)
    if hasattr(args, "words"):
        words = [word for word in extra if not word.startswith("-") or _NEGATIVE_WORD_RE.match(word)]
        args.words = [*args.words, *words]
        extra = [word for word in extra if word.startswith("-") and not _NEGATIVE_WORD_RE.match(word)]
    if extra:
        _usage_error(f"gpu-assist {getattr(args, 'command', '')}".strip(),
                     f"unrecognized arguments: {' '.join(extra)}")
    return args
