"""gpu-assist as a user installs it: the wheel built from this checkout, installed into a fresh virtual environment,
answers a quote and upgrades a store as the checkout does (the catalogs and the migrations are found relative to
the installed modules, which a move of the modules can break while the editable checkout still passes); and what
the revision before the modules moved into folders left behind, a store and a catalog directory it refreshed,
keeps working."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from support import REPO

pytestmark = pytest.mark.slow


def _run(command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
         timeout: int = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, f"{command}: {done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `bin/` of a fresh virtual environment holding the wheel built from this checkout. Its dependencies are
    the test environment's, reached through a path file, so nothing is downloaded; the checkout itself is not on
    its path."""
    if not (REPO / "gpu_assist" / "labextension" / "package.json").exists():
        pytest.skip("the JupyterLab extension is not built (the editable install builds it)")
    base = tmp_path_factory.mktemp("installed")
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
          str(base / "dist"), str(REPO)], timeout=600)
    wheel = next((base / "dist").glob("gpu_assist-*.whl"))
    _run([sys.executable, "-m", "venv", "--without-pip", str(base / "env")])
    python = base / "env" / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index",
          str(wheel)])
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return python.parent


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """No checkout on the path, no catalog directory named, a store of the test's own."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "GPU_ASSIST_CATALOG_DIR", "GPU_ASSIST_DB_URL")}
    return {**env, "GPU_ASSIST_CACHE_DIR": "off", "GPU_ASSIST_DB_URL": f"sqlite:///{tmp_path / 'state.db'}"}


def test_the_installed_wheel_quotes_from_its_own_catalogs(installed: Path, tmp_path: Path):
    env = _clean_env(tmp_path)
    where = subprocess.run([str(installed / "python"), "-c", "import gpu_assist.catalog as c; "
                            "print(c.__file__); print(c.default_catalog_dir())"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    module, catalogs = where.stdout.split()
    assert module.startswith(str(installed.parent)) and catalogs.startswith(str(installed.parent)), where.stdout
    quoted = subprocess.run([str(installed / "gpu-assist"), "quote", "8xA100", "72h", "--format", "json"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    checkout = subprocess.run([sys.executable, "-m", "gpu_assist", "quote", "8xA100", "72h", "--format", "json"],
                              capture_output=True, text=True, env={**env, "PYTHONPATH": str(REPO)}, cwd=REPO,
                              timeout=120)
    assert quoted.returncode == 0 and quoted.stderr == "", quoted.stderr
    assert json.loads(quoted.stdout) == json.loads(checkout.stdout) and json.loads(quoted.stdout)


def test_the_installed_wheel_upgrades_a_store(installed: Path, tmp_path: Path):
    env = _clean_env(tmp_path)
    _run([str(installed / "gpu-assist"), "db", "upgrade"], env=env, cwd=tmp_path)
    current = _run([str(installed / "gpu-assist"), "db", "current"], env=env, cwd=tmp_path).stdout
    checkout = _run([sys.executable, "-m", "gpu_assist", "db", "current"], env={**env, "PYTHONPATH": str(REPO)},
                    cwd=REPO).stdout
    assert current == checkout and _at_newest(current)


def _at_newest(current: str) -> bool:
    """`db current`'s line ("…: schema at 0006, newest 0006") says the store is at the newest revision."""
    at, newest = current.split("schema at ")[1].strip().split(", newest ")
    return at == newest


def _before_the_folders() -> str:
    """The revision before the modules moved into folders by role: the parent of the commit that added
    `lifecycle/ports.py`."""
    found = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", "gpu_assist/lifecycle/ports.py"],
                           capture_output=True, text=True, cwd=REPO)
    commits = found.stdout.split()
    if found.returncode != 0 or not commits:
        pytest.skip("no git history here to find the revision before the move")
    return f"{commits[-1]}^"


def test_a_store_and_a_catalog_made_before_the_move_keep_working(tmp_path: Path):
    revision = _before_the_folders()
    old = tmp_path / "old"
    old.mkdir()
    archive = subprocess.run(["git", "archive", "--format=tar", revision, "gpu_assist", "catalogs"],
                             capture_output=True, cwd=REPO)
    if archive.returncode != 0:
        pytest.skip(f"git cannot read {revision} here (a shallow clone)")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
    env = _clean_env(tmp_path)
    before = {**env, "PYTHONPATH": str(old)}
    catalogs = tmp_path / "catalogs"
    shutil.copytree(REPO / "catalogs", catalogs, ignore=shutil.ignore_patterns("sources"))
    _run([sys.executable, "-m", "gpu_assist", "db", "upgrade"], env=before, cwd=old)
    _run([sys.executable, "-m", "gpu_assist", "catalog", "import-china", str(old / "catalogs" / "sources"),
          "--catalog-dir", str(catalogs)], env=before, cwd=old)
    after = {**env, "PYTHONPATH": str(REPO), "GPU_ASSIST_CATALOG_DIR": str(catalogs)}
    _run([sys.executable, "-m", "gpu_assist", "requests"], env=after, cwd=REPO)  # a store verb brings it up to date
    assert _at_newest(_run([sys.executable, "-m", "gpu_assist", "db", "current"], env=after, cwd=REPO).stdout)
    quoted = _run([sys.executable, "-m", "gpu_assist", "quote", "1xT4", "72h", "provider=tencent", "--format",
                   "json"], env=after, cwd=REPO).stdout
    assert {row["provider"] for row in json.loads(quoted)} == {"tencent"}
