"""A server the tests start reads the same wall clock as the tests, also when `pytest --moved-clock` moves it:
otherwise a signed Slack request would look forged to it (or a forged one fresh), and a TTL or a digest's day
would differ between them."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import time_machine

pytestmark = pytest.mark.clock  # it compares the clocks of the tests and of a process they start


def test_a_python_process_the_tests_start_agrees_with_them_on_the_time(request):
    before = time.time()
    # it reads the clock for the first time 2 s after it started, as a server reads it at its first request
    started = subprocess.run([sys.executable, "-c", "import time; time.sleep(2); print(time.time())"],
                             capture_output=True, text=True, check=True, timeout=60)
    after = time.time()
    theirs = float(started.stdout)
    assert before + 1.9 <= theirs <= after + 0.1  # within a Slack signature's margin of a second, not 2 s behind
    if request.config.gpu_assist_moved_to is not None:  # and the shared clock really is the moved one
        assert abs(theirs - time_machine.escape_hatch.time.time()) > 3600
