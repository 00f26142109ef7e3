"""The Slack app's listeners in-process: signed requests handed to the Bolt app's `dispatch`, as bolt-python's own
tests do, beside the HTTP tests of the served app (tests/integration/test_slack_*.py).

No server process: the app is `create_app`'s, over a SQLite store in the test's directory; the Web API and the
`response_url`s are tests/mock_slack.py (a thread in this process). No cloud either: AWS is a local port nothing
listens on, so a dry run says "not checked" and an approved launch fails at once and is kept, as when AWS is
down; the launches themselves are the HTTP tests' (moto). Each test waits for what it expects, or drains the
app's work (`_drained`) before it asserts that nothing more happened.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import socket
import threading
import time
from decimal import Decimal
from urllib.parse import parse_qs

import pytest
from slack_bolt import BoltRequest
from slack_client import BOT_TOKEN, SIGNING_SECRET, action_body, command_body
from slack_sdk.signature import SignatureVerifier
from support import AWS_SECRET, submit_launch

from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.commands import Context
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.lifecycle import states
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.store import Store
from gpu_assist.team.watch import idle_key
from slackbot import blocks
from slackbot.app import SlackSettings, create_app, new_inbox, work_pool
from slackbot.click_store import Clicks
from slackbot.inbox import CLICK_LEASE, click_key

LAUNCH = "launch 8xA100 4h region=us-east-1"
INSTANCE = "i-0123456789abcdef0"


@pytest.fixture(scope="module")
def no_aws():
    """An AWS endpoint that refuses every connection at once: a bound port nothing listens on."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{closed.getsockname()[1]}"


@functools.cache
def _aws_client(endpoint: str):
    """boto3 clients for `endpoint`, one attempt each (a refused connection is an answer, not worth retrying),
    made once per service and region for every test: a client costs a tenth of a second to build, and is safe
    to share."""

    @functools.cache
    def client(service: str, region: str | None = None):
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            service, region_name=region or "us-east-1", endpoint_url=endpoint, aws_access_key_id="testing",
            aws_secret_access_key=AWS_SECRET, config=Config(retries={"total_max_attempts": 1}, connect_timeout=2))

    return client


class Replica:
    """One app as `slack serve` builds it, with the pools it answers `/gpu` and runs clicks on (for draining)."""

    def __init__(self, store_url: str, catalog, mock, aws_endpoint: str):
        policy = Policy(approvers=frozenset({"slack:U-ALICE", "slack:U-BOB"}), ami_id="ami-12c6146b")
        self.approvals = Approvals(Store(store_url), policy, AwsProvisioner(policy, client=_aws_client(aws_endpoint)),
                                   catalog)
        self.context = Context(catalog_loader=lambda: catalog, approvals_factory=lambda _c: self.approvals)
        self.pool, self.inbox = work_pool(), new_inbox(self.context)
        self.app = create_app(SlackSettings(bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET,
                                            api_url=mock.api_url, approval_channel="C-APPROVALS"),
                              self.context, self.pool, self.inbox)

    def send(self, body: str, **headers: str):
        """`body` as Slack signs and sends it; the app's answer (its ack)."""
        stamp = str(int(time.time()))
        signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=stamp, body=body)
        return self.app.dispatch(BoltRequest(body=body, headers={
            "content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": stamp,
            "x-slack-signature": signature, **headers}))

    def drained(self) -> None:
        """Every `/gpu` command and button this app took is done (the app serves nothing after this)."""
        self.pool.shutdown()
        self.inbox.pool.shutdown()


@pytest.fixture
def replica(mock_slack, no_aws, catalog, tmp_path):
    """`replica()`: another app on the same database (a second process or replica, as far as Slack can tell)."""
    started: list[Replica] = []

    def start() -> Replica:
        started.append(Replica(f"sqlite:///{tmp_path / 'state.db'}", catalog, mock_slack, no_aws))
        return started[-1]

    yield start
    for each in started:
        each.drained()


