"""jupyter_server routes for the sidebar: `<base_url>/gpu-assist/api/{quote,recommend,util,requests}`.

JSON in and out through the core's JSON renderer; a user error is HTTP 400 with `{"error": message}`.
Every handler requires the server's own authentication (`@tornado.web.authenticated`).
"""

from __future__ import annotations

import json

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ..commands import Context, RequestsCommand, parse_command, run
from ..errors import GpuAssistError
from ..render import json as render_json


class _CommandHandler(APIHandler):
    """Runs one verb of the shared grammar with the words the client sends (`?q=` or JSON `{"q": …}`)."""

    verb = ""

    @property
    def context(self) -> Context:
        return self.settings["gpu_assist_context"]

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
            command = parse_command(f"{self.verb} {self._words()}", self.context.catalog.gpus)
            result = run(command, self.context, actor=self.current_user_name())
        except GpuAssistError as error:
            self.set_status(400)
            self.finish(json.dumps({"error": str(error)}))
            return
        self.finish(self.render(result))

    @staticmethod
    def render(result) -> str:
        return render_json.render(result)

    def current_user_name(self) -> str:
        user = self.current_user
        return getattr(user, "username", None) or str(user)

    @tornado.web.authenticated
    def get(self):
        self._answer()

    @tornado.web.authenticated
    def post(self):
        self._answer()


class QuoteHandler(_CommandHandler):
    """The flat list of options as `--format json` gives them (each names its comparison row), inside an object
    that also carries the notices and, when there are no options, why: the sidebar shows both."""

    verb = "quote list"

    @staticmethod
    def render(result) -> str:
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
            self.set_status(400)
            self.finish(json.dumps({"error": str(error)}))
            return
        self.finish(render_json.render(result))


def setup_handlers(web_app, context: Context | None = None) -> None:
    web_app.settings["gpu_assist_context"] = context or Context()
    base = url_path_join(web_app.settings["base_url"], "gpu-assist", "api")
    web_app.add_handlers(".*$", [(url_path_join(base, name), handler) for name, handler in (
        ("quote", QuoteHandler), ("recommend", RecommendHandler), ("util", UtilHandler),
        ("requests", RequestsHandler))])
