"""The clock guard (tests/conftest.py, tests/child_startup/clock_reads.py) fails a test that reads the wall clock
unless it is marked `clock`, whether the test reads it, a thread it starts or a process it starts does; a pinned
clock, a log record's time and sleeps are no readings. Judged in a pytest run of its own on
clock_guard_samples.py, as a contributor's run would judge them."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from support import REPO


def _outcomes(tmp_path) -> dict[str, str]:
    report = tmp_path / "report.xml"
    own = ("GPU_ASSIST_TEST_", "PYTEST_")  # the sample run sets up its own clock, log and workers
    env = {name: value for name, value in os.environ.items() if not name.startswith(own)}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                    f"--junitxml={report}", "tests/integration/clock_guard_samples.py"],
                   cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        problems = " ".join(ET.tostring(found, encoding="unicode") for found in case
                            if found.tag in {"failure", "error"})
        outcomes[case.get("name")] = ("flagged" if "read the wall clock but is not marked" in problems else
                                      "failed" if problems else "passed")
    return outcomes


def test_an_unmarked_test_that_reads_the_clock_fails_and_nothing_else_does(tmp_path):
    assert _outcomes(tmp_path) == {
        "test_reads_the_date_unmarked": "flagged",
        "test_reads_the_date_marked": "passed",
        "test_reads_the_pinned_clock": "passed",
        "test_a_process_it_starts_reads_the_date": "flagged",
        "test_a_thread_it_starts_reads_the_time": "flagged",
        "test_logs_and_sleeps_without_reading_the_date": "passed",
    }