@pytest.fixture
def slack(replica, mock_slack):
    first = replica()
    mock_slack.clear()
    return first


def _path(mock, response_url: str) -> str:
    return response_url.split(mock.url + "/", 1)[1]


def _command(slack, mock, text: str, user: str = "U-CAROL"):
    """`/gpu <text>`: (the ack's status, its JSON or None when empty, the command's response_url)."""
    response_url = mock.response_url()
    acked = slack.send(command_body(text, user=user, response_url=response_url))
    return acked.status, json.loads(acked.body) if acked.body else None, response_url


def _deliver(slack, body: str, **headers: str) -> None:
    """A click's payload delivered: acked at once, with nothing to say."""
    acked = slack.send(body, **headers)
    assert (acked.status, acked.body) == (200, "")


def _click(slack, mock, action_id: str, value: str, user: str) -> str:
    """A button clicked; the response_url its answer goes to."""
    response_url = mock.response_url()
    _deliver(slack, action_body(action_id, value, user=user, response_url=response_url))
    return response_url


def _posts_to(mock, response_url: str) -> list[dict]:
    return [r["params"] for r in mock.calls(_path(mock, response_url)) if r["method"] == _path(mock, response_url)]


def _answer(mock, response_url: str) -> dict:
    mock.wait_for(_path(mock, response_url))
    (answer,) = _posts_to(mock, response_url)
    return answer


def _card_id(card: dict) -> str:
    return next(b for b in card["params"]["blocks"] if b["type"] == "actions")["elements"][0]["value"]


def _cards(mock) -> list[dict]:
    return [c for c in mock.calls("chat.postMessage") if "blocks" in c["params"]]


def test_a_quote_is_acked_empty_then_answered_with_its_card(slack, mock_slack):
    status, ack, response_url = _command(slack, mock_slack, "quote 8xA100 72h")
    assert (status, ack) == (200, None)  # a quote takes milliseconds: no "Working on…" before it
    command = parse_command("quote 8xA100 72h", slack.context.catalog.gpus)
    text, card = blocks.message(run(command, slack.context, actor="slack:U-CAROL"), command=command,
                                launches=slack.approvals.policy.allowed_providers)
    assert _answer(mock_slack, response_url) == {"text": text, "blocks": card, "response_type": "ephemeral",
                                                 "replace_original": False}
    offered = {json.loads(b["accessory"]["value"])["option"].split(":")[0] for b in card if "accessory" in b}
    assert offered == {"aws"}  # Request launch only where the policy lets a launch go (AWS alone here)


def test_a_slow_command_acks_working_on_and_its_answer_replaces_that(slack, mock_slack):
    status, ack, response_url = _command(slack, mock_slack, "recommend train 7B tokens=1T")
    assert (status, ack) == (200, {"response_type": "ephemeral",
                                   "text": "Working on `/gpu recommend train 7B tokens=1T`…"})
    answer = _answer(mock_slack, response_url)
    assert answer["replace_original"] is True and answer["blocks"][0]["text"]["text"].startswith("Plan: train 7B")


def test_bad_input_is_answered_in_the_ack_and_nothing_runs(slack, mock_slack):
    status, ack, _ = _command(slack, mock_slack, "quote 8xA1000 72h")
    assert status == 200 and ack["response_type"] == "ephemeral"
    assert ack["text"].startswith("unknown GPU 'A1000'") and "example: " in ack["text"]
    slack.drained()
    assert mock_slack.received == []


