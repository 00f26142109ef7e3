"""Shared fixtures: the bundled catalog, small hand-made catalogs, a real moto server over HTTP."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import pytest
import sky_client_home  # noqa: F401 - SkyPilot's client home, set before any test imports `sky`
from support import AWS_SECRET, CATALOGS, DB_PASSWORD, NOON, free_port

from child_startup import clock_reads, loopback_only
from gpu_assist.catalog import load_catalog
from gpu_assist.sources.refresh import fields_to_csv

# jsonschema checks the "iri" format with rfc3987-syntax where that is installed (jupyter-events requires it), and
# importing it compiles 38 grammars: seconds in every pytest process, as pytest-jupyter loads jupyter_server and
# nbformat. No test validates an IRI: jsonschema leaves the format unchecked, as it does where the package is absent.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]

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
    parser.addoption("--clock-readers", metavar="FILE", default=None,
                     help="write each test that read the wall clock, and where, to FILE (JSON lines)")


# Its folder is on PYTHONPATH for the whole run, so its sitecustomize.py runs at the start of every Python process
# the tests start: the loopback guard, and the wall clock of clock_reads.py (moved or not, and listened to).
_CHILD_STARTUP = os.path.join(os.path.dirname(__file__), "child_startup")


def _moved_to(instant: str | None) -> dt.datetime | None:
    if instant is None:
        return None
    try:
        destination = dt.datetime.fromisoformat(instant.replace("Z", "+00:00"))
    except ValueError:
        raise pytest.UsageError(f"--moved-clock {instant!r} is no instant; "
                                "example: --moved-clock 2027-12-31T23:59:30Z") from None
    return destination if destination.tzinfo is not None else destination.replace(tzinfo=dt.timezone.utc)


def _keep_to_loopback(config) -> None:
    """From here on, this process and every Python process it starts reach nothing beyond loopback
    (tests/child_startup/loopback_only.py); each refusal is written to a log that `pytest_runtest_makereport` reads,
    so the test during which it happened fails, naming the address."""
    descriptor, config.gpu_assist_refused_log = tempfile.mkstemp(prefix="gpu-assist-refused-", suffix=".log")
    os.close(descriptor)
    os.environ[loopback_only.REFUSED_LOG_ENV] = config.gpu_assist_refused_log
    if _CHILD_STARTUP not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_CHILD_STARTUP, os.environ.get("PYTHONPATH")]))
    loopback_only.install()


def _runs_no_tests(config) -> bool:
    """pytest-xdist's controller (`-n N`): its workers run the tests, each configured as a session of its own."""
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def pytest_configure(config):
    config.gpu_assist_secrets = _SECRETS_SCANNED  # read by tests/reliability's report
    config.gpu_assist_tree_before = _tree_status()
    # The default request store (a command or server given no GPU_ASSIST_DB_URL) of this run and of every process it
    # starts: a fresh folder, never the user's ~/.local/share, which another checkout's run may have migrated past
    # this code's schema.
    config.gpu_assist_data_home = os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="gpu-assist-test-data-")
    # Text is laid out at the terminal's width (`COLUMNS` first): pytest-xdist's workers run with COLUMNS=80, so a
    # test would see another width in parallel than alone. Every test starts at the default width; one about width
    # sets COLUMNS itself.
    os.environ.pop("COLUMNS", None)
    if not hasattr(config, "workerinput"):  # pytest-xdist's workers start after this, in this environment
        config.gpu_assist_workers_problems = os.environ[_WORKERS_PROBLEMS_ENV] = tempfile.mkdtemp(
            prefix="gpu-assist-test-problems-")
    _keep_to_loopback(config)
    config.gpu_assist_moved_to = _moved_to(config.getoption("--moved-clock"))
    config.gpu_assist_clock_log = None
    if not hasattr(config, "workerinput") and config.getoption("--clock-readers"):
        open(config.getoption("--clock-readers"), "w").close()
    if not _runs_no_tests(config):
        _listen_to_the_clock(config, config.gpu_assist_moved_to)


