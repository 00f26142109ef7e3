"""The compiled catalog cache: trusted only for the same files and the same loader, rebuilt when damaged."""

from __future__ import annotations

import gc
import hashlib
import os
import shutil

import pytest
from support import offer

from gpu_assist import catalog as catalog_module
from gpu_assist.catalog import cache as catalog_cache
from gpu_assist.catalog import load_catalog
from gpu_assist.sources.refresh import fields_to_csv


@pytest.fixture
def reads(monkeypatch):
    """Counts the real (uncached) loads."""
    count = [0]
    real = catalog_module.read_catalog

    def counting(directory):
        count[0] += 1
        return real(directory)

    monkeypatch.setattr(catalog_module, "read_catalog", counting)
    return count


def _cache_file(cache):
    (path,) = cache.glob("catalog-*.bin")
    return path


def test_a_second_load_comes_from_the_cache_with_the_same_offers(make_catalog, tmp_path, reads):
    directory = make_catalog(offer(on_demand_hourly="32"), offer(region="us-west-2"), load=False)
    first = load_catalog(directory, cache_dir=tmp_path / "cache")
    second = load_catalog(directory, cache_dir=tmp_path / "cache")
    assert reads[0] == 1
    assert second.offers.equals(first.offers) and second.fx == first.fx
    assert second.gpus.specs == first.gpus.specs
    assert second.directory == directory
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [_cache_file(tmp_path / "cache").name]


def test_content_not_timestamps_decides(make_catalog, tmp_path, reads):
    directory = make_catalog(offer(), load=False)
    load_catalog(directory, cache_dir=tmp_path)
    os.utime(directory / "aws.csv", (1, 1))  # touched, same bytes: still valid
    load_catalog(directory, cache_dir=tmp_path)
    assert reads[0] == 1
    (directory / "aws.csv").write_text(fields_to_csv([offer(on_demand_hourly="31")]))
    assert load_catalog(directory, cache_dir=tmp_path).offers.on_demand_hourly.tolist() == [31.0]
    (directory / "gcp.csv").write_text(fields_to_csv([offer(provider="gcp", instance_type="a2-highgpu-8g")]))
    assert len(load_catalog(directory, cache_dir=tmp_path).offers) == 2  # a new provider file
    assert reads[0] == 3


def test_a_change_to_the_loading_rules_invalidates_the_cache(make_catalog, tmp_path, reads, monkeypatch):
    directory = make_catalog(offer(), load=False)
    load_catalog(directory, cache_dir=tmp_path / "cache")
    code = tmp_path / "code"
    code.mkdir()
    for name in catalog_cache.LOADER_MODULES:
        (code / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(catalog_cache._PACKAGE / name, code / name)
    monkeypatch.setattr(catalog_cache, "_PACKAGE", code)
    load_catalog(directory, cache_dir=tmp_path / "cache")
    assert reads[0] == 1  # the same code: a hit
    with (code / "catalog" / "files.py").open("a") as source:
        source.write("\n# a new row rule\n")
    load_catalog(directory, cache_dir=tmp_path / "cache")
    assert reads[0] == 2


@pytest.mark.parametrize("damage", ["empty", "garbage", "truncated", "flipped byte", "valid checksum, bad pickle",
                                    "other key"])
def test_a_damaged_cache_file_is_rebuilt_never_an_error(make_catalog, tmp_path, reads, damage):
    directory = make_catalog(offer(on_demand_hourly="32"), load=False)
    cache = tmp_path / "cache"
    load_catalog(directory, cache_dir=cache)
    path = _cache_file(cache)
    data = path.read_bytes()
    header_end = data.index(b"\n", len(catalog_cache.FORMAT)) + 1
    if damage == "empty":
        data = b""
    elif damage == "garbage":
        data = b"not a catalog at all"
    elif damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "flipped byte":
        data = data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:]
    elif damage == "valid checksum, bad pickle":
        payload = b"\x80\x05junk"
        data = data[:header_end] + hashlib.sha256(payload).digest() + payload
    else:
        data = catalog_cache.FORMAT + b"0" * 64 + b"\n" + data[header_end:]
    path.write_bytes(data)
    assert load_catalog(directory, cache_dir=cache).offers.on_demand_hourly.tolist() == [32.0]
    assert reads[0] == 2
    assert gc.isenabled()  # the garbage collector, paused while unpickling, runs again even after a bad pickle
    load_catalog(directory, cache_dir=cache)
    assert reads[0] == 2  # rewritten whole: the next start is a hit again


def test_a_defective_catalog_is_never_cached(make_catalog, tmp_path):
    directory = make_catalog(offer(gpu="nope"), load=False)
    for _ in range(2):
        with pytest.raises(Exception, match="unknown GPU 'nope'"):
            load_catalog(directory, cache_dir=tmp_path)
    assert list(tmp_path.glob("catalog-*")) == []


def test_an_unwritable_cache_dir_only_means_no_cache(make_catalog, tmp_path, reads):
    directory = make_catalog(offer(), load=False)
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    assert len(load_catalog(directory, cache_dir=blocked / "cache").offers) == 1
    assert len(load_catalog(directory, cache_dir=blocked / "cache").offers) == 1
    assert reads[0] == 2


def test_off_disables_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_ASSIST_CACHE_DIR", "off")
    assert catalog_cache.default_cache_dir() is None
    monkeypatch.setenv("GPU_ASSIST_CACHE_DIR", str(tmp_path))
    assert catalog_cache.default_cache_dir() == tmp_path
