"""jupyter_server routes: `<base_url>/gpu-assist/api/{quote,recommend,util,requests,spend,launch,extend,stop}`,
`POST …/requests/<id>/{approve,reject}`, and `providers` (the registry's providers, which the sidebar's filter
lists: one list, `catalog/providers.py`).

JSON in and out through the core's JSON renderer. Every handler requires the server's own authentication
(`@tornado.web.authenticated`; Jupyter checks the token, or the XSRF token for a cookie), and the actor is the
server's `current_user` as `jupyter:<username>` (JupyterHub's user behind JupyterHub): this is the only way a
notebook user's decision counts, never kernel code writing to the store.

Nothing waits on the server's event loop, which every JupyterLab user of the server shares: a route reads its input
there (the grammar is pure and quick) and runs the command in a thread pool, quotes and plans in a small pool of
their own and anything that reaches AWS, the request store or NVML in another, so a slow AWS call (a dry run, a
quota, CloudWatch) holds up neither the loop nor a quote. A route waits at most its `timeout_s` for the answer,
then says so (504); the work it started runs to its end in the pool (a thread cannot be stopped), which is why a
late launch request may still be recorded.

Errors are JSON, `{"error": message}` with the error's `hint` and `example` beside it when it has them: 400 for
input, 403 a refusal (not an approver, one's own request), 502 AWS failed, 504 no answer in time, 500 a bug (its
traceback in the server's log, one line for the client).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, cast

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ..catalog.providers import REGISTRY
from ..commands import Command, Context, RequestDetail, UtilCommand
from ..commands.execute import run
from ..commands.grammar import parse_threshold, parse_verb, parse_window
from ..commands.quote_grammar import parse_quote, words_of
from ..errors import ConfigError, GpuAssistError, ParseError, PolicyError, ProvisionError, apart_from
from ..lifecycle import states
from ..lifecycle.identity import JUPYTER, actor
from ..lifecycle.records import REQUEST_ID_FORM
from ..lifecycle.specs import launch_option
from ..pricing.compare import Comparison
from ..pricing.query import format_duration
from ..pricing.quote import Quote
from ..render import json as render_json
from ..render import operations as render_operations
from ..render import plans as _plans  # noqa: F401 - registers the JSON of recommend's and tco's results

if TYPE_CHECKING:
    from ..lifecycle.records import RequestRecord

# Threads per pool: two quotes or plans at a time leave the loop its share of the GIL; AWS and store calls mostly
# wait on sockets, so more of them may wait at once.
COMPUTE, AWS_AND_STORE = "compute", "aws-and-store"
POOL_THREADS = {COMPUTE: 2, AWS_AND_STORE: 8}
TIMEOUT_VARIABLE = "GPU_ASSIST_JUPYTER_TIMEOUT_S"
_FLAG_WORDS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}
_AWS_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
_TRY_AGAIN = "nothing was changed; try again"


def timeout_setting(environ: Mapping[str, str] = os.environ) -> float | None:
    """`GPU_ASSIST_JUPYTER_TIMEOUT_S`, the longest any route waits for its answer (below each route's own limit);
    None when unset. ConfigError, naming the variable, for anything but a number of seconds from 1 to 3600."""
    value = environ.get(TIMEOUT_VARIABLE)
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 1 <= seconds <= 3600:
        raise ConfigError(f"{TIMEOUT_VARIABLE}='{value[:40]}' is not a number of seconds from 1 to 3600",
                          example=f"{TIMEOUT_VARIABLE}=30 jupyter lab")
    return seconds


def error_answer(error: GpuAssistError) -> dict[str, str]:
    """The JSON of an error a user may see: its one line, and its hint and example apart for a client to show."""
    answer = {"error": str(error)}
    answer.update({name: text for name, text in (("hint", error.hint), ("example", error.example)) if text})
    return answer


def _status(error: GpuAssistError) -> int:
    if isinstance(error, PolicyError):
        return 403
    return 502 if isinstance(error, ProvisionError) else 400


class _CommandHandler(APIHandler):
    """Runs one verb of the shared grammar with the words the client sends (`?q=` or JSON `{"q": …}`), off the
    event loop, in the pool of `pool`, waiting at most `timeout_s`; `late` is what a 504 tells the user."""

    verb = ""
    pool = AWS_AND_STORE
    timeout_s = 60.0
    late = _TRY_AGAIN

    @property
    def context(self) -> Context:
        context: Context = self.settings["gpu_assist_context"]
        return context

    def command(self) -> Command:
        """The client's words, read once by the grammar as this route's verb."""
        return parse_verb(self.verb, words_of(self._words()), self.context.catalog.gpus)

    def _words(self) -> str:
        if self.request.method == "POST" and self.request.body:
            try:
                body = json.loads(self.request.body)
            except ValueError:
                raise GpuAssistError("the request body is not JSON", example='{"q": "8xA100 72h"}') from None
            return str(body.get("q", "")) if isinstance(body, dict) else ""
        return self.get_argument("q", "")

    async def _answer(self) -> None:
        try:
            command = self.command()
        except GpuAssistError as error:
            self._refuse(error)
            return
        asker = self.actor()
        await self.off_loop(lambda: self.answer_for(command, asker))

    def answer_for(self, command: Command, asker: str) -> str:
        """What runs in the pool: the command, as `asker`, and its JSON."""
        return self.answer_json(run(command, self.context, actor=asker))

    async def off_loop(self, work: Callable[[], str]) -> None:
        """Run `work` in this route's pool and finish with the JSON it returns, or with a JSON error: the user's
        (400, 403, 502), no answer within the route's time (504), or a bug (500; the traceback goes to the log)."""
        limit = min(self.timeout_s, self.settings["gpu_assist_timeout_cap_s"] or self.timeout_s)
        pool = self.settings["gpu_assist_pools"][self.pool]
        try:
            body = await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(pool, work), limit)
        except GpuAssistError as error:
            self._refuse(error)
        except TimeoutError:
            self._fail(504, f"{self.verb} got no answer within {limit:g} s (AWS, the request store or this server "
                            "is slow)", self.late)
        except Exception:  # noqa: BLE001 - a bug: the user gets a line, the server's log the traceback
            self.log.exception("gpu-assist: %s failed", self.request.path)
            self._fail(500, f"gpu-assist failed to answer {self.verb} (an internal error)",
                       "the Jupyter server's log has the details")
        else:
            self.finish(body)

    @staticmethod
    def answer_json(result: object) -> str:
        return render_json.render(result)

    def _refuse(self, error: GpuAssistError) -> None:
        try:
            apart_from(error, f"{self.verb} {self._words()}")  # its example is never the words that just failed
        except GpuAssistError:  # the body is not JSON: that is the error being answered
            pass
        self.set_status(_status(error))
        self.finish(json.dumps(error_answer(error), ensure_ascii=False))

    def _fail(self, status: int, message: str, hint: str) -> None:
        self.set_status(status)
        self.finish(json.dumps({"error": message, "hint": hint}, ensure_ascii=False))

    def actor(self) -> str:
        """The authenticated user, as Jupyter's identity provider names them."""
        user = self.current_user
        return actor(JUPYTER, getattr(user, "username", None) or str(user))

    @tornado.web.authenticated
    async def get(self) -> None:
        await self._answer()

    @tornado.web.authenticated
    async def post(self) -> None:
        await self._answer()


