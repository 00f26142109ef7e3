"""Tests for the clock guard to judge (tests/integration/test_clock_guard.py runs them in a pytest of their own;
a plain run does not collect this file, whose name does not start with test_). Run as a script, it prints today's
date, as a server answering a request would read it."""

from __future__ import annotations

import datetime as dt
import sys

if __name__ == "__main__":
    sys.exit(print(dt.date.today().isoformat()))

import logging  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402

from support import TODAY  # noqa: E402


def test_reads_the_date_unmarked():
    assert dt.date.today().year > 2000


@pytest.mark.clock
def test_reads_the_date_marked():
    assert dt.date.today().year > 2000


def test_reads_the_pinned_clock(pinned_wall_clock):
    assert dt.date.today() == TODAY


def test_a_process_it_starts_reads_the_date():
    done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip()


def test_a_thread_it_starts_reads_the_time():
    seen = []
    thread = threading.Thread(target=lambda: seen.append(time.time()))
    thread.start()
    thread.join()
    assert seen


def test_logs_and_sleeps_without_reading_the_date():
    logging.getLogger("gpu_assist.sample").warning("a log record's time is the logging module's business")
    time.sleep(0.01)
    assert time.monotonic() > 0
