"""What users and deployments name keeps its name wherever the modules behind it live: the notebook API, the spot
watch a training script imports, the Jupyter server extension and labextension paths, the AWS Lambda handler, the
console script, the `python -m` entry points the Makefile runs, and Alembic's script location (its revision ids
live in teams' databases)."""

from __future__ import annotations

import importlib
import importlib.util
import re
import tomllib

from support import REPO


def test_the_notebook_api_and_the_spot_watch_import_from_the_package():
    import gpu_assist
    from gpu_assist import spot

    assert callable(spot.watch) and {"quote", "recommend", "spend", "commit", "utilization"} <= set(dir(gpu_assist))


def test_the_jupyter_extension_points_name_modules_that_exist():
    import gpu_assist.jupyter as jupyter

    (server,) = jupyter._jupyter_server_extension_points()
    assert importlib.import_module(server["module"]) is jupyter
    assert (REPO / "jupyter-config" / "server-config" / "gpu_assist.json").exists()
    assert [path["src"] for path in jupyter._jupyter_labextension_paths()] == ["labextension"]


def test_the_lambda_handler_and_the_console_script_resolve():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    for target in (*scripts.values(), "slackbot.aws_lambda:handler"):
        module, _, name = target.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), target


def test_the_makefiles_python_m_entry_points_are_modules():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    for module in set(re.findall(r"python -m (gpu_assist[\w.]*)", makefile)):
        assert importlib.util.find_spec(module) is not None, module


def test_alembics_revisions_stay_where_deployed_stores_find_them():
    from gpu_assist.store import schema

    versions = REPO / "gpu_assist" / "migrations" / "versions"
    assert schema.SCRIPT_LOCATION == "gpu_assist:migrations"
    assert sorted(p.name[:4] for p in versions.glob("0*.py"))[-1] == schema.head()