class QuoteHandler(_CommandHandler):
    """The flat list of options as `--format json` gives them (each names its comparison row), inside an object
    that also carries the notices and, when there are no options, why: the sidebar shows both. With
    `view=compare`, the comparison the CLI's table shows, row for row (`render_json.comparison_answer`)."""

    verb = "quote"
    pool = COMPUTE
    timeout_s = 30.0

    def command(self) -> Command:
        view = self.get_argument("view", "list")
        if view not in ("list", "compare"):
            raise ParseError(f"view='{view[:40]}' is neither list nor compare",
                             example="quote?q=8xA100+72h&view=compare")
        return replace(parse_quote(words_of(self._words()), self.context.catalog.gpus), view=view)

    def answer_for(self, command: Command, asker: str) -> str:
        """The answer, each comparison row with `launch`: the words after `launch` that ask for the row's option
        for the quote's duration (`launch_option`, as Slack's card offers it), or null where the team does not
        launch on its cloud."""
        result = run(command, self.context, actor=asker)
        if isinstance(result, Quote):
            return json.dumps(render_json.quote_answer(result), ensure_ascii=False)
        assert isinstance(result, Comparison)  # a quote's words give one of the two
        answer = render_json.comparison_answer(result)
        launches, duration = self.context.policy.allowed_providers, format_duration(result.request.duration_s)
        for row, shown in zip((*result.rows, *result.untrusted), (*answer["rows"], *answer["untrusted"])):
            option = launch_option(row, launches)
            shown["launch"] = f"{option} {duration}" if option else None
        return json.dumps(answer, ensure_ascii=False)


