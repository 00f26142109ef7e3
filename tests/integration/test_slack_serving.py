"""Ack first, then work: through the real server process with a small pool (2 threads, no queue).

A slow Slack (the mock waits before answering one `response_url`) holds a pool thread as long as it likes,
so "the pool is busy" is a fact of the test, not a guess about how long a computation takes on this machine.
"""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from slack_client import command_body, signed_post, start_slack_server

SLOW_S = 3.0


@pytest.fixture(scope="module")
def small_pool(moto_server, mock_slack, tmp_path_factory):
    process, info = start_slack_server(moto_server, mock_slack, tmp_path_factory.mktemp("small-pool"),
                                       extra_env={"GPU_ASSIST_SLACK_WORKERS": "2", "GPU_ASSIST_SLACK_QUEUE": "0"})
    yield info
    process.terminate()
    process.wait(timeout=10)


def _wait_until_idle(server, timeout: float = 20.0) -> None:
    """Until no place of the pool is taken (`/healthz` counts them): a test starts with the whole pool free,
    not with the last test's answer still on its way out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _health(server)["work"] == 0:
            return
        time.sleep(0.02)
    raise AssertionError("the pool did not empty")


@pytest.fixture
def slack(small_pool, mock_slack):
    _wait_until_idle(small_pool)
    mock_slack.clear()
    mock_slack.slow.clear()
    yield small_pool
    mock_slack.slow.clear()


def _health(server) -> dict:
    with urllib.request.urlopen(server["base"] + "/healthz", timeout=5) as response:
        return json.loads(response.read())


def _path(mock, response_url: str) -> str:
    return response_url.split(mock.url + "/", 1)[1]


def _answers(mock, response_url: str) -> list[dict]:
    """What reached exactly this `response_url` (the mock's `calls` matches by prefix)."""
    path = _path(mock, response_url)
    with mock._lock:
        return [r for r in mock.received if r["method"] == path]


def _wait(mock, response_url: str, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _answers(mock, response_url)
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError(f"no answer at {response_url}")


def _send(slack, mock, text: str, *, slow: bool = False, headers: dict | None = None, response_url=None):
    response_url = response_url or mock.response_url()
    if slow:
        mock.slow[_path(mock, response_url)] = SLOW_S
    started = time.monotonic()
    status, body = signed_post(slack["url"], command_body(text, user="U-CAROL", response_url=response_url),
                               headers=headers)
    return status, body, response_url, time.monotonic() - started


def test_a_slow_command_does_not_delay_a_fast_ones_ack_or_answer(slack, mock_slack):
    status, body, slow_url, _ = _send(slack, mock_slack, "recommend train 70B tokens=1T deadline=30d", slow=True)
    assert status == 200 and "Working on" in body
    status, body, fast_url, ack_s = _send(slack, mock_slack, "quote 8xH100 24h")
    assert status == 200 and body == "" and ack_s < 0.5
    fast = _wait(mock_slack, fast_url)
    assert _answers(mock_slack, slow_url) == []  # the slow answer is still on its way
    assert fast["params"]["text"].startswith(tuple("0123456789"))  # "N options for …"
    slow = _wait(mock_slack, slow_url)
    assert slow["params"]["replace_original"] is True and slow["at"] > fast["at"]


def test_a_full_pool_answers_busy_and_recovers(slack, mock_slack):
    held = [_send(slack, mock_slack, f"quote {n}xA100 72h", slow=True)[2] for n in (1, 2)]
    for url in held:  # both pool threads are now waiting on the slow Slack
        mock_slack.wait_for_arrivals(_path(mock_slack, url), 1)
    status, body, refused_url, ack_s = _send(slack, mock_slack, "quote 8xA100 72h")
    assert status == 200 and ack_s < 0.5
    assert json.loads(body) == {"response_type": "ephemeral", "text": "gpu-assist is busy, try again in a moment."}
    assert _health(slack)["busy"] >= 1  # counted
    for url in held:
        _wait(mock_slack, url, SLOW_S + 10)
    status, body, later_url, _ = _send(slack, mock_slack, "quote 8xA100 72h")
    assert status == 200 and body == ""
    _wait(mock_slack, later_url)
    assert _answers(mock_slack, refused_url) == []  # the refused one was never run


def test_a_slack_retry_of_a_command_already_taken_runs_once(slack, mock_slack):
    status, _, response_url, _ = _send(slack, mock_slack, "quote 4xL4 10h", slow=True)
    assert status == 200
    for number in ("1", "2"):  # Slack retries after 3 s without an answer, with the same body
        status, body, _, _ = _send(slack, mock_slack, "quote 4xL4 10h", response_url=response_url,
                                   headers={"X-Slack-Retry-Num": number, "X-Slack-Retry-Reason": "http_timeout"})
        assert status == 200 and body == ""
    _wait(mock_slack, response_url, SLOW_S + 10)
    # A second run would have reached the slow Slack while the first waited there SLOW_S seconds: none did.
    with mock_slack._lock:
        assert mock_slack.arrivals.count(_path(mock_slack, response_url)) == 1


def test_a_retry_this_process_never_saw_is_run(slack, mock_slack):
    """A retry after the first attempt was lost (e.g. the replica that took it died) must still be answered."""
    status, _, response_url, _ = _send(slack, mock_slack, "quote 2xA10G 5h", headers={"X-Slack-Retry-Num": "1"})
    assert status == 200
    _wait(mock_slack, response_url)