def test_a_launch_is_carded_for_the_approvers_and_the_requester_told_where(slack, mock_slack):
    status, ack, response_url = _command(slack, mock_slack, LAUNCH)
    assert (status, ack["text"]) == (200, f"Working on `/gpu {LAUNCH}`…")
    (card,) = mock_slack.wait_for("chat.postMessage")
    request_id = _card_id(card)
    assert card["params"]["channel"] == "C-APPROVALS"
    assert card["params"]["text"] == f"launch request {request_id} from <@U-CAROL> needs an approver"
    assert "Dry run: not checked: cannot reach AWS" in card["params"]["blocks"][0]["text"]["text"]
    assert _answer(mock_slack, response_url)["text"] == \
        f"Request `{request_id}` is waiting for an approver in <#C-APPROVALS>."
    assert slack.approvals.store.get(request_id).card_channel == "C-APPROVALS"  # what follows goes to its thread


def _pending_launch(slack, mock) -> str:
    _command(slack, mock, LAUNCH)
    (card,) = mock.wait_for("chat.postMessage")
    mock.clear()
    return _card_id(card)


def test_the_requester_cannot_approve_their_own_request(slack, mock_slack):
    request_id = _pending_launch(slack, mock_slack)
    _click(slack, mock_slack, blocks.APPROVE, request_id, "U-CAROL")
    (refusal,) = mock_slack.wait_for("chat.postEphemeral")
    assert refusal["params"] == {"channel": "C-APPROVALS", "user": "U-CAROL",
                                 "text": "Not done: requesters cannot approve or reject their own request"}
    slack.drained()
    assert [c["method"] for c in mock_slack.received if not c["method"].startswith("response/")] == \
        ["chat.postEphemeral"]
    assert slack.approvals.store.get(request_id).state == "pending"
    assert ("approve", "refused", "slack:U-CAROL") in [(e.action, e.outcome, e.actor)
                                                        for e in slack.approvals.store.audit_trail(request_id)]


def test_another_approver_approves_and_the_card_shows_the_outcome_in_its_thread(slack, mock_slack):
    request_id = _pending_launch(slack, mock_slack)
    _click(slack, mock_slack, blocks.APPROVE, request_id, "U-BOB")
    launching, outcome = mock_slack.wait_for("chat.update", 2)
    assert launching["params"]["text"] == f"{request_id}: Approved by <@U-BOB> — launching…"
    record = slack.approvals.store.get(request_id)
    assert (record.state, record.approver) == ("failed", "slack:U-BOB")  # no cloud here: kept, for `reconcile`
    line = f"Approved by <@U-BOB> — {blocks.outcome_line(record)}"
    assert line.startswith("Approved by <@U-BOB> — Failed: cannot reach AWS")
    assert outcome["params"]["text"] == f"{request_id}: {line}"
    assert outcome["params"]["blocks"][-1] == {"type": "context", "elements": [{"type": "mrkdwn", "text": line}]}
    (told,) = mock_slack.wait_for("chat.postMessage")
    assert told["params"] == {"channel": "C-APPROVALS", "thread_ts": "1700000000.000001",
                              "text": f"<@U-CAROL> {request_id}: {line}"}


def test_another_approver_rejects(slack, mock_slack):
    request_id = _pending_launch(slack, mock_slack)
    _click(slack, mock_slack, blocks.REJECT, request_id, "U-ALICE")
    (told,) = mock_slack.wait_for("chat.postMessage")
    assert told["params"]["text"] == f"<@U-CAROL> {request_id}: Rejected by <@U-ALICE>"
    (card,) = mock_slack.calls("chat.update")
    assert card["params"]["text"] == f"{request_id}: Rejected by <@U-ALICE>"
    assert not [b for b in card["params"]["blocks"] if b["type"] == "actions"]  # no buttons left to click
    assert slack.approvals.store.get(request_id).state == "rejected"


def test_someone_not_an_approver_cannot_decide(slack, mock_slack):
    request_id = _pending_launch(slack, mock_slack)
    _click(slack, mock_slack, blocks.REJECT, request_id, "U-MALLORY")
    (refusal,) = mock_slack.wait_for("chat.postEphemeral")
    assert refusal["params"]["text"] == "Not done: slack:U-MALLORY is not an approver"
    assert slack.approvals.store.get(request_id).state == "pending"


