"""A quote from a cold process imports nothing heavy: the pricing core, the catalog loader and the text renderer
are plain Python, so `gpu-assist quote` starts in about the time Python itself does (#17)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from support import CATALOGS

# Packages a quote must not import: each costs from tens to hundreds of milliseconds to import.
HEAVY = {"pandas", "numpy", "rich", "boto3", "botocore", "slack_bolt", "slack_sdk", "sqlalchemy", "jupyter_server",
         "ipywidgets", "IPython", "pynvml"}


def _imported(args: list[str], cache: str) -> set[str]:
    """The top-level packages a `gpu-assist` process imported (from `python -X importtime`)."""
    env = {**os.environ, "GPU_ASSIST_CACHE_DIR": cache, "GPU_ASSIST_CATALOG_DIR": str(CATALOGS)}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "gpu_assist", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()
            if line.startswith("import time:")}


@pytest.mark.slow  # starts subprocesses
@pytest.mark.parametrize("args", [["quote", "8xA100", "8h", "aws", "on-demand"], ["quote", "8xA100", "72h"],
                                  ["quote", "8xA100", "72h", "--format", "json"],
                                  ["recommend", "train", "7B", "tokens=20B", "deadline=7d"],
                                  ["tco", "8xA100", "hardware=25000"]])
def test_a_cold_answer_imports_nothing_heavy(tmp_path, args):
    cache = str(tmp_path / "cache")
    for attempt in ("without a cache", "from the compiled cache"):
        heavy = _imported(args, cache) & HEAVY
        assert not heavy, f"{' '.join(args)} {attempt} imported {sorted(heavy)}"
    assert list((tmp_path / "cache").glob("catalog-*.bin"))
