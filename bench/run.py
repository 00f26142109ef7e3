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
import slack_open_loop  # noqa: E402


def quote_peak_rss_mib() -> float:
    """The quote's own peak: VmHWM belongs to the process's memory map, which exec starts afresh, whereas
    `ru_maxrss` keeps the high-water mark of the parent forked before exec (this bench holds 100× catalogs)."""
    code = ("import sys, io, contextlib\nfrom gpu_assist.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['quote', '8xA100', '72h'])\n"
            "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(done.stdout.strip().splitlines()[-1]) / 1024


def _level(results: dict, clients: int, varied: bool) -> dict:
    return next(level for level in results["levels"] if level["clients"] == clients and level["varied"] is varied)


def _open_level(results: dict, workers: int, label: str) -> dict:
    """A level of the distinct-quote runs (the targets are set for those)."""
    config = next(c for c in results["open_loop"]["configs"] if c["workers"] == workers and c["varied"])
    return next(level for level in config["levels"] if level["label"] == label)


def targets(results: dict) -> list[tuple[str, str, str, bool]]:
    """(figure, measured, target, met) for each figure the issues set a target for."""
    quote, poller = results["quote"], results["poller"]
    cold, python_pass = quote["cold_cli"]["median_ms"], quote["cold_cli"]["python_pass"]["median_ms"]
    rows = [
        ("cold CLI quote, median", f"{cold:.0f} ms", "≤ 150 ms", cold <= 150),
        ("cold CLI quote / `python -c pass`", f"{cold / python_pass:.1f}×", "≤ 3×", cold <= 3 * python_pass),
        ("warm quote p99, bundled catalog", f"{quote['warm_1x']['p99_ms']:.2f} ms", "≤ 5 ms",
         quote["warm_1x"]["p99_ms"] <= 5),
        ("warm quote p99, 10× catalog", f"{quote['warm_10x']['p99_ms']:.2f} ms", "≤ 50 ms",
         quote["warm_10x"]["p99_ms"] <= 50),
    ]
    for workers in (1, 2):
        hundred = _open_level(results, workers, "100/s")
        rows += [
            (f"Slack ack p99 at 100 commands/s, {workers} worker(s)", f"{hundred['ack_p99_ms']:.0f} ms", "≤ 50 ms",
             hundred["ack_p99_ms"] <= 50),
            (f"Slack answer p99 at 100 commands/s, {workers} worker(s)", f"{hundred['answer_p99_ms']:.0f} ms",
             "≤ 500 ms", hundred["answer_p99_ms"] <= 500),
            (f"unanswered at 100 commands/s, {workers} worker(s)",
             f"{hundred['never_answered']} (+{hundred['busy']} busy) of {hundred['sent']}", "0",
             hundred["never_answered"] + hundred["busy"] == 0),
        ]
    verbs = quote["cold_store_verbs"]
    for verb in quote_speed.STORE_VERBS:
        median = verbs[verb]["median_ms"]
        rows.append((f"`gpu-assist {verb}` on an empty SQLite store, median (`python -c pass` "
                     f"{verbs['python_pass']['median_ms']:.0f} ms)", f"{median:.0f} ms", "< 300 ms", median < 300))
    saturation = _open_level(results, 2, "saturation").get("answers_per_s", 0)
    rows.append(("Slack saturation, 2 workers", f"{saturation:.0f} answers/s", "≥ 500", saturation >= 500))
    worst = max(r["peak_rss_mib"] for c in results["open_loop"]["configs"] for r in c["rss"])
    rows += [
        ("Slack peak RSS per worker", f"{worst:.0f} MiB", "≤ 250 MB", worst * 1.048576 <= 250),
        ("poller CPU per sample, 8 fake GPUs", f"{poller['cpu_s_per_sample_median'] * 1e6:.0f} µs", "nearly nothing",
         poller["cpu_s_per_sample_median"] < 0.001),
    ]
    return rows


def open_loop_lines(results: dict) -> list[str]:
    lines = ["| open loop | workers | sent | ack p50 | ack p99 | answer p50 | answer p99 | busy | "
             "unanswered 8 s after the last send | answers/s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for config in results["open_loop"]["configs"]:
        kind = "distinct quotes" if config["varied"] else "one quote repeated"
        for level in config["levels"]:
            rate = f"{level['answers_per_s']:.0f}" if "answers_per_s" in level else ""
            name = f"{kind}, {level['label']}" + (f" (offered {level['rate']:g}/s)" if level["label"] == "saturation"
                                                  else "")
            lines.append(f"| {name} | {config['workers']} | {level['sent']} | {level['ack_p50_ms']:.0f} ms | "
                         f"{level['ack_p99_ms']:.0f} ms | {level['answer_p50_ms']:.0f} ms | "
                         f"{level['answer_p99_ms']:.0f} ms | {level['busy']} | {level['never_answered']} | {rate} |")
    rss = "; ".join(f"{c['workers']} worker(s): " + ", ".join(f"{r['peak_rss_mib']:.0f}" for r in c["rss"])
                    for c in results["open_loop"]["configs"])
    return lines + ["", f"Peak RSS per worker process (MiB): {rss}."]


def comparison_lines(results: dict, previous: dict | None) -> list[str]:
    """Ratios to the previous run's file and to SkyPilot in this run."""
    cold = results["quote"]["cold_cli"]
    lines = [f"Cold CLI `gpu-assist quote 8xA100 8h aws on-demand`: median {cold['median_ms']:.0f} ms with the "
             f"compiled catalog cache, {cold['no_cache']['median_ms']:.0f} ms without it; `python -c pass` "
             f"{cold['python_pass']['median_ms']:.0f} ms, `import numpy` {cold['import_numpy']['median_ms']:.0f} ms, "
             f"`import pandas` {cold['import_pandas']['median_ms']:.0f} ms in the same virtual environment.",
             f"Ratio to `python -c pass`: {cold['median_ms'] / cold['python_pass']['median_ms']:.1f}×; importing only "
             f"the standard-library modules a quote uses ({len(cold['stdlib_modules'])}: dataclasses, argparse, "
             f"pathlib, typing, decimal, …) takes {cold['stdlib_floor']['median_ms']:.0f} ms, "
             f"{cold['stdlib_floor']['median_ms'] / cold['python_pass']['median_ms']:.1f}× `pass`, the floor of "
             "this design."]
    counts = results["quote"]["cold_instructions"]
    if "skipped" in counts:
        lines.append(f"Instruction counts: skipped ({counts['skipped']}).")
    else:
        lines.append(f"Instructions (callgrind, one fresh process each): cold quote {counts['quote'] / 1e6:.0f}M, "
                     f"`python -c pass` {counts['python_pass'] / 1e6:.0f}M "
                     f"({counts['quote'] / counts['python_pass']:.1f}×), the standard-library floor "
                     f"{counts['stdlib_floor'] / 1e6:.0f}M ({counts['stdlib_floor'] / counts['python_pass']:.1f}×).")
    if "before_after" in cold:
        pair = cold["before_after"]
        lines.append(f"Cold quote before and after, same run (each `gpu_assist` imported from its tree): "
                     f"{pair['revision']} {pair['before']['median_ms']:.0f} ms, this tree "
                     f"{pair['after']['median_ms']:.0f} ms "
                     f"({pair['after']['median_ms'] / pair['before']['median_ms']:.2f}×).")
    if previous:
        before = previous["quote"]["cold_cli"]["median_ms"]
        lines.append(f"Previous run ({previous['when']}): cold CLI {before:.0f} ms → now {cold['median_ms']:.0f} ms "
                     f"({cold['median_ms'] / before:.2f}× the previous).")
    return lines


def main() -> int:
    latest = HERE / "results" / "latest.json"
    previous = json.loads(latest.read_text()) if latest.exists() else None
    results = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_average_at_start": os.getloadavg()[0]},
        "quote": quote_speed.main(),
        "quote_cli_peak_rss_mib": quote_peak_rss_mib(),
        "poller": poller_cost.measure(),
        "slack": slack_load.measure(),
        "open_loop": slack_open_loop.measure(),
        "skypilot": skypilot_compare.measure(),
    }
    results["machine"]["load_average_at_end"] = os.getloadavg()[0]
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=2))
    lines = [f"# Benchmarks ({results['when']}, {results['machine']['cpus']} CPUs, Python "
             f"{results['machine']['python']})", "",
             f"1-minute load average {results['machine']['load_average_at_start']:.1f} at the start, "
             f"{results['machine']['load_average_at_end']:.1f} at the end (other work on the same CPUs slows "
             "every figure).", "", "| figure | measured | target | met |", "|---|---|---|---|"]
    lines += [f"| {name} | {value} | {target} | {'yes' if met else 'NO'} |" for name, value, target, met in
              targets(results)]
    lines += [""] + open_loop_lines(results)
    lines += ["", "| Slack closed loop | clients | ack p50 | ack p99 | commands/s | errors |",
              "|---|---|---|---|---|---|"]
    for level in results["slack"]["levels"]:
        lines.append(f"| {'distinct' if level['varied'] else 'repeated'} | {level['clients']} | "
                     f"{level['ack_p50_ms']:.0f} ms | {level['ack_p99_ms']:.0f} ms | {level['commands_per_s']:.0f} | "
                     f"{level['errors']} |")
    q = results["quote"]
    lines += ["", "| quote | offers | median | p99 |", "|---|---|---|---|"]
    for key in ("warm_1x", "warm_10x", "warm_100x", "answer_1x", "answer_10x", "answer_100x"):
        lines.append(f"| {key} | {q[key]['offers']} | {q[key]['median_ms']:.2f} ms | {q[key]['p99_ms']:.2f} ms |")
    lines.append(f"| cold CLI | | {q['cold_cli']['median_ms']:.0f} ms | {q['cold_cli']['p99_ms']:.0f} ms |")
    lines += ["", f"CLI quote peak RSS: {results['quote_cli_peak_rss_mib']:.0f} MiB.", ""]
    lines += comparison_lines(results, previous) + [""]
    sky = results["skypilot"]
    if "skipped" in sky:
        lines.append(f"SkyPilot side by side: skipped ({sky['skipped']}).")
    else:
        lines.append(f"SkyPilot {sky['skypilot_version']} `sky gpus list A100:8 --cloud aws`: median "
                     f"{sky['skypilot_median_s']:.2f} s (first call, starting its API server, "
                     f"{sky['skypilot_first_call_s']:.2f} s); `gpu-assist quote 8xA100 8h aws on-demand`: "
                     f"{sky['gpu_assist_median_s']:.2f} s; ratio {sky['ratio_skypilot_over_gpu_assist']:.1f}× "
                     f"(SkyPilot / gpu-assist, same run). "
                     f"Both name p4d.24xlarge: `{sky['skypilot_cheapest_line'].strip()}` / "
                     f"`{sky['gpu_assist_cheapest_line'].strip()}`.")
    (out / "latest.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
