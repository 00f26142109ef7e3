"""`make test-time`: the test part of `make test`, step by step, timed against the suite's budget, so a test
that makes the suite slower shows up as a figure and not only as a longer wait.

The steps are `make test`'s (the Makefile passes its PYTEST_PARALLEL and MOVED_CLOCKS): every test once at the
real clock on every core, then the `clock`-marked tests at each moved clock; and apart, the fast in-process suite
(`make test-fast`). Printed: each step's wall time and outcome counts, the whole against the budget (15 minutes
for the steps of `make test`, 45 s for the fast suite), the ten slowest tests of the first step (setup, call and
teardown together), how many tests are marked `clock`, and the load average before and after: on a machine
that others share, a figure is the suite's only when the load stayed near the number of cores.

Exit status: 1 when a step failed, 2 when every step passed but a budget was overrun, 0 otherwise."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUDGET_S = 15 * 60  # every step of `make test` together, on a 2-core machine
FAST_BUDGET_S = 45  # `make test-fast`
PARALLEL = os.environ.get("PYTEST_PARALLEL", "-n auto --dist loadfile")
MOVED_CLOCKS = os.environ.get("MOVED_CLOCKS", "2027-06-15T03:00:00Z 2027-12-31T23:59:30Z").split()


def steps() -> list[tuple[str, list[str]]]:
    parallel = shlex.split(PARALLEL)
    return [("every test, real clock", [*parallel]),
            *((f"clock-marked, {instant}", [*parallel, "-p", "no:randomly", "-m", "clock", "--moved-clock", instant])
              for instant in MOVED_CLOCKS),
            ("fast suite (make test-fast)", ["-m", "not slow"])]


def _pytest(args: list[str], report: Path) -> tuple[int, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", f"--junitxml={report}", *args], cwd=REPO)
    return done.returncode, time.monotonic() - started


def _cases(report: Path) -> list[tuple[str, float, str]]:
    """(test id, seconds, outcome) of each test in a JUnit report."""
    if not report.exists():
        return []
    cases = []
    for case in ET.parse(report).iter("testcase"):
        kinds = {found.tag for found in case}
        outcome = "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"
        name = case.get("classname", "").replace(".", "/") + ".py::" + case.get("name", "")
        cases.append((name, float(case.get("time", 0)), outcome))
    return cases


def _clock_marked() -> int:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-m", "clock", "-p", "no:randomly"],
                          cwd=REPO, capture_output=True, text=True)
    return sum(1 for line in done.stdout.splitlines() if "::" in line)


def main() -> int:
    load_before = os.getloadavg()
    rows, failed, slowest = [], False, []
    with tempfile.TemporaryDirectory(prefix="gpu-assist-suite-time-") as folder:
        for n, (name, args) in enumerate(steps()):
            report = Path(folder) / f"step-{n}.xml"
            code, wall = _pytest(args, report)
            cases = _cases(report)
            counts = {kind: sum(1 for *_, outcome in cases if outcome == kind) for kind in ("passed", "failed",
                                                                                            "skipped")}
            rows.append((name, wall, counts, code))
            failed |= code != 0
            if n == 0:
                slowest = sorted(cases, key=lambda case: -case[1])[:10]
    load_after = os.getloadavg()
    make_test_s = sum(wall for name, wall, *_ in rows if not name.startswith("fast"))
    fast_s = next(wall for name, wall, *_ in rows if name.startswith("fast"))
    print(f"\nsuite time, {os.cpu_count()} cores, load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after (1 min), {load_after[1]:.1f} over the last 5 min")
    for name, wall, counts, code in rows:
        outcome = ", ".join(f"{number} {kind}" for kind, number in counts.items() if number)
        print(f"  {name:<42} {wall:7.1f} s  {outcome}{'' if code == 0 else f'  (exit {code})'}")
    over = make_test_s > BUDGET_S or fast_s > FAST_BUDGET_S
    print(f"  make test's steps together: {make_test_s / 60:.1f} min of a {BUDGET_S // 60}-minute budget; "
          f"the fast suite {fast_s:.0f} s of {FAST_BUDGET_S} s" + ("  OVER BUDGET" if over else ""))
    print(f"  tests marked clock (run again at each moved clock): {_clock_marked()}")
    print("  ten slowest tests of the first step (setup + call + teardown):")
    for name, seconds, _ in slowest:
        print(f"    {seconds:6.1f} s  {name}")
    return 1 if failed else 2 if over else 0


if __name__ == "__main__":
    sys.exit(main())
