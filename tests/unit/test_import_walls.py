"""The walls between the core, its adapters and its faces, read from the folders and the source: every import, at
the top of a module, inside a function or under `TYPE_CHECKING`, resolved to the module it names.

A module's layer is its folder under `gpu_assist/` (docs/ARCHITECTURE.md, "Folders"): the core imports only the
core (no face, no adapter, no cloud SDK); an adapter imports the core and its SDK, never a face; a face imports
anything. A new folder must be given a layer here, or the test that every module has one fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ("facts", "errors", "plural", "doc_blocks", "catalog", "pricing", "plan", "lifecycle", "store", "team")
ADAPTERS = ("clouds", "sources", "host")
FACES = ("commands", "render", "cli", "jupyter", "notebook", "metrics", "skypilot", "__main__")
# Libraries only an adapter or a face may import: the clouds' SDKs, NVML, HTTP, Prometheus, Slack, Jupyter, servers.
OUTSIDE = ("boto3", "botocore", "pynvml", "requests", "urllib3", "tencentcloud", "alibabacloud",
           "alibabacloud_ecs20140526", "alibabacloud_tea_openapi", "alibabacloud_credentials", "huaweicloudsdkcore",
           "huaweicloudsdkecs", "huaweicloudsdkbss", "prometheus_client", "slack_bolt", "slack_sdk", "ipywidgets",
           "jupyter_server", "waitress", "gunicorn", "sky")


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
    """`core`, `adapter` or `face` by the module's folder (or top-level module) under gpu_assist; `library` for
    what another package ships (an SDK listed in OUTSIDE is `adapter`); `unplaced` for a folder given no layer."""
    parts = name.split(".")
    if parts[0] == "slackbot" or name == "gpu_assist":  # the package hands out the notebook API
        return "face"
    if parts[0] != "gpu_assist":
        return "adapter" if _within(name, OUTSIDE) else "library"
    for layer, folders in (("core", CORE), ("adapter", ADAPTERS), ("face", FACES)):
        if parts[1] in folders:
            return layer
    return "unplaced"


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


def _breaches(of_layer: str, allowed: tuple[str, ...]) -> list[str]:
    modules = _modules()
    found = []
    for name, path in modules.items():
        if _layer(name) != of_layer:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found += [f"{name} imports {target} (line {node.lineno})"
                          for target in _imported(name, path, node, modules) if _layer(target) not in allowed]
    return found


def test_the_core_imports_no_face_and_no_adapter():
    assert len(_modules()) > 100 and _breaches("core", ("core", "library")) == []


def test_an_adapter_imports_no_face():
    assert _breaches("adapter", ("core", "adapter", "library")) == []


def test_every_module_has_a_layer_and_every_layer_a_folder():
    """A new folder must say which side of the walls it stands on; a renamed one must not leave a wall open."""
    modules = _modules()
    assert [name for name in modules if _layer(name) == "unplaced"] == []
    tops = {name.split(".")[1] for name in modules if name.startswith("gpu_assist.")}
    assert [folder for folder in (*CORE, *ADAPTERS, *FACES) if folder not in tops] == []


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
    still one."""
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
    """Imports go at the top of a module; at most 34 stay inside functions, where a face chooses a verb or a format
    and where a heavy or optional library (pandas, boto3, the clouds' SDKs, Google's billing client, SkyPilot,
    SQLAlchemy, ipywidgets, IPython) must stay off a light path. A new one is a design question, not a speed
    trick."""
    inside = _imports_in_functions()
    assert len(inside) <= 34, inside