def pytest_report_header(config):
    moved = config.gpu_assist_moved_to
    return f"wall clock moved to {moved:%Y-%m-%d %H:%M:%S %Z} (ticking), here and in the servers" if moved else None


# Clocks. Every test runs at the real clock; those marked `clock` run again at each moved clock (`make test`), and
# `make test-moved` runs every test there. Marked: a test that says `@pytest.mark.clock` (or its module's
# `pytestmark`), and every test that uses a fixture of CLOCK_FIXTURES, whose servers read the clock for their
# users. The mark is checked, not trusted: tests/child_startup/clock_reads.py hears every reading of the wall clock
# by the project's code, in this process and in every Python process the tests start, and an unmarked test during
# which one happened fails, naming where (see `_fail_if_it_read_the_clock`).
# Slack's: the Slack server checks each request's signed timestamp against its clock and dates what it does; the mock
# Web API stamps each message with the time (its `ts`), as Slack does.
CLOCK_FIXTURES = frozenset({"slack_server", "mock_slack"})
_CLOCK: dict = {"scope": [""], "heard": [], "log": None, "offset": 0, "elsewhere": {}, "left behind": {},
                "marked": {}, "readers": None}


def _listen_to_the_clock(config, moved_to: dt.datetime | None) -> None:
    """The wall clock of this process and of every Python process it starts from now on: the real one, or
    `moved_to` ticking from now (the same offset everywhere, so a server and its test agree on a signature's age),
    with every reading by the project's code heard (clock_reads.py)."""
    shift = moved_to.timestamp() - time.time() if moved_to else 0.0
    if moved_to:
        os.environ[clock_reads.SHIFT_ENV] = repr(shift)
        os.environ["TZ"] = "UTC"  # as time-machine does for a UTC instant
        time.tzset()
    descriptor, config.gpu_assist_clock_log = tempfile.mkstemp(prefix="gpu-assist-clock-", suffix=".log")
    os.close(descriptor)
    os.environ[clock_reads.LOG_ENV] = _CLOCK["log"] = config.gpu_assist_clock_log
    _set_scope("")
    clock_reads.install(shift, _heard)
    threading.Thread.start = _started_by_owner  # type: ignore[method-assign]
    concurrent.futures.ThreadPoolExecutor.submit = _submitted_by_owner  # type: ignore[method-assign]
    path = config.getoption("--clock-readers")  # appended to, a line at a time, by each of xdist's workers
    _CLOCK["readers"] = open(path, "a", encoding="utf-8", buffering=1) if path else None  # noqa: SIM115 - closed at end


_THREAD_START = threading.Thread.start
_SUBMIT = concurrent.futures.ThreadPoolExecutor.submit
_WORKING_FOR = threading.local()  # whom a pool's thread runs its current work item for


def _started_by_owner(self):
    """A thread works for whoever started it: a session fixture's server thread for that fixture's users."""
    self.gpu_assist_clock_owner = _owner()
    return _THREAD_START(self)


def _submitted_by_owner(self, fn, /, *args, **kwargs):
    """A pool's thread outlives the test that started it: each work item is done for whoever submitted it."""
    owner = _owner()

    def work(*args, **kwargs):
        _WORKING_FOR.owner = owner
        try:
            return fn(*args, **kwargs)
        finally:
            _WORKING_FOR.owner = None

    return _SUBMIT(self, work, *args, **kwargs)


def _owner() -> str:
    owner = getattr(_WORKING_FOR, "owner", None)
    if owner is None:
        owner = getattr(threading.current_thread(), "gpu_assist_clock_owner", None)
    return _CLOCK["scope"][-1] if owner is None else owner


def _heard(where: str) -> None:
    _CLOCK["heard"].append((_owner(), where, threading.current_thread().name))


def _set_scope(owner: str, *, push: bool = False) -> None:
    """What runs now: a test's node id, `fixture:NAME` while a fixture wider than a test sets up, "" between tests.
    A process started now is told (clock_reads.OWNER_ENV), so its readings are its starter's."""
    if push:
        _CLOCK["scope"].append(owner)
    else:
        _CLOCK["scope"][-1] = owner
    os.environ[clock_reads.OWNER_ENV] = _CLOCK["scope"][-1]


