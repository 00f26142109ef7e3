"""How fast a quote is: cold CLI process, warm in-process over the bundled catalog and over 10× / 100× copies.

Prints JSON; `bench/run.py` collects it. Figures are median and p99 over repeated runs on this machine.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from gpu_assist.catalog import load_catalog
from gpu_assist.pricing import quote
from gpu_assist.request import parse_request

REPO = Path(__file__).resolve().parent.parent


def _stats(seconds: list[float]) -> dict:
    seconds = sorted(seconds)
    return {"median_ms": statistics.median(seconds) * 1000, "p99_ms": seconds[int(0.99 * (len(seconds) - 1))] * 1000,
            "runs": len(seconds)}


def _timed_runs(command: list[str], runs: int, env: dict | None = None) -> dict:
    subprocess.run(command, capture_output=True, check=True, env=env)  # fills the cache, warms the page cache
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True, env=env)
        times.append(time.perf_counter() - started)
    return _stats(times)


def cold_cli(runs: int = 15) -> dict:
    """A new process per run, as a user starts it; bytecode compiled as a wheel install would have it (this
    environment sets PYTHONDONTWRITEBYTECODE, which would otherwise recompile gpu_assist on every start)."""
    import compileall

    compileall.compile_dir(str(REPO / "gpu_assist"), quiet=1)
    script = Path(sys.executable).parent / "gpu-assist"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gpu_assist"]
    quote_args = ["quote", "8xA100", "8h", "aws", "on-demand"]
    return {**_timed_runs(command + quote_args, runs),
            "python_pass": _timed_runs([sys.executable, "-c", "pass"], runs),
            "import_numpy": _timed_runs([sys.executable, "-c", "import numpy"], runs),
            "import_pandas": _timed_runs([sys.executable, "-c", "import pandas"], runs),
            "no_cache": _timed_runs(command + quote_args, max(5, runs // 3),
                                    env={**os.environ, "GPU_ASSIST_CACHE_DIR": "off"})}


def replicated(catalog, factor: int):
    """The catalog with every offer repeated `factor` times in renamed regions: same shape, more rows."""
    import pandas as pd
    from dataclasses import replace

    if factor == 1:
        return catalog
    copies = [catalog.offers.assign(region=catalog.offers.region + f"-x{i}") if i else catalog.offers
              for i in range(factor)]
    return replace(catalog, offers=pd.concat(copies, ignore_index=True))


def warm(catalog, runs: int) -> dict:
    request = parse_request("8xA100 72h", catalog.gpus)
    today = dt.date.today()
    quote(request, catalog, today=today, top=15)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        quote(request, catalog, today=today, top=15)
        times.append(time.perf_counter() - started)
    return _stats(times) | {"offers": len(catalog.offers)}


def main() -> dict:
    os.environ.setdefault("GPU_ASSIST_CACHE_DIR", str(REPO / ".gpu-assist-cache"))
    catalog = load_catalog(cache_dir=None)
    started = time.perf_counter()
    load_catalog(cache_dir=None)
    load_uncached_ms = (time.perf_counter() - started) * 1000
    return {
        "cold_cli": cold_cli(),
        "catalog_load_uncached_ms": load_uncached_ms,
        "warm_1x": warm(catalog, 200),
        "warm_10x": warm(replicated(catalog, 10), 100),
        "warm_100x": warm(replicated(catalog, 100), 20),
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
