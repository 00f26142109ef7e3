"""The first commands after a fresh start: a fresh database, `gpu-assist slack serve` started as docs/deploying.md
starts it (periodic jobs on, so the jobs thread runs its first round at the same instant), and 20 first commands in
parallel — launches, request lists, Approve clicks. Before the schema was migrated once before serving, one start
in five to two in three answered a launch with "Something went wrong" ("table requests already exists")."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from slack_client import action_body, command_body, signed_post, start_slack_server
from support import soak

STARTS = 30 if soak() else 10
PG_STARTS = 30 if soak() else 5
LAUNCH = "launch 8xA100 72h spot"
FIRST_COMMANDS = [("launch", LAUNCH)] * 8 + [("requests", "requests")] * 6 + [("approve", None)] * 6


def _first_commands(mock, urls: list[str]) -> list[str]:
    """Fire the 20 first commands at once (spread over `urls`); returns what went wrong, empty when nothing did."""
    sent = []
    for n, (kind, text) in enumerate(FIRST_COMMANDS):
        response_url = mock.response_url()
        if kind == "approve":
            body = action_body("approve_request", f"r-{n:012x}", user="U-BOB", response_url=response_url)
        else:
            body = command_body(text, user=f"U-CAROL{n}", response_url=response_url)
        sent.append((kind, urls[n % len(urls)], body, response_url))
    with ThreadPoolExecutor(max_workers=len(sent)) as pool:
        statuses = list(pool.map(lambda item: _as_soon_as_listening(item[1], item[2]), sent))
    problems = [f"{kind}: HTTP {status}" for (kind, *_), status in zip(sent, statuses) if status != 200]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answered = _answers(mock, sent)
        if all(answered):
            break
        time.sleep(0.05)
    for (kind, _, _, _), answer in zip(sent, _answers(mock, sent)):
        if answer is None:
            problems.append(f"{kind}: no answer")
        elif kind == "launch" and not answer.startswith("Request `r-"):
            problems.append(f"launch answered: {answer[:120]}")
        elif kind == "requests" and "Something went wrong" in answer:
            problems.append(f"requests answered: {answer[:120]}")
        elif kind == "approve" and "no request r-" not in answer:
            problems.append(f"approve answered: {answer[:120]}")
    return problems


def _as_soon_as_listening(url: str, body: str) -> int:
    """Post the moment the server accepts connections (not after /healthz): the first request meets the jobs
    thread's first round, as a user's does when Slack retries into a server that just came up."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        status, text = signed_post(url, body)
        if status != 0:
            return status
        time.sleep(0.01)
    return 0


def _answers(mock, sent) -> list[str | None]:
    """Each command's answer: the response_url reply for commands, the ephemeral refusal for the clicks."""
    with mock._lock:
        received = list(mock.received)
    replies = {r["method"]: r["params"].get("text", "") for r in received if r["method"].startswith("response/")}
    ephemerals = [r["params"]["text"] for r in received if r["method"] == "chat.postEphemeral"]
    answers = []
    for n, (kind, _, _, response_url) in enumerate(sent):
        if kind == "approve":
            answers.append(next((t for t in ephemerals if f"r-{n:012x}" in t), None))
        else:
            answers.append(replies.get(response_url.split(mock.url + "/", 1)[1]))
    return answers


def _cards(mock) -> int:
    return sum(1 for r in mock.calls("chat.postMessage") if "needs an approver" in r["params"]["text"])


def _stop(processes):
    for process, _ in processes:
        process.terminate()
    for process, _ in processes:
        process.wait(timeout=20)


def test_twenty_first_commands_after_each_of_30_fresh_starts(moto_server, mock_slack, aws, tmp_path, record_case):
    errors, first_launch_cards = [], 0
    for start in range(STARTS):
        mock_slack.clear()
        state = tmp_path / f"start-{start}"
        state.mkdir()
        server = start_slack_server(moto_server, mock_slack, state, jobs=True, cache_dir=tmp_path / "cache",
                                    wait=False)
        try:
            problems = _first_commands(mock_slack, [server[1]["url"]])
            cards = _cards(mock_slack)
            first_launch_cards += cards == FIRST_COMMANDS.count(("launch", LAUNCH))
        finally:
            _stop([server])
        log = server[1]["log"].read_text()
        problems += ["traceback in the server log"] if "Traceback" in log else []
        errors += [f"start {start}: {p}" for p in problems]
    record_case(f"First commands after a fresh start: {STARTS} starts × 20 parallel (SQLite, jobs thread on)",
                tried=STARTS * len(FIRST_COMMANDS), refused=0, side_effects=len(errors),
                note=f"launches answered with a request card on {first_launch_cards}/{STARTS} fresh starts")
    assert errors == []
    assert first_launch_cards == STARTS


@pytest.fixture
def fresh_postgres(postgres_url):
    """A database nobody has used, on the test PostgreSQL server, for each call."""
    import sqlalchemy

    admin = sqlalchemy.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    made = []

    def create() -> str:
        name = f"fresh_{len(made)}_{int(time.time() * 1000)}"
        with admin.connect() as connection:
            connection.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
        made.append(name)
        return postgres_url.rsplit("/", 1)[0] + "/" + name

    yield create
    with admin.connect() as connection:
        for name in made:
            connection.execute(sqlalchemy.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    admin.dispose()


def test_two_servers_starting_on_one_fresh_postgres(moto_server, mock_slack, aws, tmp_path, fresh_postgres,
                                                    record_case):
    errors = []
    for start in range(PG_STARTS):
        mock_slack.clear()
        url = fresh_postgres()
        state = tmp_path / f"pg-{start}"
        state.mkdir()
        # Both processes start at the same instant, both upgrading the empty database.
        servers = [start_slack_server(moto_server, mock_slack, state, db_url=url, jobs=True, wait=False,
                                      cache_dir=tmp_path / "cache") for _ in range(2)]
        try:
            problems = _first_commands(mock_slack, [info["url"] for _, info in servers])
        finally:
            _stop(servers)
        problems += [f"traceback in {info['log'].name}" for _, info in servers
                     if "Traceback" in info["log"].read_text()]
        errors += [f"start {start}: {p}" for p in problems]
    record_case(f"Two servers starting at once on one fresh PostgreSQL: {PG_STARTS} starts × 20 parallel",
                tried=PG_STARTS * len(FIRST_COMMANDS), refused=0, side_effects=len(errors),
                note="schema upgrade serialised by an advisory lock; `make soak` runs 30 starts")
    assert errors == []

