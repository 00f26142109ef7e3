"""The walls between the core and its faces and adapters (#30, step 2), read from the source: every import, at the
top of a module, inside a function or under `TYPE_CHECKING`, resolved to the module it names.

The core (catalog, pricing, planning and recommendation, the request lifecycle, and everything else that is
neither a face nor an adapter) imports no face (`render`, `commands`, `cli`, `jupyter`, `slackbot`, the notebook
API in `gpu_assist/notebook.py`) and no adapter (boto3 and the clouds' SDKs, NVML, HTTP, Prometheus, and the
modules that wrap them); faces and adapters import the core.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FACES = ("gpu_assist.render", "gpu_assist.commands", "gpu_assist.cli", "gpu_assist.jupyter", "gpu_assist.__main__",
         "gpu_assist.notebook", "slackbot")
ADAPTERS = ("gpu_assist.aws", "gpu_assist.provision.aws", "gpu_assist.provision.tencent",
            "gpu_assist.provision.alibaba", "gpu_assist.importers", "gpu_assist.nvml", "gpu_assist.cost_explorer",
            "gpu_assist.fleet", "gpu_assist.metrics", "gpu_assist.spot",
            "boto3", "botocore", "pynvml", "requests", "urllib3", "tencentcloud", "alibabacloud",
            "alibabacloud_ecs20140526", "huaweicloudsdkcore", "huaweicloudsdkecs", "huaweicloudsdkbss",
            "prometheus_client", "slack_bolt", "slack_sdk", "ipywidgets", "jupyter_server", "waitress", "gunicorn")


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted([*ROOT.glob("gpu_assist/**/*.py"), *ROOT.glob("slackbot/**/*.py")]):
        if {"labextension", "migrations"} & set(path.parts):
            continue
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        found[name] = path
    return found


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _layer(name: str) -> str:
    if name == "gpu_assist" or _within(name, FACES):  # the package hands out the notebook API
        return "face"
    return "adapter" if _within(name, ADAPTERS) else "core"


def _imported(name: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> list[str]:
    """The modules an import statement names (`from . import x` names the submodule x where there is one)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]


def test_the_core_imports_no_face_and_no_adapter():
    modules = _modules()
    breaches = []
    for name, path in modules.items():
        if _layer(name) != "core":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                breaches += [f"{name} imports {target} (line {node.lineno})"
                             for target in _imported(name, path, node, modules) if _layer(target) != "core"]
    assert len(modules) > 100 and breaches == []


def test_the_layers_are_named_for_modules_that_exist():
    """A renamed face or adapter module must not leave its wall silently open."""
    modules = _modules()
    ours = [prefix for prefix in (*FACES, *ADAPTERS) if prefix.startswith(("gpu_assist", "slackbot"))]
    assert [prefix for prefix in ours if not any(_within(name, (prefix,)) for name in modules)] == []
