"""A stand-in for the `pynvml` module with scripted GPUs, for tests and benchmarks on machines without one.

It implements the calls `NvmlSampler` makes, with pynvml's names, constants and error codes. Failures are
scripted per GPU and field: `unsupported={"power"}` raises NOT_SUPPORTED, `fail={"memory": 15}` raises that
code (15 = GPU_IS_LOST), `lost=True` fails the handle lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_GPU_IS_LOST = 15
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1
NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
NVML_NVLINK_MAX_LINKS = 18
_MESSAGES = {3: "Not Supported", 9: "Driver Not Loaded", 12: "NVML Shared Library Not Found", 15: "GPU is lost",
             4: "Insufficient Permissions"}


class NVMLError(Exception):
    def __init__(self, value: int):
        self.value = value
        super().__init__(_MESSAGES.get(value, f"Unknown Error {value}"))


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    gpu_pct: int = 50
    memory_pct: int = 30
    memory_used: int = 10 * 2**30
    memory_total: int = 80 * 2**30
    temperature: int = 60
    power_mw: int = 300_000
    power_limit_mw: int = 700_000
    sm_clock: int = 1980
    pcie_tx: int = 1000
    pcie_rx: int = 2000
    nvlinks: int = 18
    processes: list[tuple[int, int | None, str | None]] = field(default_factory=list)  # pid, bytes, name
    unsupported: set[str] = field(default_factory=set)
    fail: dict[str, int] = field(default_factory=dict)
    lost: bool = False


class FakeNvml:
    NVMLError = NVMLError
    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_PCIE_UTIL_TX_BYTES = NVML_PCIE_UTIL_TX_BYTES
    NVML_PCIE_UTIL_RX_BYTES = NVML_PCIE_UTIL_RX_BYTES
    NVML_NVLINK_MAX_LINKS = NVML_NVLINK_MAX_LINKS

    def __init__(self, gpus: list[FakeGpu], *, init_error: int | None = None):
        self.gpus = gpus
        self.init_error = init_error
        self.init_calls = 0
        self.shutdown_calls = 0

    def _check(self, gpu: FakeGpu, name: str) -> None:
        if name in gpu.unsupported:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        if name in gpu.fail:
            raise NVMLError(gpu.fail[name])

    def nvmlInit(self):
        self.init_calls += 1
        if self.init_error is not None:
            raise NVMLError(self.init_error)

    def nvmlShutdown(self):
        self.shutdown_calls += 1

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlSystemGetDriverVersion(self):
        return "575.57.08"

    def nvmlDeviceGetHandleByIndex(self, index):
        if self.gpus[index].lost:
            raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        return self.gpus[index]

    def nvmlDeviceGetName(self, gpu):
        self._check(gpu, "name")
        return gpu.name

    def nvmlDeviceGetUUID(self, gpu):
        self._check(gpu, "uuid")
        return gpu.uuid

    def nvmlDeviceGetUtilizationRates(self, gpu):
        self._check(gpu, "utilization")
        return SimpleNamespace(gpu=gpu.gpu_pct, memory=gpu.memory_pct)

    def nvmlDeviceGetMemoryInfo(self, gpu):
        self._check(gpu, "memory")
        return SimpleNamespace(used=gpu.memory_used, total=gpu.memory_total, free=gpu.memory_total - gpu.memory_used)

    def nvmlDeviceGetTemperature(self, gpu, sensor):
        self._check(gpu, "temperature")
        return gpu.temperature

    def nvmlDeviceGetPowerUsage(self, gpu):
        self._check(gpu, "power")
        return gpu.power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, gpu):
        self._check(gpu, "power_limit")
        return gpu.power_limit_mw

    def nvmlDeviceGetClockInfo(self, gpu, clock):
        self._check(gpu, "sm_clock")
        return gpu.sm_clock

    def nvmlDeviceGetPcieThroughput(self, gpu, counter):
        self._check(gpu, "pcie_tx" if counter == NVML_PCIE_UTIL_TX_BYTES else "pcie_rx")
        return gpu.pcie_tx if counter == NVML_PCIE_UTIL_TX_BYTES else gpu.pcie_rx

    def nvmlDeviceGetNvLinkState(self, gpu, link):
        self._check(gpu, "nvlink")
        if link >= gpu.nvlinks:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return 1

    def nvmlDeviceGetComputeRunningProcesses(self, gpu):
        self._check(gpu, "compute_processes")
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used, _ in gpu.processes]

    def nvmlDeviceGetGraphicsRunningProcesses(self, gpu):
        self._check(gpu, "graphics_processes")
        return []

    def nvmlSystemGetProcessName(self, pid):
        for gpu in self.gpus:
            for process_pid, _, name in gpu.processes:
                if process_pid == pid:
                    if name is None:
                        raise NVMLError(4)
                    return name.encode()
        raise NVMLError(4)


def eight_gpus() -> list[FakeGpu]:
    """An 8×H100 host: GPU i at 10·i % utilisation, one training process per GPU."""
    return [FakeGpu(uuid=f"GPU-{i:08d}", gpu_pct=10 * i, memory_used=(i + 1) * 2**30,
                    processes=[(1000 + i, (i + 1) * 2**30, "python")]) for i in range(8)]
