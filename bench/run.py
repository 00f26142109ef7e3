"""`make bench`: run every benchmark, print the figures against their targets, and write
bench/results/latest.json and bench/results/latest.md."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import poller_cost  # noqa: E402
import quote_speed  # noqa: E402
import skypilot_compare  # noqa: E402
import slack_load  # noqa: E402


def quote_peak_rss_mib() -> float:
    code = ("import resource, sys, io, contextlib\nfrom gpu_assist.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['quote', '8xA100', '72h'])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(done.stdout.strip().splitlines()[-1]) / 1024


def _level(results: dict, clients: int, varied: bool) -> dict:
    return next(level for level in results["levels"] if level["clients"] == clients and level["varied"] is varied)


def targets(results: dict) -> list[tuple[str, str, str, bool]]:
    """(figure, measured, target, met) for each figure the issue sets a target for."""
    quote, slack, poller = results["quote"], results["slack"], results["poller"]
    rows = [
        ("cold CLI quote, median", f"{quote['cold_cli']['median_ms']:.0f} ms", "≤ 500 ms",
         quote["cold_cli"]["median_ms"] <= 500),
        ("warm quote p99, bundled catalog", f"{quote['warm_1x']['p99_ms']:.2f} ms", "≤ 5 ms",
         quote["warm_1x"]["p99_ms"] <= 5),
        ("warm quote p99, 10× catalog", f"{quote['warm_10x']['p99_ms']:.2f} ms", "≤ 50 ms",
         quote["warm_10x"]["p99_ms"] <= 50),
    ]
    for varied in (True, False):
        label = "distinct quotes" if varied else "one repeated quote"
        fifty = _level(slack, 50, varied)
        best = max(level["commands_per_s"] for level in slack["levels"] if level["varied"] is varied)
        rows.append((f"Slack ack p99 at 50 clients ({label})", f"{fifty['ack_p99_ms']:.0f} ms", "≤ 50 ms",
                     fifty["ack_p99_ms"] <= 50))
        rows.append((f"Slack commands/s ({label})", f"{best:.0f}", "≥ 300", best >= 300))
    rows += [
        ("Slack server peak RSS", f"{slack['server_peak_rss_mib']:.0f} MiB", "≤ 250 MB",
         slack["server_peak_rss_mib"] * 1.048576 <= 250),
        ("poller CPU per sample, 8 fake GPUs", f"{poller['cpu_s_per_sample_median'] * 1e6:.0f} µs", "nearly nothing",
         poller["cpu_s_per_sample_median"] < 0.001),
    ]
    return rows


def main() -> int:
    results = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "quote": quote_speed.main(),
        "quote_cli_peak_rss_mib": quote_peak_rss_mib(),
        "poller": poller_cost.measure(),
        "slack": slack_load.measure(),
        "skypilot": skypilot_compare.measure(),
    }
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=2))
    lines = [f"# Benchmarks ({results['when']}, {results['machine']['cpus']} CPUs, Python "
             f"{results['machine']['python']})", "", "| figure | measured | target | met |", "|---|---|---|---|"]
    lines += [f"| {name} | {value} | {target} | {'yes' if met else 'NO'} |" for name, value, target, met in
              targets(results)]
    lines += ["", "| Slack load | clients | ack p50 | ack p99 | commands/s | errors |", "|---|---|---|---|---|---|"]
    for level in results["slack"]["levels"]:
        lines.append(f"| {'distinct' if level['varied'] else 'repeated'} | {level['clients']} | "
                     f"{level['ack_p50_ms']:.0f} ms | {level['ack_p99_ms']:.0f} ms | {level['commands_per_s']:.0f} | "
                     f"{level['errors']} |")
    q = results["quote"]
    lines += ["", "| quote | offers | median | p99 |", "|---|---|---|---|"]
    for key in ("warm_1x", "warm_10x", "warm_100x"):
        lines.append(f"| {key} | {q[key]['offers']} | {q[key]['median_ms']:.2f} ms | {q[key]['p99_ms']:.2f} ms |")
    lines.append(f"| cold CLI | | {q['cold_cli']['median_ms']:.0f} ms | {q['cold_cli']['p99_ms']:.0f} ms |")
    lines += ["", f"CLI quote peak RSS: {results['quote_cli_peak_rss_mib']:.0f} MiB.", ""]
    sky = results["skypilot"]
    if "skipped" in sky:
        lines.append(f"SkyPilot side by side: skipped ({sky['skipped']}).")
    else:
        lines.append(f"SkyPilot {sky['skypilot_version']} `sky gpus list A100:8 --cloud aws`: median "
                     f"{sky['skypilot_median_s']:.2f} s (first call, starting its API server, "
                     f"{sky['skypilot_first_call_s']:.2f} s); `gpu-assist quote 8xA100 8h aws on-demand`: "
                     f"{sky['gpu_assist_median_s']:.2f} s; ratio {sky['ratio_skypilot_over_gpu_assist']:.1f}×. "
                     f"Both name p4d.24xlarge: `{sky['skypilot_cheapest_line'].strip()}` / "
                     f"`{sky['gpu_assist_cheapest_line'].strip()}`.")
    (out / "latest.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
