"""Shared fixtures: the bundled catalog, small hand-made catalogs, a real moto server over HTTP."""

from __future__ import annotations

import shutil
import socket
import urllib.request

import pytest

from gpu_assist.catalog import load_catalog
from gpu_assist.sources import rows_to_csv
from support import CATALOGS


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