def _run_then_die(slack, mock, action_id: str, request_id: str, user: str) -> str:
    """A click recorded and run by a process that died after its decision and answer, before it could mark the click
    done: its row names an owner on another host whose lease is over. The click's key."""
    payload = json.loads(parse_qs(action_body(action_id, request_id, user=user, response_url=mock.response_url())
                                  )["payload"][0])
    action, name, now = payload["actions"][0], {blocks.APPROVE: "approve", blocks.REJECT: "reject"}[action_id], \
        slack.approvals.clock()
    key = click_key(payload, action)
    assert Clicks(slack.approvals.store).receive(key, name, {"payload": payload, "action": action},
                                                 owner="elsewhere:4242:1/dead", until=now, now=now,
                                                 actor=f"slack:{user}", request_id=request_id, detail=action_id)
    slack.inbox.handlers[name](payload, action, lambda **_: None)  # its first run, up to where the process died
    return key


@pytest.mark.parametrize("action_id, user, decided_before, decision", [
    (blocks.APPROVE, "U-BOB", False, ("approve", "ok")),
    (blocks.REJECT, "U-ALICE", False, ("reject", "ok")),
    (blocks.APPROVE, "U-CAROL", False, ("approve", "refused")),  # the requester's own request
    (blocks.APPROVE, "U-ALICE", True, ("approve", "refused")),  # approved already, by U-BOB
], ids=["approve", "reject", "own request", "approved already"])
def test_a_click_run_again_after_its_process_died_past_the_decision_decides_once(slack, replica, mock_slack,
                                                                                 action_id, user, decided_before,
                                                                                 decision):
    request_id = _pending_launch(slack, mock_slack)
    if decided_before:
        slack.approvals.approve(request_id, "slack:U-BOB")
    key = _run_then_die(slack, mock_slack, action_id, request_id, user)
    slack.drained()
    leader = replica()  # the jobs leader's round, in another process
    store, before = slack.approvals.store, [c["method"] for c in mock_slack.received]
    assert leader.inbox.recover() == 1
    leader.drained()
    assert leader.inbox.recover() == 0  # done now
    trail = store.audit_trail(request_id)
    clicked = [(e.action, e.outcome) for e in trail if e.actor == f"slack:{user}" and e.action in (
        "click", "approve", "reject")]
    assert clicked == [("click", "received"), decision]
    assert store.caused_by(key) == next(e for e in trail if (e.actor, e.action) == (f"slack:{user}", decision[0]))
    after = [c["method"] for c in mock_slack.received][len(before):]
    if decision[1] == "refused":  # told again, in the same words; nothing else
        first, again = mock_slack.calls("chat.postEphemeral")
        assert after == ["chat.postEphemeral"] and again["params"] == first["params"]
    else:  # carried out and announced once, by the first run: the second changes and posts nothing
        assert after == [] and [e.action for e in trail].count("announce") == 1
        assert store.get(request_id).state == ("failed" if decision[0] == "approve" else "rejected")


def _more_button(answer: dict) -> dict:
    return next(e for b in answer["blocks"] if b["type"] == "actions" for e in b["elements"]
                if e["action_id"] == blocks.QUOTE_MORE)


def test_more_shows_the_next_rows_of_the_quote_it_carries(slack, mock_slack):
    _, _, response_url = _command(slack, mock_slack, "quote 1xA100 72h top=3")
    more = _more_button(_answer(mock_slack, response_url))
    page = _answer(mock_slack, _click(slack, mock_slack, blocks.QUOTE_MORE, more["value"], "U-CAROL"))
    command, start = blocks.read_more(more["value"])
    text, expected = blocks.more_message(run(command, slack.context, actor="slack:U-CAROL"), command, start,
                                         slack.approvals.policy.allowed_providers)
    assert page == {"text": text, "blocks": expected, "response_type": "ephemeral", "replace_original": False}
    assert expected[0]["text"]["text"].endswith("(from #4)")


