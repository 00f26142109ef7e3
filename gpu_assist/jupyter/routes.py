"""jupyter_server routes: `<base_url>/gpu-assist/api/{quote,recommend,util,requests,launch,extend}` and
`POST …/requests/<id>/{approve,reject}`.

JSON in and out through the core's JSON renderer; a user error is HTTP 400 with `{"error": message}`, a refusal
(not an approver, one's own request) 403. Every handler requires the server's own authentication
(`@tornado.web.authenticated`; Jupyter checks the token, or the XSRF token for a cookie), and the actor is the
server's `current_user` as `jupyter:<username>` (JupyterHub's user behind JupyterHub): this is the only way a
notebook user's decision counts, never kernel code writing to the store.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ..commands import Command, Context, RequestsCommand, parse_quote, parse_verb, run, words_of
from ..errors import GpuAssistError, PolicyError
from ..identity import JUPYTER, actor
from ..render import json as render_json


class _CommandHandler(APIHandler):
    """Runs one verb of the shared grammar with the words the client sends (`?q=` or JSON `{"q": …}`)."""

    verb = ""

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

    def _answer(self) -> None:
        try:
            result = run(self.command(), self.context, actor=self.actor())
        except GpuAssistError as error:
            self._refuse(error)
            return
        self.finish(self.answer_json(result))

    @staticmethod
    def answer_json(result: object) -> str:
        return render_json.render(result)

    def _refuse(self, error: GpuAssistError) -> None:
        self.set_status(403 if isinstance(error, PolicyError) else 400)
        self.finish(json.dumps({"error": str(error)}))

    def actor(self) -> str:
        """The authenticated user, as Jupyter's identity provider names them."""
        user = self.current_user
        return actor(JUPYTER, getattr(user, "username", None) or str(user))

    @tornado.web.authenticated
    def get(self):
        self._answer()

    @tornado.web.authenticated
    def post(self):
        self._answer()


class QuoteHandler(_CommandHandler):
    """The flat list of options as `--format json` gives them (each names its comparison row), inside an object
    that also carries the notices and, when there are no options, why: the sidebar shows both."""

    verb = "quote"

    def command(self) -> Command:
        return replace(parse_quote(words_of(self._words()), self.context.catalog.gpus), view="list")

    @staticmethod
    def answer_json(result: Any) -> str:
        return json.dumps(render_json.quote_answer(result), ensure_ascii=False)


class RecommendHandler(_CommandHandler):
    verb = "recommend"


class UtilHandler(_CommandHandler):
    verb = "util"


class RequestsHandler(_CommandHandler):
    verb = "requests"

    def _answer(self) -> None:
        try:
            result = run(RequestsCommand(), self.context)
        except GpuAssistError as error:
            self._refuse(error)
            return
        self.finish(render_json.render(result))


class LaunchHandler(_CommandHandler):
    """Submit a launch request as the authenticated user; POST only (a GET must not ask for money)."""

    verb = "launch"

    @tornado.web.authenticated
    def get(self):
        raise tornado.web.HTTPError(405)


class ExtendHandler(LaunchHandler):
    """Submit an extension request (`{"q": "r-… 24h"}`) as the authenticated user; POST only, like a launch."""

    verb = "extend"


class DecideHandler(_CommandHandler):
    """`POST …/requests/<id>/approve|reject` (JSON `{"reason": …}` optional): the approval lifecycle's rules decide
    whether this user may. The launch after an approval runs off the server's event loop."""

    @tornado.web.authenticated
    def get(self, request_id: str, decision: str):
        raise tornado.web.HTTPError(405)

    @tornado.web.authenticated
    async def post(self, request_id: str, decision: str):
        import asyncio

        try:
            body = json.loads(self.request.body or b"{}")
            reason = str(body.get("reason", "")) if isinstance(body, dict) else ""
        except ValueError:
            self._refuse(GpuAssistError("the request body is not JSON", example='{"reason": "for the demo"}'))
            return
        approvals, decider = self.context.approvals, self.actor()
        decide = approvals.approve if decision == "approve" else approvals.reject
        try:
            record = await asyncio.get_running_loop().run_in_executor(
                None, lambda: decide(request_id, decider, reason=reason))
        except GpuAssistError as error:
            self._refuse(error)
            return
        self.finish(render_json.render(record))


def setup_handlers(web_app, context: Context | None = None) -> None:
    web_app.settings["gpu_assist_context"] = context or Context()
    base = url_path_join(web_app.settings["base_url"], "gpu-assist", "api")
    web_app.add_handlers(".*$", [(url_path_join(base, name), handler) for name, handler in (
        ("quote", QuoteHandler), ("recommend", RecommendHandler), ("util", UtilHandler),
        ("requests", RequestsHandler), ("launch", LaunchHandler), ("extend", ExtendHandler),
        (r"requests/(r-[0-9a-f]{12})/(approve|reject)", DecideHandler))])
