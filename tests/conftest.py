"""Shared fixtures: the bundled catalog, small hand-made catalogs, a real moto server over HTTP."""

from __future__ import annotations

import datetime as dt
import glob
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import pytest
from support import AWS_SECRET, CATALOGS, DB_PASSWORD, NOON, free_port

from child_startup import loopback_only
from gpu_assist.catalog import load_catalog
from gpu_assist.sources.refresh import fields_to_csv

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture(scope="session")
def catalog():
    return load_catalog(CATALOGS, cache_dir=None)


@pytest.fixture
def pinned_wall_clock():
    """The wall clock at support.NOON (noon UTC on support.TODAY), ticking: for code that reads the date itself, as
    a user's `gpu-assist` does (`cli.main` asks for today's date; a price's age, and so its labels, follow it)."""
    import time_machine

    with time_machine.travel(NOON) as traveller:
        yield traveller


@pytest.fixture(scope="session")
def gpus(catalog):
    return catalog.gpus


@pytest.fixture
def make_catalog(tmp_path):
    """Write offers into a fresh catalog directory (the real gpus.csv, fx.csv, SOURCES.md) and load it."""

    def build(*rows: dict, load: bool = True):
        directory = tmp_path / "catalogs"
        directory.mkdir(exist_ok=True)
        for name in ("gpus.csv", "fx.csv", "SOURCES.md"):
            shutil.copy(CATALOGS / name, directory / name)
        by_provider: dict[str, list[dict]] = {}
        for row in rows:
            by_provider.setdefault(row["provider"], []).append(row)
        for provider, provider_rows in by_provider.items():
            (directory / f"{provider}.csv").write_text(fields_to_csv(provider_rows), encoding="utf-8")
        return load_catalog(directory, cache_dir=None) if load else directory

    return build


@pytest.fixture(scope="session")
def moto_server():
    """moto's real HTTP server (`moto[server]`), not its in-process decorators."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def aws(moto_server, monkeypatch):
    """Environment for boto3 to talk to the moto server; each test starts from a reset server."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    urllib.request.urlopen(urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST"), timeout=10)
    return moto_server


