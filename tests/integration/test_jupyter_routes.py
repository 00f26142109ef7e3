"""The server extension's routes on a real jupyter_server (pytest-jupyter's jp_fetch)."""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_context import pin_context
from support import Clock


@pytest.fixture
def jp_server_config(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path / 'state.db'}")
    return {"ServerApp": {"jpserver_extensions": {"gpu_assist.jupyter": True}}}


@pytest.mark.clock
async def test_quote_route_returns_the_json_renderers_options(jp_fetch, catalog):
    response = await jp_fetch("gpu-assist", "api", "quote", params={"q": "8xA100 72h top=3"})
    assert response.code == 200
    options = json.loads(response.body)["options"]
    assert len(options) == 3 and options[0]["gpu"] == "A100"
    assert [o["total"] for o in options] == sorted(o["total"] for o in options)
    assert options[0]["group"] == f"{options[0]['provider']}/{options[0]['instance_type']}"


@pytest.mark.clock
async def test_a_quote_with_its_data_gives_each_options_parts(jp_fetch):
    """The whole bill (#33) through the notebook's route: the same words, the parts as fields."""
    response = await jp_fetch("gpu-assist", "api", "quote", params={"q": "8xA100 72h aws disk=2TB top=3"})
    options = json.loads(response.body)["options"]
    assert options and all({"storage_total", "transfer_total", "job_total", "parts_known"} <= set(o) for o in options)
    assert options[0]["parts_known"] and options[0]["storage_total"] > 0


@pytest.mark.clock
async def test_an_empty_quote_carries_its_reason(jp_fetch):
    response = await jp_fetch("gpu-assist", "api", "quote", params={"q": "8xH100 1mo monthly"})
    answer = json.loads(response.body)
    assert answer["options"] == []
    assert answer["empty_reason"].startswith("no monthly prices for H100 in the catalogs; on-demand from $")


@pytest.mark.clock
async def test_post_and_other_routes(jp_fetch):
    response = await jp_fetch("gpu-assist", "api", "recommend", method="POST",
                              body=json.dumps({"q": "finetune 7B lora top=2"}))
    assert len(json.loads(response.body)["plans"]) == 2
    util = json.loads((await jp_fetch("gpu-assist", "api", "util")).body)
    assert util["gpus"] == [] and util["reason"]
    assert json.loads((await jp_fetch("gpu-assist", "api", "requests")).body) == []


async def test_bad_input_is_400_with_the_message(jp_fetch):
    with pytest.raises(HTTPClientError) as raised:
        await jp_fetch("gpu-assist", "api", "quote", params={"q": "8xA1000 72h"})
    assert raised.value.code == 400
    assert json.loads(raised.value.response.body) == {
        "error": "unknown GPU 'A1000' — did you mean A100? — example: 8xA100 72h", "hint": "did you mean A100?",
        "example": "8xA100 72h"}


async def test_routes_require_authentication(jp_fetch):
    with pytest.raises(HTTPClientError) as raised:
        await jp_fetch("gpu-assist", "api", "quote", params={"q": "8xA100 72h"}, headers={"Authorization": ""})
    assert raised.value.code == 403


class _BrokenSampler:
    """A GPU sampler with a bug in it: what no route may turn into a traceback or a bare 500."""

    def sample(self):
        raise RuntimeError("sampler bug: index 3 out of range")


async def test_a_bug_is_a_json_500_with_one_line_and_the_traceback_only_in_the_log(jp_fetch, jp_serverapp, catalog):
    pin_context(jp_serverapp, catalog, Clock(), sampler_factory=_BrokenSampler)
    with pytest.raises(HTTPClientError) as raised:
        await jp_fetch("gpu-assist", "api", "util")
    assert raised.value.code == 500 and json.loads(raised.value.response.body) == {
        "error": "gpu-assist failed to answer util (an internal error)",
        "hint": "the Jupyter server's log has the details"}
    quote = await jp_fetch("gpu-assist", "api", "quote", params={"q": "8xA100 72h top=1"})
    assert quote.code == 200  # the server goes on serving
