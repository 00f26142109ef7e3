"""≥ 1,000 generated bad requests against the running Slack server: every one refused with the right status,
no Web API call, no state change; refused-but-authenticated actions are audited."""

from __future__ import annotations

import json
import random
import time
from urllib.parse import urlencode

import sqlalchemy

from slack_client import SIGNING_SECRET, action_body, command_body, settle, signed_post


def _state_rows(db_url: str) -> tuple[int, int]:
    from gpu_assist.store import Store

    engine = Store(db_url).engine  # creates the schema if the server has not yet
    with engine.connect() as connection:
        requests = connection.execute(sqlalchemy.text("SELECT count(*) FROM requests")).scalar()
        audits = connection.execute(sqlalchemy.text("SELECT count(*) FROM audit_events")).scalar()
    engine.dispose()
    return requests, audits



def _bad_requests(mock, rng: random.Random, count: int):
    """(name, body, kwargs for signed_post, expected status) for every kind of forgery, `count` in all."""
    from slack_sdk.signature import SignatureVerifier

    verifier = SignatureVerifier(SIGNING_SECRET)
    kinds = []
    for n in range(count):
        text = rng.choice(["launch 8xA100 4h", "quote 8xA100 72h", "stop i-0123456789abcdef0", "requests"])
        body = command_body(text, user=f"U-{n}", response_url=mock.response_url())
        now = int(time.time())
        kind = n % 10
        if kind == 0:
            kinds.append(("wrong secret", body, {"secret": f"guess-{n}"}, 401))
        elif kind == 1:
            kinds.append(("missing headers", body, {"signature": "", "timestamp": 0}, 401))
        elif kind == 2:
            kinds.append(("timestamp skew", body, {"timestamp": now - rng.randint(301, 10**6)}, 401))
        elif kind == 3:
            kinds.append(("future timestamp", body, {"timestamp": now + rng.randint(301, 10**6)}, 401))
        elif kind == 4:
            signature = verifier.generate_signature(timestamp=str(now), body=body)
            kinds.append(("tampered body", body.replace("U-", "U-X"), {"timestamp": now, "signature": signature}, 401))
        elif kind == 5:
            old = command_body("quote 8xA100 1h", user="U-OLD", response_url=mock.response_url())
            signature = verifier.generate_signature(timestamp=str(now), body=old)
            kinds.append(("replayed signature, new body", body, {"timestamp": now, "signature": signature}, 401))
        elif kind == 6:
            kinds.append(("huge body", "text=" + "x" * (2 << 20), {}, (413, 0)))  # 413, or closed mid-upload
        elif kind == 7:
            kinds.append(("malformed payload JSON (unsigned)", urlencode({"payload": "{not json"}),
                          {"secret": "nope"}, 401))
        elif kind == 8:
            kinds.append(("signature of another scheme", body, {"signature": "v1=" + "0" * 64}, 401))
        else:
            kinds.append(("empty signature body pair", "", {"secret": "nope"}, 401))
    return kinds


def test_forged_requests_are_refused_without_side_effects(slack_server, mock_slack, aws, record_case):
    mock_slack.clear()
    db_url = slack_server["env"]["GPU_ASSIST_DB_URL"]
    before = _state_rows(db_url)
    rng = random.Random(20261202)
    cases = _bad_requests(mock_slack, rng, 1000)
    wrong = []
    for name, body, kwargs, expected in cases:
        status, _ = signed_post(slack_server["url"], body, **kwargs)
        if status not in (expected if isinstance(expected, tuple) else (expected,)):
            wrong.append((name, status, expected))
    marker = settle(slack_server["url"], mock_slack)
    calls = len([r for r in mock_slack.received if r["method"] != marker])
    after = _state_rows(db_url)
    record_case("Slack request forgery (unauthenticated)", tried=len(cases), refused=len(cases) - len(wrong),
                side_effects=calls + (after[0] - before[0]) + (after[1] - before[1]),
                note="wrong secret, missing headers, ±skew > 300 s, tampered and replayed bodies, 2 MiB bodies")
    assert wrong == []
    assert calls == 0 and after == before


def test_signed_but_meaningless_requests_change_nothing(slack_server, mock_slack, aws, record_case):
    mock_slack.clear()
    db_url = slack_server["env"]["GPU_ASSIST_DB_URL"]
    before = _state_rows(db_url)
    url = slack_server["url"]
    tried = refused = 0
    outcomes = []
    # Non-UTF-8 bodies and malformed JSON payloads, properly signed.
    malformed = ["text=%FF%FE%00", "payload=%7Bnot+json", "payload=%5B%5D", "command=%2Fgpu&text=" + "%80" * 10]
    for body in malformed:
        status, _ = signed_post(url, body)
        tried += 1
        refused += status == 400
        outcomes.append(status)
    status, _ = signed_post(url, "payload=" + json.dumps({"type": "block_actions"}))  # well formed, meaningless
    tried += 1
    refused += status in (200, 404)
    outcomes.append(status)
    # Actions that do not exist.
    for n in range(20):
        status, _ = signed_post(url, action_body(f"no_such_action_{n}", "x", user="U-BOB",
                                                 response_url=mock_slack.response_url()))
        tried += 1
        refused += status == 404
        outcomes.append(status)
    first_marker = settle(url, mock_slack)
    no_calls = len([r for r in mock_slack.received if r["method"] != first_marker])
    # Approve / reject for requests that do not exist: authenticated, refused, audited, only the clicker told.
    for n in range(20):
        action = "approve_request" if n % 2 else "reject_request"
        signed_post(url, action_body(action, f"r-{n:012x}", user="U-BOB", response_url=mock_slack.response_url()))
        tried += 1
    ephemerals = mock_slack.wait_for("chat.postEphemeral", 20)
    refused += len(ephemerals)
    marker = settle(url, mock_slack)
    other_calls = [r for r in mock_slack.received if r["method"] not in ("chat.postEphemeral", first_marker, marker)]
    after = _state_rows(db_url)
    record_case("Slack signed but invalid (non-UTF-8, bad JSON, unknown actions, unknown requests)", tried=tried,
                refused=refused, side_effects=no_calls + len(other_calls) + (after[0] - before[0]),
                note="refusals to unknown requests are ephemeral to the clicker and audited")
    assert outcomes[:4] == [400, 400, 400, 400] and all(status in (200, 404) for status in outcomes[4:]), outcomes
    assert no_calls == 0 and other_calls == []
    assert after[0] == before[0]  # no request created or changed
    assert after[1] - before[1] == 2 * 20  # each click received, and each refused decision, is in the audit log
    assert all("no request r-" in r["params"]["text"] for r in ephemerals)
