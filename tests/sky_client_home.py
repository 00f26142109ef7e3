"""SkyPilot's client side, set up once per test process before `sky` is imported: its runtime directory (where it
keeps catalogs and client state, read when `sky` is imported, so one per process) holds the vendored extracts of
SkyPilot's catalogs (catalogs/sources/*_gpu.csv, SkyPilot's vms.csv format), fresh, so it fetches none; usage
collection is off. tests/conftest.py imports it first, so whichever test imports `sky` first in a process (the
registry's, the gate's or the engine's) finds it set."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

SKY_HOME = Path(tempfile.mkdtemp(prefix="skypilot-client-"))
atexit.register(shutil.rmtree, SKY_HOME, ignore_errors=True)
os.environ["SKY_RUNTIME_DIR"] = str(SKY_HOME)
os.environ["SKYPILOT_DISABLE_USAGE_COLLECTION"] = "1"
for _cloud in ("aws", "gcp", "lambda"):
    (SKY_HOME / ".sky/catalogs/v8" / _cloud).mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(__file__).resolve().parents[1] / "catalogs/sources" / f"{_cloud}_gpu.csv",
                SKY_HOME / ".sky/catalogs/v8" / _cloud / "vms.csv")
