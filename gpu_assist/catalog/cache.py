"""A compiled catalog kept between runs, so a cold start does not grow with the CSV parse and checks.

The cache wraps `catalog.read_catalog` and knows nothing of the catalog's columns or rules: it stores the
whole `Catalog` that the loader returned, which pickles as plain tuples of str, float, int and bool, so a
cached load imports neither pandas nor numpy (see `Catalog`). A cache file is trusted only when its key
matches, and the key covers both sides of what the loader does:

- the bytes of every file the loader reads (gpus.csv, fx.csv, each offers file, by name), and
- the loader's own code (the source of the modules that parse and check rows) and this file format,

so adding a provider, editing a price or changing a loading rule each give a new key and a rebuild.
The file holds a magic line, the key and a SHA-256 of its payload: a truncated, corrupt or foreign file
is rebuilt, never an error. Writes go to a temporary file renamed into place, so a reader never sees half
a file, and a read-only cache directory only means no cache. The payload is a pickle, read back only
from the user's own cache directory (the trust of their home directory).
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, Self, TypeVar


class Cached(Protocol):
    """What the cache needs of what it keeps (a `catalog.Catalog`): where it was read from, and the same contents
    said to come from elsewhere. The cache imports no catalog code: the loader passes its class in."""

    directory: Path

    def moved_to(self, directory: Path) -> Self: ...


C = TypeVar("C", bound=Cached)

FORMAT = b"gpu-assist-catalog/5\n"  # a new number whenever a pickled class changes its fields or its module
# Modules whose code decides what a loaded catalog holds: a change to any of them invalidates every cache.
LOADER_MODULES = ("catalog/__init__.py", "catalog/cache.py", "catalog/files.py", "catalog/offers.py", "facts.py",
                  "catalog/fx.py", "catalog/gpus.py", "catalog/providers.py", "catalog/regions.py", "pricing/query.py")
_PACKAGE = Path(__file__).resolve().parents[1]  # gpu_assist/, which LOADER_MODULES are relative to


def default_cache_dir() -> Path | None:
    """`GPU_ASSIST_CACHE_DIR` (`off` disables the cache), else the user cache dir (XDG)."""
    configured = os.environ.get("GPU_ASSIST_CACHE_DIR")
    if configured:
        return None if configured == "off" else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gpu-assist"


def cache_key(inputs: list[Path]) -> str:
    """SHA-256 over the format, the loader's code and every input file's name and bytes."""
    digest = hashlib.sha256(FORMAT)
    for path in [_PACKAGE / name for name in LOADER_MODULES] + inputs:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _read(path: Path, key: str, kind: type[C]) -> C | None:
    """The cached catalog, or None when the file is missing, for another key or damaged in any way."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header = FORMAT + key.encode() + b"\n"
    body = data[len(header):]
    if not data.startswith(header) or len(body) < 32 or hashlib.sha256(body[32:]).digest() != body[:32]:
        return None
    try:
        cached = _unpickled(body[32:])
    except Exception:  # noqa: BLE001 - e.g. pickled by another version of a class: rebuild
        return None
    return cached if isinstance(cached, kind) else None


def _unpickled(payload: bytes) -> object:
    """`pickle.loads` with the cyclic garbage collector paused: the payload is tens of thousands of tuples and
    strings, which hold no cycles, yet creating them triggers collections that walk them again and again (half
    the time of the load)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(payload)
    finally:
        if paused:
            gc.enable()


def _write(path: Path, key: str, catalog: Cached) -> None:
    """Best effort and atomic: a new file of this process's own in the same directory (private, as `mkstemp`
    makes one), renamed over the old one."""
    payload = pickle.dumps(catalog, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.parent / f".catalog-{os.getpid()}-{os.urandom(4).hex()}.tmp"
        handle = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(FORMAT + key.encode() + b"\n" + hashlib.sha256(payload).digest() + payload)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError:
        return


def load(directory: Path, cache_dir: Path | None, read_catalog: Callable[[Path], C], inputs: list[Path],
         kind: type[C]) -> C:
    """`read_catalog(directory)` through the cache in `cache_dir`, keyed on `inputs` and the loader's code; a cached
    object not of `kind` (another version's) is read again."""
    if cache_dir is None:
        return read_catalog(directory)
    try:
        key = cache_key(inputs)
    except OSError:  # a missing or unreadable file: the loader reports it with its own words
        return read_catalog(directory)
    # One file per catalog directory (named by its path), so switching catalogs does not pile up files.
    where = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
    path = Path(cache_dir) / f"catalog-{where}.bin"
    cached = _read(path, key, kind)
    if cached is not None:
        return cached.moved_to(directory) if cached.directory != directory else cached
    catalog = read_catalog(directory)
    _write(path, key, catalog)
    return catalog
