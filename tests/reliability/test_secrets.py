"""Secrets never reach a log line, a message, an audit entry or an error text."""

from __future__ import annotations

import sqlalchemy

from gpu_assist.aws import explain
from slack_client import BOT_TOKEN, SIGNING_SECRET, command_body, signed_post
from support import AWS_SECRET

SECRETS = (BOT_TOKEN, SIGNING_SECRET, AWS_SECRET)


def test_server_log_messages_and_audit_hold_no_secret(slack_server, mock_slack, aws, record_case):
    # Exercise the paths that talk about credentials and failures.
    for text in ("launch 8xA100 4h region=us-east-1", "quote 8xA1000 1h", "util", "requests", "stop i-0123456789abcdef0"):
        signed_post(slack_server["url"], command_body(text, user="U-CAROL", response_url=mock_slack.response_url()))
    mock_slack.wait_for("response/", 3)
    sent = "\n".join(str(r["params"]) for r in mock_slack.received)
    log = slack_server["log"].read_text()
    engine = sqlalchemy.create_engine(slack_server["env"]["GPU_ASSIST_DB_URL"])
    with engine.connect() as connection:
        audit = "\n".join(str(row) for row in connection.execute(sqlalchemy.text("SELECT * FROM audit_events")))
        requests = "\n".join(str(row) for row in connection.execute(sqlalchemy.text("SELECT * FROM requests")))
    engine.dispose()
    places = {"server log": log, "messages to Slack": sent, "audit log": audit, "requests table": requests}
    leaks = [(place, secret[:6]) for place, text in places.items() for secret in SECRETS if secret in text]
    # The only place the bot token may travel is Slack's own Authorization header.
    authorized = {r["authorization"] for r in mock_slack.received if r["authorization"]}
    record_case("Secrets in server log, Slack messages, audit entries, requests", tried=len(places) * len(SECRETS),
                refused=len(places) * len(SECRETS) - len(leaks), side_effects=len(leaks),
                note="the bot token travels only in the Authorization header to Slack")
    assert leaks == []
    assert authorized <= {f"Bearer {BOT_TOKEN}"}


def test_aws_error_texts_carry_no_credentials(monkeypatch):
    from botocore.exceptions import ClientError, NoCredentialsError

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    error = ClientError({"Error": {"Code": "AuthFailure", "Message": "AWS was not able to validate the provided "
                                   "access credentials"}}, "RunInstances")
    for failure in (error, NoCredentialsError()):
        assert AWS_SECRET not in str(explain(failure, "launching"))