def test_an_out_of_date_more_button_says_so(slack, mock_slack):
    answer = _answer(mock_slack, _click(slack, mock_slack, blocks.QUOTE_MORE, "quote 1xA100 72h", "U-CAROL"))
    assert answer == {"text": "That button is out of date.", "response_type": "ephemeral", "replace_original": False}


def _launch_button(slack, mock) -> dict:
    _, _, response_url = _command(slack, mock, "quote 8xA100 72h")
    return next(b["accessory"] for b in _answer(mock, response_url)["blocks"] if "accessory" in b)


def test_a_quote_rows_launch_button_requests_that_launch(slack, mock_slack):
    button = _launch_button(slack, mock_slack)
    told = _answer(mock_slack, _click(slack, mock_slack, button["action_id"], button["value"], "U-CAROL"))
    (card,) = mock_slack.wait_for("chat.postMessage")
    assert told["text"] == f"Request `{_card_id(card)}` is waiting for an approver."
    record = slack.approvals.store.get(_card_id(card))
    assert (record.requester, record.spec.duration_s) == ("slack:U-CAROL", 72 * 3600)


def test_a_retried_launch_button_requests_once_on_another_replica_too(slack, replica, mock_slack):
    button = _launch_button(slack, mock_slack)
    other = replica()
    response_url = mock_slack.response_url()
    click = action_body(button["action_id"], button["value"], user="U-CAROL", response_url=response_url)
    _deliver(slack, click)
    _answer(mock_slack, response_url)
    for number, delivered_to in (("1", other), ("2", slack)):  # Slack's retries of the same click, same body
        _deliver(delivered_to, click, **{"x-slack-retry-num": number})
    other.drained()
    slack.drained()
    assert len(_cards(mock_slack)) == 1 and len(slack.approvals.store.list()) == 1
    assert len(_posts_to(mock_slack, response_url)) == 1
    # Clicked again, the same button asks again (a new trigger_id and action_ts): the claim is per click
    again = replica()
    _answer(mock_slack, _click(again, mock_slack, button["action_id"], button["value"], "U-CAROL"))
    assert len(slack.approvals.store.list()) == 2


def _running_launch(slack) -> str:
    """A launch of U-CAROL's, approved by U-BOB and running as INSTANCE, with a standing idle alert."""
    approvals, store = slack.approvals, slack.approvals.store
    record = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1")
    now = approvals.clock()
    store.transition(record.id, states.APPROVE, actor="slack:U-BOB", now=now, approver="slack:U-BOB",
                     decided_at=now)
    store.transition(record.id, states.LAUNCH, actor="slack:U-BOB", now=now)
    store.transition(record.id, states.RUNNING, actor="slack:U-BOB", now=now, instance_ids=[INSTANCE],
                     ends_at=now + dt.timedelta(hours=4))
    store.set_card(record.id, "C-APPROVALS", "1700000000.000009")
    assert store.post_once(idle_key(INSTANCE), "idle", now=now, request_id=record.id)
    return record.id


def test_keep_snoozes_the_idle_alert(slack, mock_slack):
    launch_id = _running_launch(slack)
    answer = _answer(mock_slack, _click(slack, mock_slack, blocks.IDLE_KEEP, INSTANCE, "U-CAROL"))
    assert answer["text"] == "Kept: no idle alert for 4 h."
    assert slack.approvals.store.notice(idle_key(INSTANCE))["until"] > slack.approvals.clock()
    assert ("keep idle 4h", "ok") in [(e.action, e.outcome) for e in slack.approvals.store.audit_trail(launch_id)]


