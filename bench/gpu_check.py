"""Real-GPU check: sample the NVIDIA GPUs of this machine at 1 Hz for 10 s through `NvmlSampler`, and write
the snapshots and the sampler's CPU cost to a JSON file (default bench/results/gpu_check-<host>.json).

Run it wherever an NVIDIA GPU is: `python bench/gpu_check.py [OUT.json] [--seconds 10]`.
Exit 0 with GPUs seen, 1 when there are none (the reason is in the file and on stdout).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

from gpu_assist.host.nvml import NvmlSampler


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", type=Path,
                        default=Path(__file__).parent / "results" / f"gpu_check-{platform.node()}.json")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    sampler = NvmlSampler()
    snapshots = []
    started = time.monotonic()
    while time.monotonic() - started < args.seconds:
        snapshots.append(sampler.sample())
        time.sleep(max(0.0, 1.0 - (time.monotonic() - started) % 1.0))
    sampler.close()
    costs = sorted(s.sample_cost_s for s in snapshots[1:] or snapshots)
    result = {
        "host": platform.node(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpus": len(snapshots[-1].gpus),
        "gpu_names": sorted({g.name for g in snapshots[-1].gpus if g.name}),
        "reason": snapshots[-1].reason,
        "samples": len(snapshots),
        "first_sample_cpu_s": snapshots[0].sample_cost_s,
        "cpu_s_per_sample_median": statistics.median(costs),
        "cpu_s_per_sample_max": costs[-1],
        "unsupported_fields": sorted({f for s in snapshots for g in s.gpus for f in g.unsupported}),
        "errors": sorted({e for s in snapshots for e in s.errors}),
        "snapshots": [s.to_dict() for s in snapshots],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    summary = {k: v for k, v in result.items() if k != "snapshots"}
    print(json.dumps(summary, indent=2))
    return 0 if result["gpus"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
