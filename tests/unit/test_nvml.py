"""NVML sampling with a scripted NVML: 0, 1 and 8 GPUs, unsupported fields, errors mid-sample, the poller."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from fake_nvml import NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_GPU_IS_LOST, FakeGpu, FakeNvml, eight_gpus

from gpu_assist.host.nvml import NvmlSampler, Poller, average_utilization, idle_gpus
from gpu_assist.render import operations as _operations  # noqa: F401 - registers the snapshot's text
from gpu_assist.render.text import render

pytestmark = pytest.mark.clock  # the samples are dated by the wall clock


def test_importing_gpu_assist_touches_no_driver_and_no_heavy_module():
    code = ("import sys, gpu_assist, gpu_assist.host.nvml, gpu_assist.commands;"
            "print(sorted(m for m in ('pynvml', 'pandas', 'boto3') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_eight_gpus_give_their_numbers_and_processes():
    snapshot = NvmlSampler(FakeNvml(eight_gpus())).sample()
    assert snapshot.reason is None and snapshot.errors == ()
    assert [g.index for g in snapshot.gpus] == list(range(8))
    assert [g.utilization_gpu_pct for g in snapshot.gpus] == [0, 10, 20, 30, 40, 50, 60, 70]
    third = snapshot.gpus[3]
    assert third.memory_used_mib == 4 * 1024 and third.memory_total_mib == 80 * 1024
    assert third.power_w == 300 and third.power_limit_w == 700 and third.temperature_c == 60
    assert third.sm_clock_mhz == 1980 and third.nvlink_active_links == 18
    assert [(p.pid, p.used_memory_mib, p.name) for p in third.processes] == [(1003, 4096, "python")]
    assert snapshot.driver_version == "575.57.08" and snapshot.sample_cost_s >= 0


def test_one_gpu_with_unsupported_fields_and_a_hidden_process():
    gpu = FakeGpu(unsupported={"power", "power_limit", "nvlink", "pcie_tx", "pcie_rx"},
                  processes=[(42, None, None)])
    sample = NvmlSampler(FakeNvml([gpu])).sample().gpus[0]
    assert sample.power_w is None and sample.nvlink_active_links is None and sample.pcie_tx_kib_s is None
    assert set(sample.unsupported) == {"power", "power_limit", "nvlink", "pcie_tx", "pcie_rx"}
    assert sample.errors == ()
    assert sample.processes[0].name is None and sample.processes[0].used_memory_mib is None


def test_zero_gpus_and_no_driver_are_ordinary_results():
    assert NvmlSampler(FakeNvml([])).sample().reason == "no NVIDIA GPU on this machine"
    fake = FakeNvml([], init_error=NVML_ERROR_DRIVER_NOT_LOADED)
    clock = [1000.0]
    sampler = NvmlSampler(fake, clock=lambda: clock[0])
    snapshot = sampler.sample()
    assert snapshot.gpus == () and snapshot.reason == "NVIDIA driver not found (Driver Not Loaded)"
    sampler.sample()
    assert fake.init_calls == 1  # no retry storm at 1 Hz
    clock[0] += 61
    sampler.sample()
    assert fake.init_calls == 2


def test_the_real_binding_on_this_machine_says_why_there_is_no_gpu():
    snapshot = NvmlSampler().sample()
    assert snapshot.gpus == () or snapshot.reason is None
    if not snapshot.gpus:
        assert snapshot.reason


def test_an_error_mid_sample_gives_a_partial_snapshot_naming_it():
    gpus = eight_gpus()
    gpus[2].lost = True
    gpus[5].fail = {"memory": NVML_ERROR_GPU_IS_LOST}
    snapshot = NvmlSampler(FakeNvml(gpus)).sample()
    assert len(snapshot.gpus) == 8
    assert snapshot.errors == ("GPU 2: GPU is lost",)
    assert snapshot.gpus[2].errors == ("unreachable: GPU is lost",) and snapshot.gpus[2].name is None
    assert snapshot.gpus[5].memory_used_mib is None and snapshot.gpus[5].errors == ("memory: GPU is lost",)
    assert snapshot.gpus[5].utilization_gpu_pct == 50
    assert snapshot.gpus[7].memory_used_mib == 8 * 1024


def test_poller_keeps_a_bounded_history_and_stops():
    fake = FakeNvml(eight_gpus())
    poller = Poller(NvmlSampler(fake), interval_s=0.01, history_s=0.05).start()
    deadline = time.monotonic() + 5
    while len(poller.history()) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    poller.stop()
    assert len(poller.history()) == 5  # the ring holds history_s / interval_s snapshots
    assert poller.latest() is poller.history()[-1]
    assert fake.shutdown_calls == 1
    count = len(poller.history())
    time.sleep(0.05)
    assert len(poller.history()) == count  # the thread has ended
    assert poller.averages()[3]["utilization_gpu_pct"] == 30


def test_average_utilization_skips_missing_values():
    gpus = [FakeGpu(gpu_pct=20)]
    first = NvmlSampler(FakeNvml(gpus)).sample()
    gpus[0].unsupported = {"utilization"}
    second = NvmlSampler(FakeNvml(gpus)).sample()
    assert average_utilization([first, second])[0]["utilization_gpu_pct"] == 20


def test_a_gpu_is_idle_only_below_the_threshold_in_every_sample_and_with_no_process():
    quiet, busy_once, unreadable, held = (FakeGpu(gpu_pct=2), FakeGpu(gpu_pct=2), FakeGpu(gpu_pct=0),
                                          FakeGpu(gpu_pct=0, processes=[(7, 2**30, "python")]))
    unreadable.unsupported = {"utilization"}
    fake = FakeNvml([quiet, busy_once, unreadable, held])
    sampler = NvmlSampler(fake)
    window = [sampler.sample()]
    busy_once.gpu_pct = 60
    window.append(sampler.sample())
    busy_once.gpu_pct = 2
    window.append(sampler.sample())
    assert idle_gpus(window) == (0,)  # 1 was busy in the window, 2 cannot be read, 3 holds a process
    assert idle_gpus(window[-1:]) == (0, 1) and idle_gpus([]) == ()
    assert idle_gpus(window[-1:], threshold_pct=2) == ()


def test_util_calls_idle_gpus_out_in_one_line_and_says_nothing_when_all_work():
    gpus = eight_gpus()
    assert "idle" not in render(NvmlSampler(FakeNvml(gpus)).sample())  # GPU 0 is at 0 % but runs a process
    gpus[0].processes, gpus[1].processes = [], []
    text = render(NvmlSampler(FakeNvml(gpus)).sample())
    assert text.splitlines()[-1] == "idle now: GPU 0 (below 10% use, no process on it)"
    gpus[1].gpu_pct = 0
    text = render(NvmlSampler(FakeNvml(gpus)).sample())
    assert text.endswith("idle now: GPUs 0, 1 (below 10% use, no process on them)")
