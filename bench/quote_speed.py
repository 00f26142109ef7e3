"""How fast a quote is: cold CLI process, warm in-process over the bundled catalog and over 10× / 100× copies.

`warm_*` times `pricing.quote` alone (top 15); `answer_*` the whole default answer a face gives (quote, refine,
compare and the text table). Prints JSON; `bench/run.py` collects it. Figures are median and p99 over repeated
runs on this machine; the cold figures come with `python -c pass`, `import pandas` and `stdlib_floor` (importing
the standard-library modules a cold quote imports, and nothing else) timed in the same run, and with instruction
counts (`cold_instructions`, valgrind's callgrind), which a busy machine does not change. With
`GPU_ASSIST_BENCH_BASE` naming a git revision (`make bench` names the one before #30's imports moved), the cold
quote of that revision's code runs too, interleaved with this tree's, so "before" and "after" come from one run.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from gpu_assist.catalog import OFFER_COLUMNS, Catalog, load_catalog
from gpu_assist.commands import QuoteCommand
from gpu_assist.commands.quoting import quote_view
from gpu_assist.pricing.query_parser import parse_request
from gpu_assist.pricing.quote import quote
from gpu_assist.render import text as render_text

REPO = Path(__file__).resolve().parent.parent


def _stats(seconds: list[float]) -> dict:
    seconds = sorted(seconds)
    return {"median_ms": statistics.median(seconds) * 1000, "p99_ms": seconds[int(0.99 * (len(seconds) - 1))] * 1000,
            "runs": len(seconds)}


def _interleaved(commands: dict[str, tuple[list[str], dict | None]], runs: int) -> dict[str, dict]:
    """Each command `runs` times, taking turns (one run of each per round), so that load arriving on a shared
    machine slows all of them alike and their ratios stay fair; a first run of each fills caches."""
    for command, env in commands.values():
        subprocess.run(command, capture_output=True, check=True, env=env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (command, env) in commands.items():
            started = time.perf_counter()
            subprocess.run(command, capture_output=True, check=True, env=env)
            times[name].append(time.perf_counter() - started)
    return {name: _stats(seconds) for name, seconds in times.items()}


QUOTE_ARGS = ["quote", "8xA100", "8h", "aws", "on-demand"]


def _cli() -> list[str]:
    """The console script as a user runs it, bytecode compiled as a wheel install would have it (this environment
    sets PYTHONDONTWRITEBYTECODE, which would otherwise recompile gpu_assist on every start)."""
    import compileall

    compileall.compile_dir(str(REPO / "gpu_assist"), quiet=1)
    script = Path(sys.executable).parent / "gpu-assist"
    return [sys.executable, str(script)] if script.exists() else [sys.executable, "-m", "gpu_assist"]


def stdlib_of_quote() -> list[str]:
    """The standard-library packages a cold quote imports beyond what `python -c pass` has: importing these alone
    is the floor of a quote that keeps using them (dataclasses, argparse, pathlib, typing, decimal, …)."""
    code = ("import contextlib, io, sys\nbefore = set(sys.modules)\nfrom gpu_assist.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(sys.argv[1:])\n"
            "print(' '.join(sorted({name.split('.')[0] for name in set(sys.modules) - before})))")
    done = subprocess.run([sys.executable, "-c", code, *QUOTE_ARGS], capture_output=True, text=True, check=True)
    pass_modules = subprocess.run([sys.executable, "-c", "import sys; print(' '.join(sys.modules))"],
                                  capture_output=True, text=True, check=True).stdout.split()
    return [name for name in done.stdout.split()
            if name in sys.stdlib_module_names and name not in pass_modules]


_FROM_TREE = "import sys; sys.argv[0] = 'gpu-assist'; sys.path.insert(0, sys.argv.pop(1)); " \
             "from gpu_assist.cli import main; sys.exit(main())"


def _base_tree(revision: str) -> Path:
    """A checkout of `revision` beside the repository's git data (a detached worktree, made once, compiled)."""
    import compileall

    tree = REPO / ".bench-base" / revision
    if not tree.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), revision],
                       capture_output=True, check=True)
    compileall.compile_dir(str(tree / "gpu_assist"), quiet=1)
    return tree


def _before_after(revision: str) -> dict:
    """This tree's code and `revision`'s, each a fresh process importing its own `gpu_assist` the same way,
    their catalog caches apart; interleaved."""
    tree = _base_tree(revision)
    _cli()  # compiles this tree's bytecode, as the base tree's is
    env = {**os.environ, "GPU_ASSIST_CATALOG_DIR": str(REPO / "catalogs")}
    timed = _interleaved({
        "after": ([sys.executable, "-c", _FROM_TREE, str(REPO), *QUOTE_ARGS], env),
        "before": ([sys.executable, "-c", _FROM_TREE, str(tree), *QUOTE_ARGS],
                   {**env, "GPU_ASSIST_CACHE_DIR": str(tree / ".gpu-assist-cache")}),
    }, 15)
    return {"revision": revision, **timed}


