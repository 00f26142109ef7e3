"""Secrets never reach a log line, a message, an audit entry or an error text."""

from __future__ import annotations

import sqlalchemy
from slack_client import BOT_TOKEN, SIGNING_SECRET, command_body, settle, signed_post, start_slack_server
from support import AWS_SECRET, DB_PASSWORD

from gpu_assist.cli import main
from gpu_assist.clouds.sdk.aws import explain

SECRETS = (BOT_TOKEN, SIGNING_SECRET, AWS_SECRET)


def test_server_log_messages_and_audit_hold_no_secret(slack_server, mock_slack, aws, record_case):
    # Exercise the paths that talk about credentials and failures.
    for text in ("launch 8xA100 4h region=us-east-1", "quote 8xA1000 1h", "util", "requests",
                 "stop i-0123456789abcdef0"):
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


def _with_password(postgres_url: str) -> str:
    """The test server trusts local connections, so a password in the URL is accepted and must stay hidden."""
    return postgres_url.replace("://postgres@", f"://postgres:{DB_PASSWORD}@")


def test_database_password_stays_out_of_server_log_cards_and_json(moto_server, mock_slack, aws, postgres_url,
                                                                 tmp_path, monkeypatch, capsys, record_case):
    url = _with_password(postgres_url)
    mock_slack.clear()
    process, server = start_slack_server(moto_server, mock_slack, tmp_path, db_url=url, jobs=True)
    try:
        for text in ("launch 8xA100 4h region=us-east-1", "launch 8xA100 9999h", "requests", "quote 8xA1000 1h"):
            signed_post(server["url"], command_body(text, user="U-CAROL", response_url=mock_slack.response_url()))
        mock_slack.wait_for("response/", 3)
        mock_slack.wait_for("chat.postMessage")  # the launch's approval card
        settle(server["url"], mock_slack)  # everything the four commands were going to send has been sent
    finally:
        process.terminate()
        process.wait(timeout=20)
    sent = "\n".join(str(r["params"]) for r in mock_slack.received)
    monkeypatch.setenv("GPU_ASSIST_DB_URL", url)
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    monkeypatch.setenv("GPU_ASSIST_AMI_ID", "ami-12c6146b")
    outputs = {}
    for argv in (["requests", "--format", "json"], ["launch", "8xA100", "4h", "--as", "carol", "--format", "json"],
                 ["db", "current"], ["approve", "r-000000000000", "--break-glass", "--reason", "x", "--format",
                                                                                           "json"]):
        main(argv)
        captured = capsys.readouterr()
        outputs[" ".join(argv[:2])] = captured.out + captured.err
    places = {"server log": server["log"].read_text(), "cards and replies": sent, **outputs}
    leaks = [(place, name) for place, text in places.items()
             for name, secret in (("db password", DB_PASSWORD), *zip(("bot token", "signing secret"),
                                                                      (BOT_TOKEN, SIGNING_SECRET))) if secret in text]
    record_case("Database password, bot token, signing secret in server log, cards, CLI --format json",
                tried=len(places) * 3, refused=len(places) * 3 - len(leaks), side_effects=len(leaks),
                note="PostgreSQL URL with a sentinel password")
    assert leaks == []
    assert '"requester": "unauthenticated:carol"' in outputs["launch 8xA100"]
    assert "postgres:***@" in outputs["db current"]


def test_an_unreachable_store_is_one_error_without_the_password(monkeypatch, capsys):
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"postgresql+psycopg://gpu:{DB_PASSWORD}@127.0.0.1:1/none")
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    for argv in (["requests", "--format", "json"], ["slack", "serve", "--port", "1"], ["db", "upgrade"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: cannot open the request store Store(postgresql+psycopg://gpu:***@127.0.0.1:1")
        first, *rest = err.strip().splitlines()  # folded to 100 columns: continuation lines indented
        assert DB_PASSWORD not in err and "Traceback" not in err and all(line.startswith("  ") for line in rest)