def _as_postgres(command: list[str]) -> list[str]:
    """Debian's PostgreSQL refuses to run as root: run its tools as the postgres user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@pytest.fixture(scope="session")
def postgres_url():
    """A private PostgreSQL server on a free local port, torn down after the session."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.skip("PostgreSQL server binaries not found; `make test` installs Debian's postgresql")
    bin_dir = os.path.dirname(found[-1])
    base = tempfile.mkdtemp(prefix="gpu-assist-pg-")
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
    data, port = os.path.join(base, "data"), free_port()
    subprocess.run(_as_postgres([f"{bin_dir}/initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]),
                   check=True, capture_output=True)
    options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    subprocess.run(_as_postgres([f"{bin_dir}/pg_ctl", "-D", data, "-o", options, "-l", f"{base}/log", "-w", "start"]),
                   check=True, capture_output=True)
    _POSTGRES.update(bin_dir=bin_dir, data=data, options=options, log=f"{base}/log")
    yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    subprocess.run(_as_postgres([f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "stop"]), capture_output=True)
    shutil.rmtree(base, ignore_errors=True)


_POSTGRES: dict = {}


@pytest.fixture
def restart_postgres(postgres_url):
    """Restart the test PostgreSQL server (fast shutdown: open connections are cut, as in a real failover)."""
    def restart():
        p = _POSTGRES
        subprocess.run(_as_postgres([f"{p['bin_dir']}/pg_ctl", "-D", p["data"], "-o", p["options"], "-l", p["log"],
                                     "-m", "fast", "-w", "restart"]), check=True, capture_output=True)
    return restart


@pytest.fixture
def pg_store(postgres_url):
    """A Store on the shared server, emptied for each test (the audit trigger is dropped to allow that)."""
    import sqlalchemy

    from gpu_assist.store import Store

    engine = sqlalchemy.create_engine(postgres_url)
    with engine.begin() as connection:  # every table, the ones a later migration adds too
        connection.execute(sqlalchemy.text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()
    return Store(postgres_url)


@pytest.fixture(scope="session")
def mock_slack():
    from mock_slack import MockSlack

    server = MockSlack().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def slack_server(moto_server, mock_slack, tmp_path_factory):
    from slack_client import start_slack_server

    process, info = start_slack_server(moto_server, mock_slack, tmp_path_factory.mktemp("slack-state"))
    yield info
    process.terminate()
    process.wait(timeout=10)


_SECRETS_SCANNED = {"tests": 0, "leaks": []}


def _tree_status() -> str | None:
    """`git status --porcelain` of the checkout, or None outside a git work tree (an sdist, say)."""
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=os.path.dirname(__file__),
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None
    # `make screenshots` asks the browser tests to write docs/screenshots: the one change a run may make.
    shots = os.environ.get("GPU_ASSIST_SCREENSHOTS")
    keep = os.path.relpath(shots, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) if shots else None
    return "".join(line for line in done.stdout.splitlines(keepends=True) if not keep or keep not in line)


def pytest_addoption(parser):
    parser.addoption("--moved-clock", metavar="UTC-INSTANT", default=None,
                     help="run the suite as if the wall clock read this instant (e.g. 2027-12-31T23:59:30Z), "
                          "ticking from there, in this process and every Python process the tests start")


_CLOCK_SHIFT_ENV = "GPU_ASSIST_TEST_CLOCK_SHIFT_S"  # read by tests/child_startup/sitecustomize.py
# Its folder is on PYTHONPATH for the whole run, so its sitecustomize.py runs at the start of every Python process
# the tests start: the loopback guard always, the moved clock when --moved-clock asks.
_CHILD_STARTUP = os.path.join(os.path.dirname(__file__), "child_startup")


def _move_the_clock(instant: str) -> dt.datetime:
    """Shift the wall clock (time.time, datetime.now, date.today; not monotonic clocks or sleeps) of this process
    to `instant`, ticking, and hand the same shift to every Python process started from here on: moto and the mock
    Slack run in this process, servers get it through tests/child_startup/sitecustomize.py on PYTHONPATH."""
    import time_machine

    try:
        destination = dt.datetime.fromisoformat(instant.replace("Z", "+00:00"))
    except ValueError:
        raise pytest.UsageError(f"--moved-clock {instant!r} is no instant; "
                                "example: --moved-clock 2027-12-31T23:59:30Z") from None
    if destination.tzinfo is None:
        destination = destination.replace(tzinfo=dt.timezone.utc)
    os.environ[_CLOCK_SHIFT_ENV] = repr(destination.timestamp() - time.time())
    time_machine.travel(destination, tick=True).start()
    time.time()  # time-machine's clock ticks from its first reading, not from start(): a server started minutes
    # later reads its own first at once (sitecustomize.py), so both run `shift` ahead of the real clock
    return destination


def _keep_to_loopback(config) -> None:
    """From here on, this process and every Python process it starts reach nothing beyond loopback
    (tests/child_startup/loopback_only.py); each refusal is written to a log that `pytest_runtest_makereport` reads,
    so the test during which it happened fails, naming the address."""
    descriptor, config.gpu_assist_refused_log = tempfile.mkstemp(prefix="gpu-assist-refused-", suffix=".log")
    os.close(descriptor)
    os.environ[loopback_only.REFUSED_LOG_ENV] = config.gpu_assist_refused_log
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_CHILD_STARTUP, os.environ.get("PYTHONPATH")]))
    loopback_only.install()


def pytest_configure(config):
    config.gpu_assist_secrets = _SECRETS_SCANNED  # read by tests/reliability's report
    config.gpu_assist_tree_before = _tree_status()
    # The default request store (a command or server given no GPU_ASSIST_DB_URL) of this run and of every process it
    # starts: a fresh folder, never the user's ~/.local/share, which another checkout's run may have migrated past
    # this code's schema.
    config.gpu_assist_data_home = os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="gpu-assist-test-data-")
    _keep_to_loopback(config)
    instant = config.getoption("--moved-clock")
    config.gpu_assist_moved_to = _move_the_clock(instant) if instant else None


def pytest_report_header(config):
    moved = config.gpu_assist_moved_to
    return f"wall clock moved to {moved:%Y-%m-%d %H:%M:%S %Z} (ticking), here and in the servers" if moved else None


# Folders whose tests start server processes, subprocesses, moto, PostgreSQL or Chromium: all `slow`, so
# `make test-fast` (pytest -m "not slow") is the in-process suite. Its one server is tests/mock_slack.py, a thread
# of the test process (the Slack listeners' `app.dispatch` tests). A slow test elsewhere says so itself.
_SLOW_FOLDERS = frozenset({"integration", "reliability", "e2e"})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _SLOW_FOLDERS & set(item.path.relative_to(config.rootpath).parts):
            item.add_marker(pytest.mark.slow)


