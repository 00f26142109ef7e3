"""The NVML sampler and `gpu-assist util` against a real NVIDIA GPU: what the scripted NVML cannot show (the
real binding's types, units and process list, and a load that the sampler sees). Skipped where NVML finds no
GPU, as on CI; run on a lent GPU machine by `bench/gpu_device_check.sh`."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpu_assist.host.nvml import NvmlSampler, Poller, idle_gpus

_FIRST = NvmlSampler(clock=lambda: 0.0).sample()  # whether there is a GPU, read as the module is collected: no time
# clock: the samples are dated by the wall clock
pytestmark = [pytest.mark.skipif(not _FIRST.gpus, reason=f"no NVIDIA GPU here: {_FIRST.reason}"), pytest.mark.clock]
_LOAD = Path(__file__).with_name("gpu_load.py")


def test_every_gpu_reports_its_identity_memory_and_load_in_their_units():
    snapshot = NvmlSampler().sample()
    assert snapshot.reason is None and snapshot.errors == ()
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", snapshot.driver_version or "")
    for gpu in snapshot.gpus:
        assert gpu.errors == (), gpu.errors
        assert (gpu.name or "").startswith("NVIDIA ") and (gpu.uuid or "").startswith("GPU-")
        assert 1024 < (gpu.memory_total_mib or 0) < 1024 * 1024  # MiB, not bytes or GiB
        assert 0 <= (gpu.memory_used_mib or 0) <= (gpu.memory_total_mib or 0)
        assert 0 <= (gpu.utilization_gpu_pct or 0) <= 100
        assert gpu.temperature_c is None or 0 < gpu.temperature_c < 120
        assert gpu.power_w is None or 0 < gpu.power_w <= (gpu.power_limit_w or 2000)  # W, not mW
    assert (snapshot.sample_cost_s or 0) < 0.5


def test_an_unused_gpu_is_called_idle():
    deadline = time.monotonic() + 15  # a load of an earlier run may still be winding down
    while time.monotonic() < deadline and 0 not in idle_gpus([NvmlSampler().sample()]):
        time.sleep(0.5)
    snapshot = NvmlSampler().sample()
    assert 0 in idle_gpus([snapshot]), snapshot.gpus[0]


@pytest.fixture
def load():
    """GPU 0 held busy by a child process until the test ends."""
    pytest.importorskip("torch")
    process = subprocess.Popen([sys.executable, str(_LOAD), "60"], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_busy_gpu_and_the_process_holding_it_are_seen(load):
    poller = Poller(NvmlSampler(), interval_s=0.25).start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            latest = poller.latest()
            if latest and latest.gpus and (latest.gpus[0].utilization_gpu_pct or 0) >= 50:
                break
            time.sleep(0.25)
        gpu = poller.latest().gpus[0]
        averages = poller.averages(window_s=2)[0]
    finally:
        poller.stop()
    assert (gpu.utilization_gpu_pct or 0) >= 50, gpu
    assert 0 not in idle_gpus(poller.history()[-4:])
    assert averages["utilization_gpu_pct"] > 0 and averages["memory_used_mib"] >= 128
    held = [p for p in gpu.processes if (p.used_memory_mib or 0) >= 128]
    assert held, gpu.processes  # the load's 128 MiB matrix, whatever pid namespace NVML reports from


def test_util_prints_the_gpus_within_100_columns(load):
    done = subprocess.run([sys.executable, "-m", "gpu_assist", "util"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert _FIRST.gpus[0].name in done.stdout and "driver" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 100, done.stdout
    assert "idle now" not in done.stdout  # GPU 0 runs the load
