"""The notebook's launch panel: ask for a launch, see pending requests, decide through the Jupyter server."""

# mypy: disallow-subclassing-any=False
# (ipywidgets has no type information: the panel subclasses its VBox all the same)

from __future__ import annotations

import html
from typing import Any, cast

import ipywidgets as widgets

from ..commands import Context
from ..commands.execute import run
from ..commands.grammar import parse_verb
from ..commands.quote_grammar import words_of
from ..errors import GpuAssistError
from ..lifecycle.identity import chosen_name
from ..lifecycle.records import RequestRecord, describe
from ..lifecycle.specs import to_json
from .client import JupyterServer
from .panels import _error_line, _show_error


class LaunchPanel(widgets.VBox):
    """Ask for a launch, see pending requests, and (through the Jupyter server) approve or reject.

    Who acts is never the kernel's to say. With a server link (`server=JupyterServer(url, token)`, or
    `GPU_ASSIST_JUPYTER_URL` + `GPU_ASSIST_JUPYTER_TOKEN`), requests and decisions go through the server's REST
    routes and count as the user the server authenticated (`jupyter:<name>`). Without one, requests are recorded
    as `unauthenticated:<login>` and no Approve/Reject buttons are offered: decide in Slack or the server.
    """

    def __init__(self, context: Context | None = None, server: JupyterServer | None = None):
        self.context = context or Context()
        self.server = server or JupyterServer.from_env()
        self.text = widgets.Text(value="8xA100 72h spot region=us-east-1", description="launch")
        self.button = widgets.Button(description="Request launch", button_style="warning")
        self.error = _error_line()
        self.message = widgets.HTML()
        self.pending = widgets.VBox()
        self.button.on_click(lambda _: self.request())
        where = "as the Jupyter server's user" if self.server else \
            "unauthenticated (no Jupyter server link): approvers decide in Slack or through the server"
        super().__init__(children=[widgets.HBox([self.text, self.button]), self.error, self.message,
                                   widgets.HTML(f"<b>Pending requests</b> <i>{html.escape(where)}</i>"),
                                   self.pending])
        self.refresh()

    def request(self) -> dict[str, Any] | RequestRecord | None:
        """Submit; returns the request as the server's JSON (with a link) or the local record (without)."""
        _show_error(self.error, "")
        record: dict[str, Any] | RequestRecord
        try:
            if self.server:
                record = self.server.launch(self.text.value)
                line, checks = _describe_json(record), record["spec"]["checks"]
            else:
                # A launch command's result is the request it recorded.
                command = parse_verb("launch", words_of(self.text.value), self.context.catalog.gpus)
                launched = cast(RequestRecord, run(command, self.context, actor=chosen_name()))
                line, checks = describe(launched), to_json(launched.spec)["checks"]
                record = launched
        except GpuAssistError as error:
            _show_error(self.error, str(error))
            return None
        self.message.value = html.escape(line) + "<br>" + \
            html.escape(f"dry run: {checks['dry_run']}; quota: {checks['quota']}")
        self.refresh()
        return record

    def decide(self, request_id: str, approve: bool) -> dict[str, Any] | None:
        """Approve or reject through the server's route; without a server link there is nothing to decide with."""
        _show_error(self.error, "")
        if self.server is None:
            _show_error(self.error, "decisions need the Jupyter server (or Slack): this kernel has no server link")
            return None
        try:
            record = self.server.decide(request_id, approve)
        except GpuAssistError as error:
            _show_error(self.error, str(error))
            return None
        self.message.value = html.escape(_describe_json(record))
        self.refresh()
        return record

    def refresh(self) -> None:
        rows = []
        if self.server is None:
            for waiting in self.context.approvals.store.list(states=("pending",)):
                rows.append(widgets.HBox([widgets.Label(describe(waiting))]))
        else:
            try:
                pending = [r for r in self.server.requests() if r["state"] == "pending"]
            except GpuAssistError as error:
                _show_error(self.error, str(error))
                pending = []
            for record in pending:
                approve = widgets.Button(description="Approve", button_style="success")
                reject = widgets.Button(description="Reject", button_style="danger")
                approve.on_click(lambda _, rid=record["id"]: self.decide(rid, True))
                reject.on_click(lambda _, rid=record["id"]: self.decide(rid, False))
                rows.append(widgets.HBox([widgets.Label(_describe_json(record)), approve, reject]))
        self.pending.children = rows


def _describe_json(record: dict[str, Any]) -> str:
    """A request as the server's JSON gives it, in one line like `records.describe`."""
    spec = record.get("spec", {})
    if record.get("kind") == "launch":
        what = (f"{spec.get('instances')}x{spec.get('instance_type')} ({spec.get('gpus')}x{spec.get('gpu')}) "
                f"{spec.get('pricing_model')} in {spec.get('region')}, est. {spec.get('estimated_total')} "
                f"{record.get('currency')}")
    else:
        what = "stop " + ", ".join(spec.get("instance_ids", []))
    return f"{record.get('id')} [{record.get('state')}] {what} — by {record.get('requester')}"
