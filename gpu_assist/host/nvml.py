"""Local GPUs through NVML (`nvidia-ml-py`, module `pynvml`): samples, snapshots and a background poller.

Importing this module touches no driver. `NvmlSampler` initialises NVML on its first sample; a missing
library, a missing driver, an unsupported field or a GPU that falls off the bus are ordinary results
(`Snapshot(gpus=(), reason="NVIDIA driver not found …")`, a field `None` listed in `unsupported`, an entry
in `errors`), never exceptions. The NVML binding is a parameter, so tests pass a fake one.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, TypeVar

_RETRY_INIT_AFTER_S = 60.0
# NVML return codes (nvml.h's nvmlReturn_t, stable across driver versions).
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
T = TypeVar("T")
Handle = object  # NVML's opaque device handle


class Utilization(Protocol):
    gpu: int
    memory: int


class MemoryInfo(Protocol):
    used: int
    total: int


class ProcessInfo(Protocol):
    pid: int


class NvmlBinding(Protocol):
    """What the sampler calls of `pynvml` (the module itself in production, a fake one in tests)."""

    NVML_PCIE_UTIL_TX_BYTES: int
    NVML_PCIE_UTIL_RX_BYTES: int
    NVML_TEMPERATURE_GPU: int
    NVML_CLOCK_SM: int

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlSystemGetDriverVersion(self) -> str | bytes: ...
    def nvmlSystemGetProcessName(self, pid: int) -> str | bytes: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Handle: ...
    def nvmlDeviceGetUtilizationRates(self, handle: Handle) -> Utilization: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Handle) -> MemoryInfo: ...
    def nvmlDeviceGetPowerUsage(self, handle: Handle) -> int: ...
    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Handle) -> int: ...
    def nvmlDeviceGetPcieThroughput(self, handle: Handle, _counter: int, /) -> int: ...
    def nvmlDeviceGetName(self, handle: Handle) -> str | bytes: ...
    def nvmlDeviceGetUUID(self, handle: Handle) -> str | bytes: ...
    def nvmlDeviceGetTemperature(self, handle: Handle, _sensor: int, /) -> int: ...
    def nvmlDeviceGetClockInfo(self, handle: Handle, clock: int) -> int: ...
    def nvmlDeviceGetNvLinkState(self, handle: Handle, link: int) -> int: ...
    def nvmlDeviceGetComputeRunningProcesses(self, handle: Handle) -> Sequence[ProcessInfo]: ...
    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: Handle) -> Sequence[ProcessInfo]: ...


@dataclass(frozen=True)
class ProcessSample:
    pid: int
    used_memory_mib: float | None
    name: str | None  # None where NVML may not tell (another user's process)


@dataclass(frozen=True)
class GpuSample:
    index: int
    name: str | None = None
    uuid: str | None = None
    utilization_gpu_pct: float | None = None
    utilization_memory_pct: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    pcie_tx_kib_s: float | None = None
    pcie_rx_kib_s: float | None = None
    nvlink_active_links: int | None = None
    processes: tuple[ProcessSample, ...] = ()
    unsupported: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Snapshot:
    taken_at: float  # seconds since the epoch
    gpus: tuple[GpuSample, ...] = ()
    reason: str | None = None  # why there are no GPUs, when there are none
    driver_version: str | None = None
    errors: tuple[str, ...] = ()
    sample_cost_s: float | None = field(default=None, compare=False)  # CPU time the sample took

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class NvmlSampler:
    """Reads every GPU once per `sample()`; safe to call from one thread at a time."""

    def __init__(self, nvml: NvmlBinding | None = None, *, clock: Callable[[], float] = time.time):
        self._nvml = nvml
        self._clock = clock
        self._ready = False
        self._failure: tuple[float, str] | None = None

    def _start(self) -> str | None:
        """Initialise NVML; the reason it cannot be, or None."""
        if self._ready:
            return None
        if self._failure and self._clock() - self._failure[0] < _RETRY_INIT_AFTER_S:
            return self._failure[1]
        try:
            if self._nvml is None:
                # pynvml here, not at the top: importing gpu_assist never loads it, and its absence is a reason
                import pynvml

                self._nvml = pynvml
            self._binding().nvmlInit()
        except ImportError:
            reason = "nvidia-ml-py is not installed (pip install nvidia-ml-py)"
        except Exception as error:  # noqa: BLE001 - NVMLError or a broken binding: both mean "no GPU here"
            code = getattr(error, "value", None)
            if code in (NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_DRIVER_NOT_LOADED):
                reason = f"NVIDIA driver not found ({error})"
            else:
                reason = f"NVML could not start ({error})"
        else:
            self._ready, self._failure = True, None
            return None
        self._failure = (self._clock(), reason)
        return reason

    def close(self) -> None:
        if self._ready:
            try:
                self._binding().nvmlShutdown()
            except Exception:  # noqa: BLE001 - shutting down a lost driver is not the user's problem
                pass
            self._ready = False

    def _binding(self) -> NvmlBinding:
        """The binding, set by the time NVML has started."""
        if self._nvml is None:
            raise RuntimeError("NVML was used before it started")
        return self._nvml

    def sample(self) -> Snapshot:
        started_cpu = time.process_time()
        now = self._clock()
        reason = self._start()
        if reason:
            return Snapshot(taken_at=now, reason=reason, sample_cost_s=time.process_time() - started_cpu)
        nvml = self._binding()
        errors: list[str] = []
        try:
            count = nvml.nvmlDeviceGetCount()
        except Exception as error:  # noqa: BLE001
            return Snapshot(taken_at=now, reason=f"cannot count GPUs ({error})",
                            sample_cost_s=time.process_time() - started_cpu)
        driver = self._call(nvml.nvmlSystemGetDriverVersion, "driver_version", [], [])
        gpus: list[GpuSample] = []
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
            except Exception as error:  # noqa: BLE001 - e.g. the GPU fell off the bus
                errors.append(f"GPU {index}: {error}")
                gpus.append(GpuSample(index=index, errors=(f"unreachable: {error}",)))
                continue
            gpus.append(self._gpu(index, handle))
        return Snapshot(taken_at=now, gpus=tuple(gpus), reason=None if gpus else "no NVIDIA GPU on this machine",
                        driver_version=_text(driver) if driver is not None else None, errors=tuple(errors),
                        sample_cost_s=time.process_time() - started_cpu)

    def _call(self, function: Callable[..., T], name: str, unsupported: list[str], errors: list[str],
              *args: object) -> T | None:
        """One NVML query: its value, or None with the field noted as unsupported or failed."""
        try:
            return function(*args)
        except Exception as error:  # noqa: BLE001
            if getattr(error, "value", None) == NVML_ERROR_NOT_SUPPORTED:
                unsupported.append(name)
            else:
                errors.append(f"{name}: {error}")
            return None

    def _gpu(self, index: int, handle: Handle) -> GpuSample:
        nvml = self._binding()
        unsupported: list[str] = []
        errors: list[str] = []

        def read(function: Callable[..., T], name: str, *args: object) -> T | None:
            return self._call(function, name, unsupported, errors, handle, *args)

        utilization = read(nvml.nvmlDeviceGetUtilizationRates, "utilization")
        memory = read(nvml.nvmlDeviceGetMemoryInfo, "memory")
        power = read(nvml.nvmlDeviceGetPowerUsage, "power")
        limit = read(nvml.nvmlDeviceGetEnforcedPowerLimit, "power_limit")
        tx = read(nvml.nvmlDeviceGetPcieThroughput, "pcie_tx", nvml.NVML_PCIE_UTIL_TX_BYTES)
        rx = read(nvml.nvmlDeviceGetPcieThroughput, "pcie_rx", nvml.NVML_PCIE_UTIL_RX_BYTES)
        name = read(nvml.nvmlDeviceGetName, "name")
        uuid = read(nvml.nvmlDeviceGetUUID, "uuid")
        return GpuSample(
            index=index,
            name=_text(name) if name is not None else None,
            uuid=_text(uuid) if uuid is not None else None,
            utilization_gpu_pct=float(utilization.gpu) if utilization is not None else None,
            utilization_memory_pct=float(utilization.memory) if utilization is not None else None,
            memory_used_mib=memory.used / 2**20 if memory is not None else None,
            memory_total_mib=memory.total / 2**20 if memory is not None else None,
            temperature_c=_float(read(nvml.nvmlDeviceGetTemperature, "temperature", nvml.NVML_TEMPERATURE_GPU)),
            power_w=power / 1000 if power is not None else None,
            power_limit_w=limit / 1000 if limit is not None else None,
            sm_clock_mhz=_float(read(nvml.nvmlDeviceGetClockInfo, "sm_clock", nvml.NVML_CLOCK_SM)),
            pcie_tx_kib_s=_float(tx), pcie_rx_kib_s=_float(rx),
            nvlink_active_links=self._nvlink_links(handle, unsupported),
            processes=self._processes(handle, unsupported, errors),
            unsupported=tuple(unsupported), errors=tuple(errors),
        )

    def _nvlink_links(self, handle: Handle, unsupported: list[str]) -> int | None:
        nvml, active = self._binding(), 0
        for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 0)):
            try:
                active += 1 if nvml.nvmlDeviceGetNvLinkState(handle, link) else 0
            except Exception:  # noqa: BLE001 - no NVLink, or no more links: stop counting
                if link == 0:
                    unsupported.append("nvlink")
                    return None
                break
        return active

    def _processes(self, handle: Handle, unsupported: list[str], errors: list[str]) -> tuple[ProcessSample, ...]:
        nvml, found = self._binding(), dict[int, ProcessSample]()
        for getter, name in ((nvml.nvmlDeviceGetComputeRunningProcesses, "compute_processes"),
                             (nvml.nvmlDeviceGetGraphicsRunningProcesses, "graphics_processes")):
            for process in self._call(getter, name, unsupported, errors, handle) or ():
                used = getattr(process, "usedGpuMemory", None)
                found[process.pid] = ProcessSample(
                    pid=int(process.pid),
                    used_memory_mib=used / 2**20 if isinstance(used, int) else None,
                    name=self._process_name(process.pid))
        return tuple(sorted(found.values(), key=lambda p: p.pid))

    def _process_name(self, pid: int) -> str | None:
        try:
            return _text(self._binding().nvmlSystemGetProcessName(pid))
        except Exception:  # noqa: BLE001 - no permission to see another user's process
            return None


def _float(value: float | None) -> float | None:
    return float(value) if value is not None else None


class Poller:
    """Samples in a background thread every `interval_s`, keeping `history_s` of snapshots in a ring."""

    def __init__(self, sampler: NvmlSampler, *, interval_s: float = 1.0, history_s: float = 600.0):
        self.sampler = sampler
        self.interval_s = interval_s
        self._history: collections.deque[Snapshot] = collections.deque(maxlen=max(1, int(history_s / interval_s)))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "Poller":
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="gpu-assist-poller", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.sampler.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            snapshot = self.sampler.sample()
            with self._lock:
                self._history.append(snapshot)
            self._stop.wait(self.interval_s)

    def latest(self) -> Snapshot | None:
        with self._lock:
            return self._history[-1] if self._history else None

    def history(self) -> list[Snapshot]:
        with self._lock:
            return list(self._history)

    def averages(self, window_s: float | None = None) -> dict[int, dict[str, float]]:
        """Per GPU index: mean GPU and memory utilisation over the last `window_s` (all history by default)."""
        snapshots = self.history()
        if window_s is not None and snapshots:
            newest = snapshots[-1].taken_at
            snapshots = [s for s in snapshots if newest - s.taken_at <= window_s]
        return average_utilization(snapshots)


IDLE_BELOW_PCT = 10.0  # the fleet's default idle threshold too (`fleet.fleet_report`)


def idle_gpus(snapshots: Sequence[Snapshot], threshold_pct: float = IDLE_BELOW_PCT) -> tuple[int, ...]:
    """The GPUs (indexes) idle through `snapshots`: every sample's utilisation known and below `threshold_pct`,
    and no process holding memory on them in the last. One snapshot says "idle now"; a poller's window says
    idle for that long. A GPU whose utilisation NVML cannot read is never called idle."""
    if not snapshots:
        return ()
    last = snapshots[-1]
    candidates = {gpu.index for gpu in last.gpus if not gpu.processes}
    for snapshot in snapshots:
        candidates &= {gpu.index for gpu in snapshot.gpus
                       if gpu.utilization_gpu_pct is not None and gpu.utilization_gpu_pct < threshold_pct}
    return tuple(sorted(candidates))


def average_utilization(snapshots: list[Snapshot]) -> dict[int, dict[str, float]]:
    sums: dict[int, dict[str, list[float]]] = {}
    for snapshot in snapshots:
        for gpu in snapshot.gpus:
            slot = sums.setdefault(gpu.index, {"utilization_gpu_pct": [], "memory_used_mib": []})
            for key in slot:
                value = getattr(gpu, key)
                if value is not None:
                    slot[key].append(value)
    return {index: {key: sum(values) / len(values) for key, values in slot.items() if values}
            for index, slot in sums.items()}