def pytest_sessionfinish(session, exitstatus):
    """A test run leaves the tree as it found it: generated reports belong to `make soak` / `make bench`. Nothing
    after the last test's report (a session fixture's teardown) reached beyond loopback either."""
    shutil.rmtree(session.config.gpu_assist_data_home, ignore_errors=True)
    late, _ = _refusals(session.config.gpu_assist_refused_log, _REFUSED_READ["offset"])
    os.remove(session.config.gpu_assist_refused_log)
    if late:
        session.config.get_terminal_writer().line("error: " + _reached_out(late), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    before, after = session.config.gpu_assist_tree_before, _tree_status()
    if before is None or after is None or before == after:
        return
    changed = sorted(set(after.splitlines()) ^ set(before.splitlines()))
    session.config.get_terminal_writer().line(
        "error: the test run changed the work tree (tracked or unignored files):\n  " + "\n  ".join(changed), red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


_REFUSED_READ = {"offset": 0}  # how far the reports below have read the log of refused connections


def _refusals(path: str, offset: int) -> tuple[list[tuple[str, int, str]], int]:
    """The refusals tests/child_startup/loopback_only.py logged from byte `offset` on, as (what, process id, its
    command line), and the offset after them. A line still being written is left for the next read."""
    with open(path, "rb") as log:
        log.seek(offset)
        chunk = log.read()
    chunk = chunk[: chunk.rfind(b"\n") + 1]
    found = []
    for line in chunk.decode("utf-8", "replace").splitlines():
        what, pid, command = line.split("\t", 2)
        found.append((what, int(pid), command))
    return found, offset + len(chunk)


def _reached_out(found: list[tuple[str, int, str]]) -> str:
    return "tried to reach beyond loopback (refused before anything left this machine):\n  " + "\n  ".join(
        what if pid == os.getpid() else f"{what}, by process {pid} ({command})" for what, pid, command in found)


@pytest.fixture
def refused_connections(pytestconfig):
    """For a test that tries to reach beyond loopback on purpose: a function returning what this test, and every
    process it started, tried so far, as (what, process id) pairs, `what` being `connect to HOST:PORT`,
    `send to HOST:PORT` or `look up NAME:PORT`. The test checks them itself; any other test that tries one fails."""
    path = pytestconfig.gpu_assist_refused_log
    start = os.path.getsize(path)
    return lambda: [(what, pid) for what, pid, _ in _refusals(path, start)[0]]


def _fail_if_it_reached_out(item, report) -> None:
    """A test fails for each attempt to reach beyond loopback during its setup, call or teardown, by it or a process
    it started, even where the code under test swallowed the error (tests/child_startup/loopback_only.py)."""
    found, _REFUSED_READ["offset"] = _refusals(item.config.gpu_assist_refused_log, _REFUSED_READ["offset"])
    problem = _reached_out(found) if found and "refused_connections" not in getattr(item, "fixturenames", ()) else None
    if report.when == "teardown" and not loopback_only.installed():  # after monkeypatch's undo; put back, and said
        loopback_only.install()
        problem = "the loopback guard was taken off (by this test, a fixture or a plugin, e.g. pytest-socket)"
    if problem is None:
        return
    if report.failed:
        report.sections.append(("loopback only", problem))
    else:
        report.outcome, report.longrepr = "failed", problem


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """No token, signing secret, AWS key or database password may appear in any test's captured output, logs or
    failure text; and no test reaches beyond loopback."""
    outcome = yield
    report = outcome.get_result()
    _fail_if_it_reached_out(item, report)
    if report.when != "call":
        return
    from slack_client import BOT_TOKEN, SIGNING_SECRET

    text = "\n".join(content for _, content in report.sections) + str(report.longrepr or "")
    leaked = [name for name, secret in (("bot token", BOT_TOKEN), ("signing secret", SIGNING_SECRET),
                                        ("AWS secret key", AWS_SECRET), ("database password", DB_PASSWORD))
              if secret in text]
    _SECRETS_SCANNED["tests"] += 1
    screenshots = getattr(item, "gpu_assist_screenshots", ())
    if report.failed and screenshots:  # the browser tests' (tests/e2e/test_lab_tabs.py `shots`)
        report.sections.append(("screenshots", "\n".join(screenshots)))
    if leaked:
        _SECRETS_SCANNED["leaks"].append((item.nodeid, leaked))
        report.outcome = "failed"
        report.longrepr = f"secret(s) in captured output: {', '.join(leaked)}"


@pytest.fixture(scope="session")
def secrets_scan():
    return _SECRETS_SCANNED
