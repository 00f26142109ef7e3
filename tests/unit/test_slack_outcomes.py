"""Outcomes announced once (`slackbot/outcomes.py`), in-process: the jobs leader's sweep announces what nobody did,
leaves alone what the decider's click announced, and takes over a claim whose posts a crash interrupted once its
lease is over. SQLite store, an injected clock, tests/mock_slack.py for the Web API; no cloud is needed, as the
outcomes here are rejections (AWS is a local port nothing listens on, so the checks before approval say "not
checked")."""

from __future__ import annotations

import socket

import pytest
from slack_client import BOT_TOKEN
from slack_sdk import WebClient
from support import Clock, submit_launch

from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.store import Store
from slackbot.outcomes import OUTCOME, POSTING, announce, announce_pending

CARD = ("C-APPROVALS", "1700000000.000042")


@pytest.fixture
def approvals(tmp_path, catalog):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"

        def client(service, region=None):
            import boto3
            from botocore.config import Config

            return boto3.session.Session().client(service, region_name=region or "us-east-1", endpoint_url=endpoint,
                                                  aws_access_key_id="testing", aws_secret_access_key="testing",
                                                  config=Config(retries={"total_max_attempts": 1}, connect_timeout=2))

        policy = Policy(approvers=frozenset({"slack:U-ALICE", "slack:U-BOB"}), ami_id="ami-12c6146b")
        yield Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy, AwsProvisioner(policy, client=client),
                        catalog, Clock())


@pytest.fixture
def client(mock_slack):
    mock_slack.clear()
    return WebClient(token=BOT_TOKEN, base_url=mock_slack.api_url)


def _rejected_with_a_card(approvals) -> str:
    request_id = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1").id
    approvals.store.set_card(request_id, *CARD)
    approvals.reject(request_id, "slack:U-ALICE")
    return request_id


def test_the_sweep_announces_an_unannounced_outcome_once(approvals, client, mock_slack):
    request_id = _rejected_with_a_card(approvals)
    assert announce_pending(approvals, client, "C-APPROVALS") == [request_id]
    assert announce_pending(approvals, client, "C-APPROVALS") == []
    (update,) = mock_slack.calls("chat.update")
    assert (update["params"]["channel"], update["params"]["ts"]) == CARD
    assert update["params"]["text"] == f"{request_id}: Rejected by <@U-ALICE>"
    (told,) = mock_slack.calls("chat.postMessage")
    assert told["params"] == {"channel": CARD[0], "thread_ts": CARD[1],
                              "text": f"<@U-CAROL> {request_id}: Rejected by <@U-ALICE>"}


def test_an_outcome_the_decider_announced_is_not_announced_again(approvals, client, mock_slack):
    request_id = _rejected_with_a_card(approvals)
    assert announce(approvals, client, approvals.store.fetch(request_id), fallback_channel=None, card=CARD)
    assert announce_pending(approvals, client, "C-APPROVALS") == []
    assert not announce(approvals, client, approvals.store.fetch(request_id), fallback_channel=None, card=CARD)
    assert len(mock_slack.calls("chat.update")) == len(mock_slack.calls("chat.postMessage")) == 1


def test_a_claim_whose_posts_a_crash_interrupted_is_taken_again_after_its_lease(approvals, client, mock_slack):
    request_id = _rejected_with_a_card(approvals)
    now = approvals.clock()
    assert approvals.store.post_once(f"{OUTCOME}:{request_id}", OUTCOME, now=now, until=now + POSTING)  # then died
    assert announce_pending(approvals, client, "C-APPROVALS") == []
    approvals.clock.advance(seconds=POSTING.total_seconds())
    assert announce_pending(approvals, client, "C-APPROVALS") == [request_id]
    assert announce_pending(approvals, client, "C-APPROVALS") == []
    assert len(mock_slack.calls("chat.update")) == len(mock_slack.calls("chat.postMessage")) == 1


def test_a_request_still_being_carried_out_is_not_announced(approvals, client, mock_slack):
    request_id = submit_launch(approvals, "slack:U-CAROL", "8xA100 4h region=us-east-1").id
    approvals.store.set_card(request_id, *CARD)
    assert announce_pending(approvals, client, "C-APPROVALS") == []  # pending: no outcome yet
    assert mock_slack.calls("chat.update") == []
