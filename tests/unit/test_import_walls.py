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
            "gpu_assist.fleet", "gpu_assist.metrics", "gpu_assist.spot", "gpu_assist.cloud_host",
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


def _graph() -> dict[str, set[str]]:
    """Module → the modules of ours it imports, at the top, in functions and under `TYPE_CHECKING`."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[name] |= {target for target in _imported(name, path, node, modules)
                                if target in modules and target != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan): each is a set of modules that import
    one another in a loop. A package importing its own submodules (`render/__init__` → `render.money`) is no
    loop unless the submodule imports the package back."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other_in_a_loop():
    """0 import circles, lazy and type-checking imports counted: a loop closed through a function-level import is
    still one (#30)."""
    assert _circles(_graph()) == []



def _imports_in_functions() -> list[str]:
    found = []
    for name, path in _modules().items():
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [f"{name}:{node.lineno}" for node in ast.walk(function)
                          if isinstance(node, (ast.Import, ast.ImportFrom))]
    return sorted(set(found))


def test_imports_inside_functions_stay_at_the_heavy_library_boundary():
    """Imports go at the top of a module; at most 30 stay inside functions, where a face chooses a verb or a format
    and where a heavy library (pandas, boto3, the SDKs, SQLAlchemy, ipywidgets, IPython) must stay off a light path
    (#30). A new one is a design question, not a speed trick."""
    inside = _imports_in_functions()
    assert len(inside) <= 30, inside