class RecommendHandler(_CommandHandler):
    verb = "recommend"
    pool = COMPUTE
    timeout_s = 30.0


class UtilHandler(_CommandHandler):
    """This server's GPUs (`util`), or the team's fleet from EC2 and CloudWatch with the idle instances called out
    (`util?fleet=1`, with `region=`, `window=` (30m) and `threshold=` (percent) read by the grammar's own value
    parsers; `?q=fleet region=us-east-1` says the same in words)."""

    verb = "util"

    def command(self) -> Command:
        command = cast(UtilCommand, super().command())
        fields: dict[str, Any] = {}
        fleet, region = self.get_argument("fleet", None), self.get_argument("region", None)
        window, threshold = self.get_argument("window", None), self.get_argument("threshold", None)
        if fleet is not None:
            fields["fleet"] = _flag("fleet", fleet, example="util?fleet=1")
        if region is not None:
            fields.update(fleet=True, region=_aws_region(region))
        if window is not None:
            fields["window_s"] = parse_window(window)
        if threshold is not None:
            fields["threshold_pct"] = parse_threshold(threshold)
        return replace(command, **fields)


def _flag(name: str, value: str, *, example: str) -> bool:
    if value.strip().lower() not in _FLAG_WORDS:
        raise ParseError(f"{name}='{value[:40]}' is neither 1 nor 0", hint="1, true or yes; 0, false or no",
                         example=example)
    return _FLAG_WORDS[value.strip().lower()]


def _aws_region(value: str) -> str:
    """An AWS region's name by its form: a typo fails here, at once, not after boto3's retries to nowhere."""
    region = value.strip().lower()
    if not _AWS_REGION.match(region):
        raise ParseError(f"'{value[:40]}' is not an AWS region", example="util?fleet=1&region=us-east-1")
    return region


class RequestsHandler(_CommandHandler):
    """The recent requests, or one with its audit trail (`?q=r-0123456789ab`), each with what the asking user may
    do with it (`may_decide`, `why_not`) and, while it waits, the budgets it counts against: what the sidebar needs
    to show Approve and Reject only to whom the policy lets decide, and the budget lines of the Slack card."""

    verb = "requests"
    timeout_s = 30.0

    def answer_for(self, command: Command, asker: str) -> str:
        result = run(command, self.context, actor=asker)
        approvals = self.context.approvals
        if isinstance(result, RequestDetail):
            answer: Any = {**render_json.payload(result), **_for_asker(approvals, result.record, asker)}
        else:
            answer = [{**render_operations.request(r), **_for_asker(approvals, r, asker)}
                      for r in cast("tuple[RequestRecord, ...]", result)]
        return json.dumps(answer, ensure_ascii=False, indent=2)


def _for_asker(approvals: Any, record: RequestRecord, asker: str) -> dict[str, Any]:
    """Whether `asker` may approve or reject `record` now, by the policy's check an approval makes
    (`Policy.decider_kind`; nothing is recorded, as nothing was attempted), why not when not, and a waiting
    launch's or extension's budgets with it included (`Approvals.budget_standing`). The server decides again on
    the click: this only spares a user a button that would be refused."""
    if record.state != "pending" or record.expires_at <= approvals.clock():
        why_not = f"it is {record.state}" if record.state != "pending" else "it has expired"
        return {"may_decide": False, "why_not": why_not, "budgets": []}
    kind, why_not = approvals.policy.decider_kind(asker, requester=record.requester, request_kind=record.kind)
    may_decide = kind in states.APPROVE.actors
    return {"may_decide": may_decide, "why_not": "" if may_decide else why_not,
            "budgets": [render_operations.budget(b) for b in approvals.budget_standing(record)]}


