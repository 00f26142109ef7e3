"""A slow AWS must not freeze JupyterLab: the routes run AWS and store calls off the Jupyter server's event loop.

AWS here is the moto server behind a local proxy that holds every call 5 s before passing it on (`SlowAws`), set
as the server's `AWS_ENDPOINT_URL`: a launch's dry run and quota check, and the fleet's EC2 and CloudWatch calls,
each wait there while the test asks for a quote on the same server."""

from __future__ import annotations

import asyncio
import http.client
import http.server
import json
import threading
import urllib.parse

import pytest
from tornado.httpclient import HTTPClientError

from gpu_assist.errors import ConfigError
from gpu_assist.jupyter.routes import TIMEOUT_VARIABLE, timeout_setting
from jupyter_context import pin_context
from jupyter_users import TokenUsers, auth
from support import Clock, free_port

AWS_DELAY_S = 5.0
_HOP_BY_HOP = {"connection", "content-length", "date", "host", "server", "transfer-encoding"}


class SlowAws(http.server.ThreadingHTTPServer):
    """AWS that takes `delay_s` to answer: each call waits that long (or until `release()`), then goes to the
    upstream moto server and its answer comes back. `arrivals` and `answered` count calls in and answers out."""

    daemon_threads = True

    def __init__(self, upstream: str, delay_s: float = AWS_DELAY_S):
        super().__init__(("127.0.0.1", free_port()), _SlowHandler)
        self.url = f"http://127.0.0.1:{self.server_port}"
        self.upstream = urllib.parse.urlsplit(upstream)
        self.delay_s = delay_s
        self.released = threading.Event()
        self.counted = threading.Condition()
        self.arrivals = self.answered = 0

    def count(self, name: str) -> None:
        with self.counted:
            setattr(self, name, getattr(self, name) + 1)
            self.counted.notify_all()

    def wait_for_arrivals(self, count: int, timeout_s: float = 10.0) -> bool:
        with self.counted:
            return self.counted.wait_for(lambda: self.arrivals >= count, timeout_s)

    def release(self) -> None:
        self.released.set()


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    server: SlowAws

    def log_message(self, *args):
        pass

    def _relay(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.count("arrivals")
        self.server.released.wait(self.server.delay_s)
        upstream = http.client.HTTPConnection(self.server.upstream.hostname, self.server.upstream.port, timeout=30)
        upstream.request(self.command, self.path, body,
                         {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP})
        answer = upstream.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.server.count("answered")

    do_GET = do_POST = _relay


@pytest.fixture
def slow_aws(moto_server):
    server = SlowAws(moto_server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.release()
    server.shutdown()
    server.server_close()


@pytest.fixture
def route_timeout_s():
    """GPU_ASSIST_JUPYTER_TIMEOUT_S for the server; unset unless a test parametrizes it."""
    return None


@pytest.fixture
def jp_server_config(aws, slow_aws, route_timeout_s, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path / 'state.db'}")
    monkeypatch.setenv("GPU_ASSIST_APPROVERS", "jupyter:bob")
    monkeypatch.setenv("GPU_ASSIST_AMI_ID", "ami-12c6146b")
    monkeypatch.setenv("AWS_ENDPOINT_URL", slow_aws.url)
    if route_timeout_s is not None:
        monkeypatch.setenv(TIMEOUT_VARIABLE, str(route_timeout_s))
    return {"ServerApp": {"jpserver_extensions": {"gpu_assist.jupyter": True}, "identity_provider_class": TokenUsers}}


@pytest.fixture
def pinned(jp_serverapp, catalog):
    return pin_context(jp_serverapp, catalog, Clock())


async def _call(jp_fetch, *path, user="carol", body=None, params=None):
    """(status, JSON answer) of a route, as `user`; a POST when there is a body."""
    post = {"method": "POST", "body": json.dumps(body)} if body is not None else {}
    try:
        response = await jp_fetch("gpu-assist", "api", *path, headers=auth(user), params=params, **post)
        return response.code, json.loads(response.body)
    except HTTPClientError as error:
        return error.code, json.loads(error.response.body)


async def test_a_quote_is_answered_while_a_launch_and_the_fleet_wait_on_a_slow_aws(jp_fetch, slow_aws, pinned):
    launch = asyncio.ensure_future(_call(jp_fetch, "launch", body={"q": "8xA100 2h region=us-east-1"}))
    fleet = asyncio.ensure_future(_call(jp_fetch, "util", user="bob", params={"fleet": "1"}))
    assert await asyncio.to_thread(slow_aws.wait_for_arrivals, 2), "the launch and the fleet never reached AWS"

    code, quote = await asyncio.wait_for(_call(jp_fetch, "quote", params={"q": "8xA100 72h top=3"}), timeout=1.0)

    assert code == 200 and len(quote["options"]) == 3
    assert slow_aws.answered == 0 and not launch.done() and not fleet.done()  # both still waiting on AWS
    slow_aws.release()
    (code, record), (fleet_code, report) = await asyncio.gather(launch, fleet)
    assert code == 200 and (record["requester"], record["state"]) == ("jupyter:carol", "pending")
    assert record["spec"]["checks"]["dry_run"] == "ok"
    assert fleet_code == 200 and (report["region"], report["instances"], report["idle"]) == ("us-east-1", [], [])


@pytest.mark.parametrize("route_timeout_s", [1])
async def test_a_route_that_gets_no_answer_in_time_says_so_in_json(jp_fetch, slow_aws, pinned):
    code, late = await _call(jp_fetch, "launch", body={"q": "8xA100 2h region=us-east-1"})
    assert code == 504 and late == {
        "error": "launch got no answer within 1 s (AWS, the request store or this server is slow)",
        "hint": "the request may still be recorded once AWS has answered its checks: `requests` lists it"}
    code, fleet = await _call(jp_fetch, "util", params={"fleet": "1"})
    assert code == 504 and fleet["hint"] == "nothing was changed; try again"
    slow_aws.release()

    async def recorded():  # what the hint promised: the late launch request is recorded once AWS answers
        while not (listed := (await _call(jp_fetch, "requests"))[1]):
            await asyncio.sleep(0.05)
        return listed

    (record,) = await asyncio.wait_for(recorded(), timeout=20)
    assert (record["requester"], record["state"]) == ("jupyter:carol", "pending")


def test_the_timeout_setting_takes_seconds_or_says_what_it_takes():
    assert timeout_setting({}) is None and timeout_setting({TIMEOUT_VARIABLE: "30"}) == 30.0
    with pytest.raises(ConfigError) as raised:
        timeout_setting({TIMEOUT_VARIABLE: "soon"})
    assert str(raised.value) == (f"{TIMEOUT_VARIABLE}='soon' is not a number of seconds from 1 to 3600 — example: "
                                 f"{TIMEOUT_VARIABLE}=30 jupyter lab")
