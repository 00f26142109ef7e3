"""CPU cost of one NVML sample and of a minute of 1 Hz polling, with a scripted 8-GPU NVML.

Prints JSON; `bench/run.py` collects it. The real-GPU figure comes from `bench/gpu_check.py`.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_nvml import FakeNvml, eight_gpus  # noqa: E402

from gpu_assist.host.nvml import NvmlSampler, Poller  # noqa: E402


def measure(samples: int = 2000) -> dict:
    sampler = NvmlSampler(FakeNvml(eight_gpus()))
    sampler.sample()  # initialise outside the measurement
    costs = []
    for _ in range(samples):
        started = time.process_time()
        sampler.sample()
        costs.append(time.process_time() - started)
    costs.sort()
    # The poller itself at a fast rate, to show the thread adds nothing per sample beyond the sample.
    poller = Poller(NvmlSampler(FakeNvml(eight_gpus())), interval_s=0.01, history_s=600)
    started_cpu, started_wall = time.process_time(), time.perf_counter()
    poller.start()
    time.sleep(2.0)
    poller.stop()
    polled = len(poller.history())
    poller_cpu = (time.process_time() - started_cpu) / max(1, polled)
    per_sample = statistics.median(costs)
    return {
        "gpus": 8,
        "samples": samples,
        "cpu_s_per_sample_median": per_sample,
        "cpu_s_per_sample_p99": costs[int(0.99 * (len(costs) - 1))],
        "cpu_s_per_minute_at_1hz": per_sample * 60,
        "cpu_share_at_1hz": per_sample,  # seconds of CPU per second of wall time
        "poller_samples_in_2s_at_100hz": polled,
        "poller_cpu_s_per_sample": poller_cpu,
        "wall_s": time.perf_counter() - started_wall,
    }


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