def test_extend_ttl_requests_an_extension_once_however_often_slack_delivers_the_click(slack, mock_slack):
    launch_id = _running_launch(slack)
    response_url = mock_slack.response_url()
    click = action_body(blocks.IDLE_EXTEND, launch_id, user="U-CAROL", response_url=response_url)
    _deliver(slack, click)
    told = _answer(mock_slack, response_url)
    (card,) = _cards(mock_slack)
    extension = slack.approvals.store.get(_card_id(card))
    assert told["text"] == f"Extension request `{extension.id}`: pending"
    assert (extension.kind, extension.spec.launch_request, extension.spec.extra_s) == ("extend", launch_id, 86400)
    assert extension.estimated_cost > Decimal(0)
    _deliver(slack, click, **{"x-slack-retry-num": "1"})
    slack.drained()
    assert len(_posts_to(mock_slack, response_url)) == 1  # the retry said nothing, asked nothing
    assert [r.kind for r in slack.approvals.store.list()].count("extend") == 1


@pytest.mark.parametrize("action_id", [blocks.IDLE_STOP, blocks.IDLE_EXTEND])
def test_an_idle_alert_is_acted_on_only_by_its_requester_or_an_approver(slack, mock_slack, action_id):
    launch_id = _running_launch(slack)
    value = INSTANCE if action_id == blocks.IDLE_STOP else launch_id
    answer = _answer(mock_slack, _click(slack, mock_slack, action_id, value, "U-MALLORY"))
    assert answer["text"] == (f"Not done: slack:U-MALLORY neither launched {value} nor is an approver: "
                              "ask the requester or an approver")
    assert [r.id for r in slack.approvals.store.list()] == [launch_id]


def test_a_quote_with_its_data_is_carded_with_whole_totals_and_more_keeps_the_data(slack, mock_slack):
    """The whole bill (#33) in Slack: the same grammar words, the card's prices are whole totals with the disk and
    data part, and the More button carries the job's data to the next page."""
    words = "quote 1xA100 72h disk=2TB data-out=140GB top=3"
    _, _, response_url = _command(slack, mock_slack, words)
    answer = _answer(mock_slack, response_url)
    assert "disk+data " in answer["blocks"][1]["text"]["text"]
    more = _more_button(answer)
    command, _ = blocks.read_more(more["value"])
    assert command.job_data == parse_command(words, slack.context.catalog.gpus).job_data


def test_a_launch_click_whose_owner_stalls_before_its_submit_requests_once_when_taken_over(slack, replica,
                                                                                          mock_slack):
    """The first run of a Request launch click is paused inside its submit (its dry run), as a process that died or
    stalled after the click was recorded: the jobs leader takes the click over once its lease is over and makes the
    request; when the first run goes on, it finds the request made and makes, and cards, nothing more."""
    button = _launch_button(slack, mock_slack)
    paused, go_on, dry_run = threading.Event(), threading.Event(), slack.approvals.provisioner.dry_run

    def stalled_dry_run(spec):
        paused.set()
        assert go_on.wait(60), "the test never let the first run go on"
        return dry_run(spec)

    slack.approvals.provisioner.dry_run = stalled_dry_run
    response_url = mock_slack.response_url()
    _deliver(slack, action_body(button["action_id"], button["value"], user="U-CAROL", response_url=response_url))
    assert paused.wait(60)
    store, leader = slack.approvals.store, replica()
    assert leader.inbox.recover() == 0  # its owner's lease is not over
    later = dt.datetime.now(dt.timezone.utc) + CLICK_LEASE
    leader.approvals.clock = lambda: later
    assert leader.inbox.recover() == 1
    leader.drained()
    (request,) = store.list()  # not lost: the leader made it while the first run stood still
    (card,) = _cards(mock_slack)
    assert _card_id(card) == request.id and store.get(request.id).card_ts
    go_on.set()
    slack.drained()
    assert [r.id for r in store.list()] == [request.id] and len(_cards(mock_slack)) == 1  # and made once
    told = [post["text"] for post in _posts_to(mock_slack, response_url)]
    assert told == [f"Request `{request.id}` is waiting for an approver."] * 2
    assert [(e.action, e.outcome) for e in store.audit_trail(request.id)] == [("submit", "ok")]
