"""Python runs this at start-up in every process the tests start (tests/conftest.py puts this folder on PYTHONPATH
for the whole run):

- the process reaches nothing beyond loopback, as the test process does (loopback_only.py);
- its wall clock is the test process's: while `pytest --moved-clock` moves the suite's clock, shifted by the same
  offset, so a server and its test agree on the time (a Slack signature's age, a TTL, a digest's day); monotonic
  clocks and sleeps are left alone. Every reading of it by the project's code is logged for the test process,
  which fails an unmarked test that depends on the clock (clock_reads.py);
- where GPU_ASSIST_TEST_DMI_DIR names a folder laid out as /sys/class/dmi/id, gpu_assist.host.cloud_host reads the
  firmware's strings from it, so a test says which cloud's instance the process runs on (tests/offline.py)."""

import os

import clock_reads
import loopback_only

loopback_only.install()

_SHIFT = os.environ.get(clock_reads.SHIFT_ENV)
_CLOCK_LOG = os.environ.get(clock_reads.LOG_ENV)
if _SHIFT or _CLOCK_LOG:
    clock_reads.install(float(_SHIFT or 0), clock_reads.log_sink(_CLOCK_LOG) if _CLOCK_LOG else None)

_DMI_DIR = os.environ.get("GPU_ASSIST_TEST_DMI_DIR")
if _DMI_DIR:
    from pathlib import Path

    import gpu_assist.host.cloud_host

    gpu_assist.host.cloud_host.DMI_DIR = Path(_DMI_DIR)
