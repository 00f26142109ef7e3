"""Python runs this at start-up in every process the tests start (tests/conftest.py puts this folder on PYTHONPATH
for the whole run):

- the process reaches nothing beyond loopback, as the test process does (loopback_only.py);
- while `pytest --moved-clock` moves the suite's clock, the process's wall clock is shifted by the same offset as the
  test process's, so a server and its test agree on the time (a Slack signature's age, a TTL, a digest's day).
  Monotonic clocks and sleeps are left alone;
- where GPU_ASSIST_TEST_DMI_DIR names a folder laid out as /sys/class/dmi/id, gpu_assist.host.cloud_host reads the
  firmware's strings from it, so a test says which cloud's instance the process runs on (tests/offline.py)."""

import os

import loopback_only

loopback_only.install()

_SHIFT = os.environ.get("GPU_ASSIST_TEST_CLOCK_SHIFT_S")
if _SHIFT:
    import time

    import time_machine

    time_machine.travel(time.time() + float(_SHIFT), tick=True).start()
    time.time()  # time-machine's clock ticks from the first reading, not from start(): read it now, as the tests do

_DMI_DIR = os.environ.get("GPU_ASSIST_TEST_DMI_DIR")
if _DMI_DIR:
    from pathlib import Path

    import gpu_assist.host.cloud_host

    gpu_assist.host.cloud_host.DMI_DIR = Path(_DMI_DIR)
