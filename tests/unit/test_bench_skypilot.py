"""bench/skypilot_compare.py from a bare clone: its own venv and home under the ignored .bench/, never ~/.sky,
and one clear line when SkyPilot cannot be installed."""

from __future__ import annotations

import importlib.util
import subprocess

import pytest

from support import REPO


def _module():
    spec = importlib.util.spec_from_file_location("skypilot_compare", REPO / "bench" / "skypilot_compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_everything_skypilot_touches_is_in_the_ignored_bench_folder():
    compare = _module()
    assert compare.VENV.parent == compare.SKY_HOME.parent == REPO / ".bench"
    environment = compare._sky_environment()
    assert environment["HOME"] == environment["SKY_RUNTIME_DIR"] == str(REPO / ".bench" / "skypilot-home")
    ignored = subprocess.run(["git", "check-ignore", "-q", ".bench/skypilot-venv/bin/sky"], cwd=REPO)
    assert ignored.returncode == 0
    assert compare.EXTRACT == REPO / "catalogs" / "sources"
    assert all((compare.EXTRACT / name).is_file() for name in compare.EXTRACT_FILES.values())


@pytest.mark.slow  # runs pip in a subprocess
def test_an_install_that_fails_is_skipped_with_one_line(tmp_path, monkeypatch):
    compare = _module()
    monkeypatch.setattr(compare, "VENV", tmp_path / "skypilot-venv")
    monkeypatch.setattr(compare, "SKY_HOME", tmp_path / "skypilot-home")
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # as on a machine that cannot reach the package registry
    monkeypatch.delenv("GPU_ASSIST_BENCH_SKYPILOT", raising=False)
    result = compare.measure(runs=1)
    assert list(result) == ["skipped"]
    assert result["skipped"].startswith("skypilot could not be installed from the package registry (")
    assert "\n" not in result["skipped"] and len(result["skipped"]) < 300
    assert not (tmp_path / "skypilot-venv").exists()  # no half-installed venv is left to be taken for a good one