def cold_cli(runs: int = 15) -> dict:
    """A new process per run, as a user starts it, interleaved with the baselines."""
    command = _cli()
    stdlib = stdlib_of_quote()
    base = os.environ.get("GPU_ASSIST_BENCH_BASE", "")
    timed = _interleaved({
        "quote": (command + QUOTE_ARGS, None),
        "python_pass": ([sys.executable, "-c", "pass"], None),
        "stdlib_floor": ([sys.executable, "-c", "import " + ", ".join(stdlib)], None),
        "import_numpy": ([sys.executable, "-c", "import numpy"], None),
        "import_pandas": ([sys.executable, "-c", "import pandas"], None),
        "no_cache": (command + QUOTE_ARGS, {**os.environ, "GPU_ASSIST_CACHE_DIR": "off"}),
    }, runs)
    return {**timed.pop("quote"), **timed, "stdlib_modules": stdlib,
            **({"before_after": _before_after(base)} if base else {})}


STORE_VERBS = ("requests", "spend", "commit")


def cold_store_verbs(runs: int = 10, base: str | None = None) -> dict:
    """`gpu-assist requests`, `spend` and `commit`, each a new process, on an empty SQLite store brought to the newest
    schema by one `db upgrade` first, interleaved with `python -c pass`; with `base` (a git revision) that revision's
    verbs too (`<verb>_before`), so "before" and "after" come from one run."""
    import tempfile

    command = _cli()
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "GPU_ASSIST_DB_URL": f"sqlite:///{scratch}/store.db"}
        subprocess.run(command + ["db", "upgrade"], capture_output=True, check=True, env=env)
        commands = {verb: (command + [verb], env) for verb in STORE_VERBS}
        commands["python_pass"] = ([sys.executable, "-c", "pass"], None)
        if base:
            tree = str(_base_tree(base))
            commands.update({f"{verb}_before": ([sys.executable, "-c", _FROM_TREE, tree, verb], env)
                             for verb in STORE_VERBS})
        return _interleaved(commands, runs)


def cold_instructions() -> dict:
    """Instructions a fresh process executes (valgrind's callgrind, string hashing seeded), for the cached cold
    quote, `python -c pass` and the standard-library floor: unlike wall time, not changed by a busy machine.
    Valgrind does not emulate the CPU's SHA extensions, so the cache key's SHA-256 counts about 44M instructions
    here for about 1 ms of real time."""
    if shutil.which("valgrind") is None:
        return {"skipped": "valgrind is not installed"}
    command = _cli()
    commands = {"quote": command + QUOTE_ARGS, "python_pass": [sys.executable, "-c", "pass"],
                "stdlib_floor": [sys.executable, "-c", "import " + ", ".join(stdlib_of_quote())]}
    subprocess.run(commands["quote"], capture_output=True, check=True)  # the compiled catalog cache, filled
    counts = {}
    for name, argv in commands.items():
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                              capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        found = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode != 0 or found is None:
            return {"skipped": f"valgrind did not run {name} ({done.stderr.strip()[-200:]})"}
        counts[name] = int(found.group(1))
    return counts


def replicated(catalog: Catalog, factor: int) -> Catalog:
    """The catalog with every offer repeated `factor` times in renamed regions: same shape, more rows."""
    region = OFFER_COLUMNS.index("region")
    rows = [row if not i else (*row[:region], f"{row[region]}-x{i}", *row[region + 1:])
            for i in range(factor) for row in catalog.rows]
    return Catalog(rows, catalog.gpus, catalog.fx, catalog.directory)


def _timed(work, runs: int) -> dict:
    work()  # builds the catalog's per-GPU view once, as the first quote of a process does
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return _stats(times)


def warm(catalog: Catalog, runs: int) -> dict:
    """`pricing.quote` alone, the 15 cheapest options of 8xA100 72h."""
    request = parse_request("8xA100 72h", catalog.gpus)
    today = dt.date.today()
    return _timed(lambda: quote(request, catalog, today=today, top=15), runs) | {"offers": len(catalog.rows)}


def warm_answer(catalog: Catalog, runs: int) -> dict:
    """The default answer to `quote 8xA100 72h`, as a face renders it: quote, refine, compare, text table."""
    command = QuoteCommand(request=parse_request("8xA100 72h", catalog.gpus), top=15)
    today = dt.date.today()
    return _timed(lambda: render_text.render(quote_view(command, catalog, today=today, currency="USD")), runs) | \
        {"offers": len(catalog.rows)}


def main() -> dict:
    os.environ.setdefault("GPU_ASSIST_CACHE_DIR", str(REPO / ".gpu-assist-cache"))
    catalog = load_catalog(cache_dir=None)
    started = time.perf_counter()
    load_catalog(cache_dir=None)
    load_uncached_ms = (time.perf_counter() - started) * 1000
    ten, hundred = replicated(catalog, 10), replicated(catalog, 100)
    return {
        "cold_cli": cold_cli(),
        "cold_instructions": cold_instructions(),
        "cold_store_verbs": cold_store_verbs(),
        "catalog_load_uncached_ms": load_uncached_ms,
        "warm_1x": warm(catalog, 200),
        "warm_10x": warm(ten, 100),
        "warm_100x": warm(hundred, 20),
        "answer_1x": warm_answer(catalog, 200),
        "answer_10x": warm_answer(ten, 100),
        "answer_100x": warm_answer(hundred, 20),
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--store-verbs"]:  # the store verbs alone; a revision after it times its `requests` too
        print(json.dumps(cold_store_verbs(base=(sys.argv[2:3] or [None])[0]), indent=2))
    else:
        print(json.dumps(main(), indent=2))
