"""A cold `gpu-assist quote` imports what it uses and nothing else: the pricing core, the catalog loader and the
text renderer are plain Python, and no other verb's core comes along, so it starts in about the time Python
itself does (#17). The modules are read from `sys.modules` of a fresh process at its exit."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support import CATALOGS

pytestmark = pytest.mark.clock  # the CLI processes quote on today's date

# Packages a quote must not import: each costs from tens to hundreds of milliseconds to import.
HEAVY = {"pandas", "numpy", "rich", "boto3", "botocore", "slack_bolt", "slack_sdk", "sqlalchemy", "jupyter_server",
         "ipywidgets", "IPython", "pynvml", "sky"}

# Every gpu_assist module a cold quote may import (text output; JSON swaps render.text for render.json). A new
# one fails the test below by name: import it with the verb that uses it (render/plans.py, render/operations.py), or
# add it here when a quote truly needs it, and say what it costs. `facts` (the notes, notices and flags as types,
# about 1 ms: `Fact` is not `@dataclass` to keep it so; a module per domain, re-exported by the package) and
# `render.notes` (their words, a module per domain as the facts) came with #30.
# `data_prices` (#33: the storage and transfer prices the catalog holds, a few rows; its class unpickles them).
# `job_data` and `amounts` (a quote's `disk=` and `max-price=` words), `periods` (the spend command's typed
# period): about 2 ms together, read with the quote's words since #30 moved every import to the top.
# `fabric` and `spot_risk`: a quote asked for spot ranks by its expected cost (the Spot Advisor's bands, read only
# then; the modules themselves are plain Python, well under a millisecond).
QUOTE_MODULES = {
    "gpu_assist", "gpu_assist.errors", "gpu_assist.cli", "gpu_assist.cli.parser", "gpu_assist.cli.verbs",
    "gpu_assist.cli.answers",
    "gpu_assist.commands", "gpu_assist.commands.context", "gpu_assist.commands.quote_grammar",
    "gpu_assist.commands.quoting", "gpu_assist.commands.objects", "gpu_assist.pricing", "gpu_assist.pricing.job_data",
    "gpu_assist.pricing.amounts", "gpu_assist.team", "gpu_assist.team.periods", "gpu_assist.pricing.job_costs",
    "gpu_assist.catalog", "gpu_assist.catalog.cache", "gpu_assist.catalog.files", "gpu_assist.catalog.offers",
    "gpu_assist.catalog.gpus", "gpu_assist.catalog.fx", "gpu_assist.catalog.providers", "gpu_assist.catalog.regions",
    "gpu_assist.pricing.query", "gpu_assist.pricing.query_parser",
    "gpu_assist.pricing.quote", "gpu_assist.pricing.price_table", "gpu_assist.pricing.compare", "gpu_assist.plural",
    "gpu_assist.facts", "gpu_assist.facts.fact", "gpu_assist.facts.catalog", "gpu_assist.facts.option",
    "gpu_assist.facts.notice", "gpu_assist.facts.empty_quote", "gpu_assist.facts.plan", "gpu_assist.facts.commitment",
    "gpu_assist.catalog.data_prices", "gpu_assist.catalog.fabric", "gpu_assist.catalog.ages",
    "gpu_assist.pricing.spot_risk",
    "gpu_assist.render", "gpu_assist.render.money", "gpu_assist.render.notes", "gpu_assist.render.note_words",
    "gpu_assist.render.catalog_notes", "gpu_assist.render.quote_notes", "gpu_assist.render.plan_notes",
    "gpu_assist.render.text", "gpu_assist.render.tables", "gpu_assist.render.comparison",
}
QUOTE_MODULES_JSON = QUOTE_MODULES - {"gpu_assist.render.text"} | {"gpu_assist.render.json"}

# The console script's own entry point, then the names of every module the process imported.
_DRIVER = """\
import sys
from gpu_assist.cli import main
status = main(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write("\\n".join(sorted(sys.modules)))
sys.exit(status)
"""


def _imported(args: list[str], tmp_path, cache: str) -> set[str]:
    """The modules a fresh `gpu-assist …` process imported."""
    listing = tmp_path / "modules.txt"
    env = {**os.environ, "GPU_ASSIST_CACHE_DIR": cache, "GPU_ASSIST_CATALOG_DIR": str(CATALOGS)}
    done = subprocess.run([sys.executable, "-c", _DRIVER, str(listing), *args], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(listing.read_text().split())


@pytest.mark.slow  # starts subprocesses
@pytest.mark.parametrize("args", [["quote", "8xA100", "8h", "aws", "on-demand"], ["quote", "8xA100", "72h"],
                                  ["quote", "8xA100", "72h", "--format", "json"],
                                  ["recommend", "train", "7B", "tokens=20B", "deadline=7d"],
                                  ["tco", "8xA100", "hardware=25000"]])
def test_a_cold_answer_imports_nothing_heavy(tmp_path, args):
    cache = str(tmp_path / "cache")
    for attempt in ("without a cache", "from the compiled cache"):
        heavy = {name.split(".")[0] for name in _imported(args, tmp_path, cache)} & HEAVY
        assert not heavy, f"{' '.join(args)} {attempt} imported {sorted(heavy)}"
    assert list((tmp_path / "cache").glob("catalog-*.bin"))


@pytest.mark.slow  # starts subprocesses
@pytest.mark.parametrize("args, allowed", [
    (["quote", "8xA100", "8h", "aws", "on-demand"], QUOTE_MODULES),
    (["quote", "8xA100", "72h", "--list"], QUOTE_MODULES),
    (["quote", "8xA100", "72h", "--format", "json"], QUOTE_MODULES_JSON),
])
def test_a_cold_quote_imports_only_the_modules_it_uses(tmp_path, args, allowed):
    """The import graph of a quote is pinned: recommendation, sizing, workload, tco, fleet, nvml, spending,
    records, budgets, specs, policy (and the other renderers) stay out unless a quote needs them."""
    cache = str(tmp_path / "cache")
    for attempt in ("without a cache", "from the compiled cache"):
        ours = {name for name in _imported(args, tmp_path, cache) if name.split(".")[0] == "gpu_assist"}
        assert not ours - allowed, f"{' '.join(args)} {attempt} now also imports {sorted(ours - allowed)}"


def test_the_lifecycle_with_every_provisioner_imports_no_skypilot():
    """SkyPilot (the optional extra `gpu-assist[skypilot]`) is imported by the engine's first call alone: a process
    that builds every cloud's provisioner, or Slack's cards, does not load it (seconds, and its dependencies)."""
    probe = ("import sys\nfrom gpu_assist.commands.lifecycle import clouds\nfrom gpu_assist.lifecycle.policy import "
             "Policy\nimport slackbot.blocks\nclouds(Policy(allowed_providers=('aws', 'gcp')))\n"
             "print(sorted(m for m in sys.modules if m == 'sky' or m.startswith('sky.')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          env={**os.environ, "GPU_ASSIST_CATALOG_DIR": str(CATALOGS)})
    assert done.stdout.strip() == "[]"


@pytest.mark.slow  # starts subprocesses
@pytest.mark.parametrize("verb", ["requests", "spend", "commit"])
def test_a_store_verb_on_sqlite_loads_no_postgresql_and_no_clouds_code(tmp_path, monkeypatch, verb):
    """What the team has asked and spent is read from a store at the newest schema alone: no Alembic, no PostgreSQL
    dialect on SQLite, no cloud's provisioner or SDK (each is imported on its cloud's first use). Their timing is
    bench/quote_speed.py's."""
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path / 'state.db'}")
    _imported(["db", "upgrade"], tmp_path, str(tmp_path / "cache"))
    imported = _imported([verb], tmp_path, str(tmp_path / "cache"))
    assert "sqlalchemy.dialects.sqlite" in imported
    assert not {name for name in imported if name.startswith(("sqlalchemy.dialects.postgresql", "psycopg", "alembic",
                                                               "gpu_assist.clouds.launch", "boto", "alibabacloud",
                                                               "tencentcloud", "huaweicloud"))}
