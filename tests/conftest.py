"""Shared fixtures: the bundled catalog, small hand-made catalogs, a real moto server over HTTP."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import urllib.request

import pytest

from gpu_assist.catalog import load_catalog
from gpu_assist.sources import rows_to_csv
from support import CATALOGS

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture(scope="session")
def catalog():
    return load_catalog(CATALOGS, cache_dir=None)


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
            (directory / f"{provider}.csv").write_text(rows_to_csv(provider_rows), encoding="utf-8")
        return load_catalog(directory, cache_dir=None) if load else directory

    return build


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
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
    yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    subprocess.run(_as_postgres([f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "stop"]), capture_output=True)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_store(postgres_url):
    """A Store on the shared server, emptied for each test (the audit trigger is dropped to allow that)."""
    import sqlalchemy

    from gpu_assist.store import Store

    engine = sqlalchemy.create_engine(postgres_url)
    with engine.begin() as connection:
        connection.execute(sqlalchemy.text("DROP TABLE IF EXISTS audit_events, requests CASCADE"))
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
    """`gpu-assist slack serve` as a real process on a free port, talking to moto and the mock Web API."""
    import sys
    import time

    from slack_client import BOT_TOKEN, SIGNING_SECRET

    port = free_port()
    state = tmp_path_factory.mktemp("slack-state")
    env = {**os.environ, "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
           "GPU_ASSIST_SLACK_API_URL": mock_slack.api_url, "GPU_ASSIST_APPROVERS": "U-ALICE,U-BOB",
           "GPU_ASSIST_APPROVAL_CHANNEL": "C-APPROVALS", "GPU_ASSIST_DB_URL": f"sqlite:///{state / 'state.db'}",
           "GPU_ASSIST_AMI_ID": "ami-12c6146b", "AWS_ENDPOINT_URL": moto_server, "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing-secret-key", "AWS_REGION": "us-east-1",
           "GPU_ASSIST_CACHE_DIR": str(state / "cache")}
    env.pop("AWS_PROFILE", None)
    log = open(state / "server.log", "w")
    process = subprocess.Popen([sys.executable, "-m", "gpu_assist", "slack", "serve", "--host", "127.0.0.1",
                                "--port", str(port), "--no-jobs"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            if process.poll() is not None:
                raise RuntimeError((state / "server.log").read_text())
            time.sleep(0.2)
    else:
        process.kill()
        raise RuntimeError("slack server did not start: " + (state / "server.log").read_text())
    yield {"url": f"{base}/slack/events", "base": base, "env": env, "log": state / "server.log"}
    process.terminate()
    process.wait(timeout=10)
    log.close()