class SpendHandler(_CommandHandler):
    """What launches cost, the report `gpu-assist spend` and `/gpu spend` give (`?q=7d by=project source=aws`;
    default: month to date, every group, the daily costs and the budgets), asked as the server's user."""

    verb = "spend"


class LaunchHandler(_CommandHandler):
    """Submit a launch request as the authenticated user; POST only (a GET must not ask for money). Its dry run and
    quota check ask AWS, so it may take a while; a late answer does not withdraw the request."""

    verb = "launch"
    timeout_s = 120.0
    late = "the request may still be recorded once AWS has answered its checks: `requests` lists it"

    @tornado.web.authenticated
    def get(self) -> None:
        raise tornado.web.HTTPError(405)


class ExtendHandler(LaunchHandler):
    """Submit an extension request (`{"q": "r-… 24h"}`) as the authenticated user; POST only, like a launch."""

    verb = "extend"
    late = "the request may still be recorded: `requests` lists it"


class StopHandler(LaunchHandler):
    """Ask to stop instances gpu-assist launched (`{"q": "i-0123456789abcdef0 region=us-east-1"}`), as the
    authenticated user: the fleet's Request stop. POST only; AWS is asked whose the instances are first."""

    verb = "stop"
    late = "the request may still be recorded once AWS has said whose the instances are: `requests` lists it"


class DecideHandler(_CommandHandler):
    """`POST …/requests/<id>/approve|reject` (JSON `{"reason": …}` optional): the approval lifecycle's rules decide
    whether this user may. An approval carries the launch out before it answers, so it may wait the longest (below
    the notebook client's ten minutes)."""

    verb = "decide"
    timeout_s = 540.0
    late = "the decision may still be carried out: `requests` shows the request's state"

    @tornado.web.authenticated
    def get(self, request_id: str, decision: str) -> None:
        raise tornado.web.HTTPError(405)

    @tornado.web.authenticated
    async def post(self, request_id: str, decision: str) -> None:
        try:
            body = json.loads(self.request.body or b"{}")
            reason = str(body.get("reason", "")) if isinstance(body, dict) else ""
        except ValueError:
            self._refuse(GpuAssistError("the request body is not JSON", example='{"reason": "for the demo"}'))
            return
        decider = self.actor()

        def decide() -> str:  # in the pool: even reaching the store (built on first use) may wait on the database
            approvals = self.context.approvals
            act = approvals.approve if decision == "approve" else approvals.reject
            return render_json.render(act(request_id, decider, reason=reason))

        await self.off_loop(decide)


class ProvidersHandler(APIHandler):
    """The provider registry as the Quote tab's Provider filter lists it: each provider's name (the grammar's word)
    and how people read it, in the registry's order. Read from memory: answered on the loop."""

    @tornado.web.authenticated
    def get(self) -> None:
        self.finish(json.dumps({"providers": [{"name": p.name, "display": p.display} for p in REGISTRY]},
                               ensure_ascii=False))


def setup_handlers(web_app: Any, context: Context | None = None, *, timeout_cap_s: float | None = None) -> None:
    """Register the routes, with the context they share, their two thread pools and the cap on their waits."""
    web_app.settings["gpu_assist_context"] = context or Context()
    web_app.settings["gpu_assist_timeout_cap_s"] = timeout_cap_s
    web_app.settings["gpu_assist_pools"] = {
        name: ThreadPoolExecutor(threads, thread_name_prefix=f"gpu-assist-{name}")
        for name, threads in POOL_THREADS.items()}
    base = url_path_join(web_app.settings["base_url"], "gpu-assist", "api")
    web_app.add_handlers(".*$", [(url_path_join(base, name), handler) for name, handler in (
        ("quote", QuoteHandler), ("recommend", RecommendHandler), ("util", UtilHandler),
        ("requests", RequestsHandler), ("spend", SpendHandler), ("launch", LaunchHandler),
        ("extend", ExtendHandler), ("stop", StopHandler), ("providers", ProvidersHandler),
        (rf"requests/({REQUEST_ID_FORM})/(approve|reject)", DecideHandler))])
