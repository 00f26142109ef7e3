"""Approving from Jupyter: only through the server extension's REST routes, as the user the server authenticated
(`jupyter:<name>`; tokens mapped to users by a real jupyter_server identity provider, as JupyterHub's are).
The notebook LaunchPanel decides through the same routes, over a real socket."""

from __future__ import annotations

import asyncio
import json

import pytest
from tornado.httpclient import HTTPClientError

from gpu_assist.jupyter import LaunchPanel
from gpu_assist.jupyter.client import JupyterServer
from jupyter_users import TokenUsers, auth

pytestmark = pytest.mark.clock  # the launch panel's approvals date their requests by the wall clock


@pytest.fixture
def jp_server_config(aws, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path / 'state.db'}")
    monkeypatch.setenv("GPU_ASSIST_APPROVERS", "jupyter:bob,slack:alice")
    monkeypatch.setenv("GPU_ASSIST_AMI_ID", "ami-12c6146b")
    monkeypatch.setenv("GPU_ASSIST_USER", "bob")  # a name the kernel or the shell chose: it must not matter
    return {"ServerApp": {"jpserver_extensions": {"gpu_assist.jupyter": True}, "identity_provider_class": TokenUsers}}


async def _post(jp_fetch, *path, user=None, body=None):
    try:
        response = await jp_fetch("gpu-assist", "api", *path, method="POST", body=json.dumps(body or {}),
                                  headers=auth(user) if user else {"Authorization": ""})
        return response.code, json.loads(response.body)
    except HTTPClientError as error:
        return error.code, json.loads(error.response.body) if error.response.body.startswith(b"{") else {}


async def test_only_an_authenticated_approver_other_than_the_requester_decides(jp_fetch):
    code, record = await _post(jp_fetch, "launch", user="carol", body={"q": "8xA100 2h region=us-east-1"})
    assert code == 200 and record["requester"] == "jupyter:carol" and record["state"] == "pending"
    rid = record["id"]
    attempts = {
        "no token": await _post(jp_fetch, "requests", rid, "approve"),
        "the requester": await _post(jp_fetch, "requests", rid, "approve", user="carol"),
        # alice is an approver in Slack (slack:alice); as a Jupyter user she is not.
        "same name, other realm": await _post(jp_fetch, "requests", rid, "approve", user="alice"),
    }
    assert [code for code, _ in attempts.values()] == [403, 403, 403]
    assert "requesters cannot approve" in attempts["the requester"][1]["error"]
    assert attempts["same name, other realm"][1]["error"].startswith("jupyter:alice is not an approver")
    with pytest.raises(HTTPClientError) as raised:
        await jp_fetch("gpu-assist", "api", "requests", rid, "approve", headers=auth("bob"))
    assert raised.value.code == 405  # a GET never decides
    code, done = await _post(jp_fetch, "requests", rid, "approve", user="bob")
    assert code == 200 and done["state"] == "running" and done["approver"] == "jupyter:bob"


async def test_a_cookie_without_the_xsrf_token_cannot_decide(jp_fetch):
    code, record = await _post(jp_fetch, "launch", user="carol", body={"q": "8xA100 2h region=us-east-1"})
    login = await jp_fetch("gpu-assist", "api", "requests", headers=auth("bob"))
    cookies = "; ".join(c.split(";")[0] for c in login.headers.get_list("Set-Cookie"))
    with pytest.raises(HTTPClientError) as raised:  # bob's browser cookie, a forged cross-site POST
        await jp_fetch("gpu-assist", "api", "requests", record["id"], "reject", method="POST", body="{}",
                       headers={"Authorization": "", "Cookie": cookies})
    assert raised.value.code == 403
    code, shown = await _post(jp_fetch, "requests", record["id"], "reject", user="bob")
    assert code == 200 and shown["state"] == "rejected"


async def test_the_notebook_panel_decides_through_the_server(jp_fetch, jp_http_port, jp_base_url):
    url = f"http://localhost:{jp_http_port}{jp_base_url}"

    def carol_then_bob():
        carol = LaunchPanel(server=JupyterServer(url, "token-carol"))
        carol.text.value = "8xA100 2h region=us-east-1"
        record = carol.request()
        (row,) = carol.pending.children
        row.children[1].click()  # carol's own Approve button: refused by the server
        refused = carol.error.value
        bob = LaunchPanel(server=JupyterServer(url, "token-bob"))
        (row,) = bob.pending.children
        row.children[1].click()
        return record, refused, bob

    record, refused, bob = await asyncio.to_thread(carol_then_bob)
    assert record["requester"] == "jupyter:carol" and "requesters cannot approve" in refused
    assert bob.error.value == "" and "[running]" in bob.message.value and bob.pending.children == ()
    nobody = await asyncio.to_thread(LaunchPanel, server=JupyterServer(url, "token-of-nobody"))
    assert "HTTP 403" in nobody.error.value and nobody.pending.children == ()


async def test_an_extension_is_asked_and_decided_through_the_routes(jp_fetch):
    code, record = await _post(jp_fetch, "launch", user="carol", body={"q": "8xA100 2h region=us-east-1"})
    code, launch = await _post(jp_fetch, "requests", record["id"], "approve", user="bob")
    assert code == 200 and launch["state"] == "running"
    code, extension = await _post(jp_fetch, "extend", user="carol", body={"q": f"{launch['id']} 24h"})
    assert code == 200 and (extension["kind"], extension["state"]) == ("extend", "pending")
    assert extension["spec"]["launch_request"] == launch["id"] and extension["spec"]["extra_s"] == 86400
    code, refused = await _post(jp_fetch, "requests", extension["id"], "approve", user="carol")
    assert code == 403 and "requesters cannot approve" in refused["error"]
    code, done = await _post(jp_fetch, "requests", extension["id"], "approve", user="bob")
    assert code == 200 and done["state"] == "extended"
    assert done["ends_at"] > launch["ends_at"]
    code, bad = await _post(jp_fetch, "extend", user="carol", body={"q": f"{launch['id']} 0h"})
    assert code == 400 and bad["error"] == ("duration '0h' is out of range — use 1 minute to 5 years — example: "
                                            "extend r-0123456789ab 24h")
    with pytest.raises(HTTPClientError) as raised:
        await jp_fetch("gpu-assist", "api", "extend", headers=auth("carol"))
    assert raised.value.code == 405  # a GET never asks for money