def _pop_scope() -> None:
    _CLOCK["scope"].pop()
    os.environ[clock_reads.OWNER_ENV] = _CLOCK["scope"][-1]


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    if fixturedef.scope == "function" or _CLOCK["log"] is None:
        yield
        return
    _set_scope(f"fixture:{fixturedef.argname}", push=True)
    try:
        yield
    finally:
        _pop_scope()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _CLOCK["log"] is not None:
        _set_scope(item.nodeid)
        item.gpu_assist_clock_reads = []
        _CLOCK["marked"][item.nodeid] = item.get_closest_marker("clock") is not None
    yield
    if _CLOCK["log"] is not None:
        _set_scope("")


def _readings() -> list[tuple[str, str, str]]:
    """(owner, where, who) of every reading heard since the last call: this process's, and what the processes the
    tests started logged."""
    heard, _CLOCK["heard"] = _CLOCK["heard"], []
    with open(_CLOCK["log"], "rb") as log:
        log.seek(_CLOCK["offset"])
        chunk = log.read()
    chunk = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written is left for the next read
    _CLOCK["offset"] += len(chunk)
    for line in chunk.decode("utf-8", "replace").splitlines():
        owner, pid, where = line.split("\t", 2)
        heard.append((owner, where, f"process {pid}"))
    return heard


def _clock_reads_of(item) -> list[tuple[str, str]]:
    """The readings that belong to `item`, as (where, who): its own and its fixtures' (the servers it uses). Kept
    for the end of the session: a wider fixture's readings while a test that does not use it runs, readings
    outside any test, and those of a thread or process an unmarked test left running after it ended."""
    mine = []
    for owner, where, who in _readings():
        fixture = owner.removeprefix("fixture:") if owner.startswith("fixture:") else None
        if owner and (owner == item.nodeid or fixture in getattr(item, "fixturenames", ())):
            mine.append((where, who if fixture is None else f"{who}, of fixture {fixture}"))
        elif fixture is not None or not owner:
            _CLOCK["elsewhere"].setdefault(fixture or "", set()).add(f"{where}  [{who}]")
        elif not _CLOCK["marked"].get(owner, True):
            _CLOCK["left behind"].setdefault(owner, set()).add(f"{where}  [{who}, while {item.nodeid} ran]")
    return mine


def _fail_if_it_read_the_clock(item, report) -> None:
    """A test not marked `clock` fails when the wall clock was read by the project's code during it (its setup,
    call or teardown), in this process or a process it or its fixtures started: its outcome may then depend on
    the date or the hour, which only the moved clocks try."""
    if _CLOCK["log"] is None or not hasattr(item, "gpu_assist_clock_reads"):
        return
    item.gpu_assist_clock_reads += _clock_reads_of(item)
    if report.when != "teardown":
        return
    reads, marked = item.gpu_assist_clock_reads, item.get_closest_marker("clock") is not None
    if reads and _CLOCK["readers"] is not None:
        import json

        _CLOCK["readers"].write(json.dumps({"test": item.nodeid, "marked": marked,
                                            "reads": sorted({f"{where} [{who}]" for where, who in reads})}) + "\n")
    if not reads or marked:
        return
    places = sorted({f"{where}  [{who}]" for where, who in reads})
    problem = ("read the wall clock but is not marked `clock`, so the moved clocks would not try it: mark it "
               "`@pytest.mark.clock`, pin the clock (support.Clock, pinned_wall_clock), or name its fixture in "
               "CLOCK_FIXTURES (tests/conftest.py). Read at:\n  " + "\n  ".join(places[:8]))
    if report.failed:
        report.sections.append(("clock", problem))
    else:
        report.outcome, report.longrepr = "failed", problem


