"""Shared fixtures: the bundled catalog, and small hand-made catalogs for exact arithmetic."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from gpu_assist.catalog import OFFER_COLUMNS, load_catalog
from gpu_assist.sources import rows_to_csv

REPO = Path(__file__).resolve().parent.parent
CATALOGS = REPO / "catalogs"
SHARED = REPO.parent / "shared"
TODAY = dt.date(2026, 12, 2)


@pytest.fixture(scope="session")
def catalog():
    return load_catalog(CATALOGS, cache_dir=None)


@pytest.fixture(scope="session")
def gpus(catalog):
    return catalog.gpus


def offer(**values) -> dict:
    """One offer row with plausible defaults; tests override what they assert on."""
    row = {c: "" for c in OFFER_COLUMNS}
    row.update(provider="aws", region="us-east-1", instance_type="p4d.24xlarge", gpu="A100", gpu_count="8",
               gpu_memory_gib="40", interconnect="nvlink", currency="USD", on_demand_hourly="32",
               billing_granularity_s="1", source="skypilot-aws", as_of="2026-12-01", verified="yes")
    row.update({k: str(v) for k, v in values.items()})
    return row


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
