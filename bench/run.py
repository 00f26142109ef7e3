"""`make bench`: run every benchmark, print the figures, write bench/results/latest.json and latest.md."""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import poller_cost  # noqa: E402
import quote_speed  # noqa: E402


def _rows(prefix: str, value, rows: list):
    if isinstance(value, dict):
        for key, inner in value.items():
            _rows(f"{prefix}.{key}" if prefix else key, inner, rows)
    else:
        rows.append((prefix, value))


def main() -> int:
    results = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "quote": quote_speed.main(),
        "poller": poller_cost.measure(),
    }
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=2))
    rows: list = []
    _rows("", results, rows)
    lines = ["| figure | value |", "|---|---|"]
    for key, value in rows:
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        lines.append(f"| {key} | {shown} |")
    (out / "latest.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
