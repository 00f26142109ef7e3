"""The GPU half of the exposition from fake NVML samples: a reading NVML cannot give is left out, never 0."""

from __future__ import annotations

import pytest
from fake_nvml import FakeGpu, FakeNvml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gpu_assist.host.nvml import NvmlSampler
from gpu_assist.metrics import GpuAssistCollector, registry

pytestmark = pytest.mark.clock  # the samples are dated by the wall clock


def _names(collected: CollectorRegistry) -> dict[str, list]:
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(generate_latest(collected).decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def test_an_unsupported_reading_has_no_sample_and_no_store_means_no_team_series():
    sampler = NvmlSampler(FakeNvml([FakeGpu(unsupported={"power", "temperature"})]))
    snapshot = sampler.sample()
    samples = _names(registry(GpuAssistCollector(lambda: [snapshot])))
    assert [s.value for s in samples["gpu_assist_local_gpus"]] == [1]
    assert "gpu_assist_gpu_power_watts" not in samples and "gpu_assist_gpu_temperature_celsius" not in samples
    assert samples["gpu_assist_gpu_memory_used_bytes"][0].value == 10 * 2**30
    assert "gpu_assist_store_up" not in samples and "gpu_assist_spend_month_to_date" not in samples


def test_a_machine_without_a_driver_is_zero_gpus_not_an_error():
    from fake_nvml import NVML_ERROR_DRIVER_NOT_LOADED

    snapshot = NvmlSampler(FakeNvml([], init_error=NVML_ERROR_DRIVER_NOT_LOADED)).sample()
    samples = _names(registry(GpuAssistCollector(lambda: [snapshot])))
    assert [s.value for s in samples["gpu_assist_local_gpus"]] == [0]
    assert "gpu_assist_gpu_utilization_ratio" not in samples
