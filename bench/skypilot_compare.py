"""Side by side with SkyPilot: `sky gpus list A100:8 --cloud aws` against `gpu-assist quote 8xA100 8h aws`,
on this machine, in the same run, over the same catalog extract (SkyPilot reads its own format from
~/.sky/catalogs/v8/, filled here from catalogs/sources/).

SkyPilot is installed from the package registry into its own virtual environment (.venv-skypilot). Offline,
it must be limited to one cloud: for the others it tries to download catalogs and fails. Its first call starts
a local API server; the figures are for calls after that (warm), and the start is reported apart.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv-skypilot"
EXTRACT = REPO / "catalogs" / "sources"
SKY_CATALOGS = Path.home() / ".sky" / "catalogs" / "v8"


def _install() -> Path | None:
    sky = VENV / "bin" / "sky"
    if sky.exists():
        return sky
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    done = subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "skypilot"], capture_output=True, text=True)
    return sky if done.returncode == 0 and sky.exists() else None


def _seed_catalogs() -> None:
    for cloud, name in (("aws", "aws_gpu.csv"), ("gcp", "gcp_gpu.csv"), ("azure", "azure_gpu.csv"),
                        ("lambda", "lambda_gpu.csv")):
        (SKY_CATALOGS / cloud).mkdir(parents=True, exist_ok=True)
        shutil.copy(EXTRACT / name, SKY_CATALOGS / cloud / "vms.csv")


def _time(command: list[str], runs: int) -> tuple[list[float], str]:
    times, out = [], ""
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed: {done.stderr[-500:]}")
        out = done.stdout
    return times, out


def measure(runs: int = 5) -> dict:
    if os.environ.get("GPU_ASSIST_BENCH_SKYPILOT") == "0":
        return {"skipped": "GPU_ASSIST_BENCH_SKYPILOT=0"}
    sky = _install()
    if sky is None:
        return {"skipped": "skypilot could not be installed from the package registry"}
    _seed_catalogs()
    sky_command = [str(sky), "gpus", "list", "A100:8", "--cloud", "aws"]
    started = time.perf_counter()
    _, first = _time(sky_command, 1)  # starts SkyPilot's local API server
    first_s = time.perf_counter() - started
    sky_times, sky_out = _time(sky_command, runs)
    ours_command = [str(Path(sys.executable).parent / "gpu-assist"), "quote", "8xA100", "8h", "aws", "on-demand",
                    "--top", "3"]
    ours_times, ours_out = _time(ours_command, runs)
    subprocess.run([str(sky), "api", "stop"], capture_output=True, timeout=60)
    sky_median, ours_median = statistics.median(sky_times), statistics.median(ours_times)
    return {
        "skypilot_version": subprocess.run([str(VENV / "bin" / "python"), "-c", "import sky; print(sky.__version__)"],
                                           capture_output=True, text=True).stdout.strip(),
        "skypilot_first_call_s": first_s, "skypilot_median_s": sky_median, "gpu_assist_median_s": ours_median,
        "ratio_skypilot_over_gpu_assist": sky_median / ours_median, "runs": runs,
        "skypilot_cheapest_line": next((line for line in sky_out.splitlines() if "p4d.24xlarge" in line), ""),
        "gpu_assist_cheapest_line": next((line for line in ours_out.splitlines() if line.strip().startswith("1 ")), ""),
    }


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
