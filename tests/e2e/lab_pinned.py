"""A jupyter_server extension for the browser tests: the started JupyterLab's gpu-assist routes on a pinned clock,
the bundled catalogs, two scripted GPUs and a team whose month already holds launches.

It runs inside the JupyterLab process the test starts (`--ServerApp.jpserver_extensions`), once its event loop
starts, so after gpu_assist.jupyter has registered its routes: it puts in their place a Context
(`jupyter_context.pin_context`) whose clock reads 2026-12-01 09:00 UTC while the seed launches are asked for and
approved through the lifecycle (AWS is the moto server the test gives it), then support.NOON (2026-12-02 12:00).
The two GPUs are tests/fake_nvml.py's: GPU 0 busy (its use moving between 70 and 95 %), GPU 1 idle (2 %); the
sampler's clock moves 30 s a sample, so the sidebar's five-minute sparkline and its idle call-out fill in seconds.
"""

from __future__ import annotations

import datetime as dt
import itertools

from fake_nvml import FakeGpu, FakeNvml
from jupyter_context import pin_context
from support import CATALOGS, NOON, Clock, submit_launch

from gpu_assist.catalog import load_catalog
from gpu_assist.host.nvml import NvmlSampler

# (requester, the launch's words, hours before NOON it was approved); bob approves them all.
SEED = (("jupyter:carol", "8xA100 72h region=us-east-1 project=vision", 27),
        ("jupyter:alice", "1xH100 24h region=us-east-1 project=nlp", 20))
SAMPLE_STEP_S = 30


class _Swinging(FakeNvml):
    """GPU 0's use swings between 70 and 95 % from one sample to the next; the rest report as scripted."""

    def __init__(self, gpus: list[FakeGpu]):
        super().__init__(gpus)
        self._swing = itertools.cycle((72, 88, 95, 81, 70, 90))

    def nvmlDeviceGetUtilizationRates(self, gpu):
        rates = super().nvmlDeviceGetUtilizationRates(gpu)
        if gpu is self.gpus[0]:
            rates.gpu = next(self._swing)
        return rates


def _sampler_clock():
    ticks = itertools.count()
    return lambda: NOON.timestamp() + SAMPLE_STEP_S * next(ticks)


def _sampler() -> NvmlSampler:
    gpus = [FakeGpu(name="NVIDIA H100 80GB HBM3", uuid="GPU-0", memory_used=61 * 2**30),
            FakeGpu(name="NVIDIA H100 80GB HBM3", uuid="GPU-1", gpu_pct=2, memory_pct=1, memory_used=2**29)]
    return NvmlSampler(_Swinging(gpus), clock=_sampler_clock())


def _pin(serverapp) -> None:
    catalog = load_catalog(CATALOGS, cache_dir=None)
    clock = Clock(NOON - dt.timedelta(hours=SEED[0][2]))
    sampler = _sampler()
    context = pin_context(serverapp, catalog, clock, sampler_factory=lambda: sampler)
    for requester, words, hours_before in SEED:
        clock.now = NOON - dt.timedelta(hours=hours_before)
        record = submit_launch(context.approvals, requester, words)
        context.approvals.approve(record.id, "jupyter:bob", reason="seed")
    clock.now = NOON
    serverapp.log.info("lab_pinned: gpu-assist pinned to %s with %d launches", NOON.isoformat(), len(SEED))


def _jupyter_server_extension_points():
    return [{"module": "lab_pinned"}]


def _load_jupyter_server_extension(serverapp):
    from tornado.ioloop import IOLoop

    IOLoop.current().add_callback(_pin, serverapp)
