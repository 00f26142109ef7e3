"""Side by side with SkyPilot: `sky gpus list A100:8 --cloud aws` against `gpu-assist quote 8xA100 8h aws`,
on this machine, in the same run, over the same catalog extract (catalogs/sources/, which SkyPilot reads in its
own format from its catalog folder, filled here from that extract).

Everything SkyPilot needs stays in the ignored `.bench/` folder of the checkout: its virtual environment
(`.bench/skypilot-venv`, installed from the package registry on first use) and its home (`.bench/skypilot-home`:
every `sky` process runs with HOME there, so its `~/.sky` — catalogs, API server state, logs — is never the
user's). Offline it must be limited to one cloud: for the others it tries to download catalogs and fails. Its
first call starts a local API server; the figures are for calls after that (warm), and the start is reported
apart. When SkyPilot cannot be installed or does not answer, the comparison is skipped with the reason in one
line, and the other benchmarks still run.
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
BENCH_DIR = REPO / ".bench"
VENV = BENCH_DIR / "skypilot-venv"
SKY_HOME = BENCH_DIR / "skypilot-home"
EXTRACT = REPO / "catalogs" / "sources"
EXTRACT_FILES = {"aws": "aws_gpu.csv", "gcp": "gcp_gpu.csv", "azure": "azure_gpu.csv", "lambda": "lambda_gpu.csv"}
INSTALL_TIMEOUT_S = 900


class Skipped(Exception):
    """Why the comparison cannot run here, in one line."""


def _one_line(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else "no output"
    return last if len(last) <= limit else last[: limit - 1] + "…"


def _install() -> Path:
    """`sky` from the venv, installing SkyPilot there first when it is missing."""
    sky = VENV / "bin" / "sky"
    if sky.exists():
        return sky
    try:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True, text=True)
        done = subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "skypilot"], capture_output=True,
                              text=True, timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as error:
        raise Skipped(f"no virtual environment for SkyPilot ({_one_line(str(error))})") from None
    if done.returncode != 0 or not sky.exists():
        shutil.rmtree(VENV, ignore_errors=True)  # a half-installed venv would be taken for a working one next time
        raise Skipped(f"skypilot could not be installed from the package registry ({_one_line(done.stderr)})")
    return sky


def _sky_environment() -> dict:
    """Every `sky` process: HOME and SkyPilot's own SKY_RUNTIME_DIR in .bench/ (so its `~/.sky` is ours, whatever
    the caller's environment says), no usage reports from an offline machine."""
    SKY_HOME.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "HOME": str(SKY_HOME), "SKY_RUNTIME_DIR": str(SKY_HOME),
            "SKYPILOT_DISABLE_USAGE_COLLECTION": "1"}


def _catalog_dir() -> Path:
    """Where the installed SkyPilot looks for its catalogs: `~/.sky/catalogs/<schema version>/`."""
    code = ("try:\n    from sky.skylet.constants import CATALOG_SCHEMA_VERSION\n"
            "except ImportError:\n    from sky.clouds.service_catalog.constants import CATALOG_SCHEMA_VERSION\n"
            "print(CATALOG_SCHEMA_VERSION)")
    done = subprocess.run([str(VENV / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=120,
                          env=_sky_environment())
    if done.returncode != 0:
        raise Skipped(f"cannot tell SkyPilot's catalog version ({_one_line(done.stderr)})")
    return SKY_HOME / ".sky" / "catalogs" / done.stdout.strip()


def _seed_catalogs(catalogs: Path) -> None:
    for cloud, name in EXTRACT_FILES.items():
        (catalogs / cloud).mkdir(parents=True, exist_ok=True)
        shutil.copy(EXTRACT / name, catalogs / cloud / "vms.csv")


def _time(command: list[str], runs: int, env: dict | None = None) -> tuple[list[float], str]:
    times, out = [], ""
    for _ in range(runs):
        started = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
        except subprocess.TimeoutExpired:
            raise Skipped(f"{Path(command[0]).name} did not answer within 300 s") from None
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise Skipped(f"{Path(command[0]).name} failed ({_one_line(done.stderr or done.stdout)})")
        out = done.stdout
    return times, out


def _compare(sky: Path, runs: int) -> dict:
    env = _sky_environment()
    _seed_catalogs(_catalog_dir())
    sky_command = [str(sky), "gpus", "list", "A100:8", "--cloud", "aws"]
    started = time.perf_counter()
    _time(sky_command, 1, env)  # starts SkyPilot's local API server
    first_s = time.perf_counter() - started
    sky_times, sky_out = _time(sky_command, runs, env)
    ours_command = [str(Path(sys.executable).parent / "gpu-assist"), "quote", "8xA100", "8h", "aws", "on-demand",
                    "--top", "3"]
    ours_times, ours_out = _time(ours_command, runs)
    sky_median, ours_median = statistics.median(sky_times), statistics.median(ours_times)
    version = subprocess.run([str(VENV / "bin" / "python"), "-c", "import sky; print(sky.__version__)"],
                             capture_output=True, text=True, env=env).stdout.strip()
    return {
        "skypilot_version": version,
        "skypilot_first_call_s": first_s, "skypilot_median_s": sky_median, "gpu_assist_median_s": ours_median,
        "ratio_skypilot_over_gpu_assist": sky_median / ours_median, "runs": runs,
        "skypilot_cheapest_line": next((line for line in sky_out.splitlines() if "p4d.24xlarge" in line), ""),
        "gpu_assist_cheapest_line": next((line for line in ours_out.splitlines() if line.strip().startswith("1 ")), ""),
    }


def measure(runs: int = 5) -> dict:
    """The figures, or {"skipped": reason} when SkyPilot cannot be installed or run here."""
    if os.environ.get("GPU_ASSIST_BENCH_SKYPILOT") == "0":
        return {"skipped": "GPU_ASSIST_BENCH_SKYPILOT=0"}
    try:
        sky = _install()
    except Skipped as reason:
        return {"skipped": str(reason)}
    try:
        return _compare(sky, runs)
    except Skipped as reason:
        return {"skipped": str(reason)}
    except (OSError, subprocess.SubprocessError) as error:
        return {"skipped": f"SkyPilot did not run ({_one_line(str(error))})"}
    finally:
        _stop_api_server(sky)


def _stop_api_server(sky: Path) -> None:
    """The API server the first call started (in .bench/skypilot-home); best effort."""
    try:
        subprocess.run([str(sky), "api", "stop"], capture_output=True, timeout=60, env=_sky_environment())
    except (OSError, subprocess.SubprocessError):
        pass


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