# Folders whose tests start server processes, subprocesses, moto, PostgreSQL or Chromium: all `slow`, so
# `make test-fast` (pytest -m "not slow") is the in-process suite. Its one server is tests/mock_slack.py, a thread
# of the test process (the Slack listeners' `app.dispatch` tests). A slow test elsewhere says so itself.
_SLOW_FOLDERS = frozenset({"integration", "reliability", "e2e"})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _SLOW_FOLDERS & set(item.path.relative_to(config.rootpath).parts):
            item.add_marker(pytest.mark.slow)
        if CLOCK_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("clock") is None:
            item.add_marker(pytest.mark.clock)


def pytest_sessionfinish(session, exitstatus):
    """A test run leaves the tree as it found it: generated reports belong to `make soak` / `make bench`. Nothing
    after the last test's report (a session fixture's teardown) reached beyond loopback either."""
    shutil.rmtree(session.config.gpu_assist_data_home, ignore_errors=True)
    late, _ = _refusals(session.config.gpu_assist_refused_log, _REFUSED_READ["offset"])
    os.remove(session.config.gpu_assist_refused_log)
    if late:
        _session_problem(session, _reached_out(late))
    _clock_readers_unaccounted(session)
    if hasattr(session.config, "workerinput"):  # pytest-xdist's controller compares the tree once all are done
        return
    said = set()  # each worker collects every test module: one problem at an import is every worker's
    for path in sorted(glob.glob(os.path.join(session.config.gpu_assist_workers_problems, "*"))):
        with open(path, encoding="utf-8") as problems:
            for problem in problems.read().split("\0")[:-1]:
                if problem not in said:
                    said.add(problem)
                    _session_problem(session, problem)
    shutil.rmtree(session.config.gpu_assist_workers_problems, ignore_errors=True)
    before, after = session.config.gpu_assist_tree_before, _tree_status()
    if before is None or after is None or before == after:
        return
    changed = sorted(set(after.splitlines()) ^ set(before.splitlines()))
    _session_problem(session, "the test run changed the work tree (tracked or unignored files):\n  " +
                     "\n  ".join(changed))


_WORKERS_PROBLEMS_ENV = "GPU_ASSIST_TEST_WORKERS_PROBLEMS"  # where pytest-xdist's workers leave theirs


def _session_problem(session, problem: str) -> None:
    """Fail the run, saying why, for what no test's report carries. A pytest-xdist worker's own output and exit
    status are not the run's: it leaves the problem for the controller, which says it."""
    if hasattr(session.config, "workerinput"):
        path = os.path.join(os.environ[_WORKERS_PROBLEMS_ENV], session.config.workerinput["workerid"])
        with open(path, "a", encoding="utf-8") as problems:
            problems.write(problem + "\0")
        return
    session.config.get_terminal_writer().line("error: " + problem, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _clock_readers_unaccounted(session) -> None:
    """A fixture wider than a test whose servers read the clock while tests that do not use it ran (a timer, a
    background job) reads it for its own users too: unless it is one of CLOCK_FIXTURES, which marks them, the
    session fails, naming it. So does a reading outside any test (a test module that reads it as it is imported)."""
    if _CLOCK["log"] is None:
        return
    _clock_reads_of(session)  # what came after the last test: none of them is the session's own
    if _CLOCK["readers"] is not None:
        _CLOCK["readers"].close()
    os.remove(_CLOCK["log"])
    for test, places in sorted(_CLOCK["left behind"].items()):
        _session_problem(session, f"a thread or process that {test} started read the wall clock after that test "
                                  "ended: stop it before the test ends, or mark the test `clock`. Read at:\n  " +
                                  "\n  ".join(sorted(places)[:8]))
    unmarked = {name: places for name, places in _CLOCK["elsewhere"].items() if name not in CLOCK_FIXTURES}
    for name, places in sorted(unmarked.items()):
        where = "\n  ".join(sorted(places)[:8])
        _session_problem(session, (
            f"fixture {name}'s processes or threads read the wall clock, so the tests using it may depend on the date "
            "or the hour: name it in CLOCK_FIXTURES (tests/conftest.py) or pin its clock" if name else
            "the wall clock was read outside any test (as a module was imported?), so every test that uses what "
            "it read may depend on the date or the hour: read it in the tests, marked `clock`")
            + f". Read at:\n  {where}")


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
    _fail_if_it_read_the_clock(item, report)
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
