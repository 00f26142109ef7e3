"""`gpu-assist …` run as a user runs it, in a process of its own that cannot reach another machine: the loopback
guard every test child starts with (tests/child_startup/) refuses every connection beyond loopback and every name
lookup as an unreachable network would, logging each to this run's own file, and gpu_assist.host.cloud_host reads a DMI
folder the test writes (a laptop's, or a cloud instance's). No cloud keys, no profile files (HOME is empty),
nothing of the test's own environment but PATH, PYTHONPATH and a moved clock."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from support import REPO

CHILD_STARTUP = REPO / "tests" / "child_startup"
# The suite's wall clock (conftest.py: moved by `pytest --moved-clock`, its readings logged for the test's verdict).
MOVED_CLOCK = ("GPU_ASSIST_TEST_CLOCK_SHIFT_S", "GPU_ASSIST_TEST_CLOCK_LOG", "GPU_ASSIST_TEST_CLOCK_OWNER", "TZ")
# What the firmware says (the files of /sys/class/dmi/id), on a laptop and on an instance of each cloud: the signs
# gpu_assist/host/cloud_host.py's docstring cites, the other files filled as a virtual machine's firmware fills them.
LAPTOP = {"sys_vendor": "LENOVO", "product_name": "21HMCTO1WW", "board_vendor": "LENOVO", "bios_vendor": "LENOVO",
          "bios_version": "N3XET53W (1.28 )", "chassis_vendor": "LENOVO", "chassis_asset_tag": "No Asset Information"}
INSTANCES = {
    "aws": {"sys_vendor": "Amazon EC2", "product_name": "g5.xlarge", "board_vendor": "Amazon EC2",
            "bios_vendor": "Amazon EC2", "bios_version": "1.0", "chassis_vendor": "Amazon EC2",
            "chassis_asset_tag": "Amazon EC2"},
    "aliyun": {"sys_vendor": "Alibaba Cloud", "product_name": "Alibaba Cloud ECS", "bios_vendor": "SeaBIOS",
               "bios_version": "449e491", "chassis_vendor": "Alibaba Cloud", "chassis_asset_tag": ""},
    "tencent": {"sys_vendor": "Tencent Cloud", "product_name": "CVM", "bios_vendor": "SeaBIOS",
                "bios_version": "seabios-1.9.1-qemu-project.org", "chassis_vendor": "Bochs", "chassis_asset_tag": ""},
    "huawei": {"sys_vendor": "OpenStack Foundation", "product_name": "OpenStack Nova", "bios_vendor": "SeaBIOS",
               "bios_version": "rel-1.10.2-0-g5f4c7b1-prebuilt.qemu-project.org", "chassis_vendor": "QEMU",
               "chassis_asset_tag": "HUAWEICLOUD"},
    "gcp": {"sys_vendor": "Google", "product_name": "Google Compute Engine", "board_vendor": "Google",
            "bios_vendor": "Google", "bios_version": "Google", "chassis_vendor": "Google", "chassis_asset_tag": ""},
}


def dmi_folder(path: Path, strings: dict[str, str]) -> Path:
    """A folder laid out as /sys/class/dmi/id, each file one string and a newline, as the kernel writes them."""
    path.mkdir(parents=True, exist_ok=True)
    for name, value in strings.items():
        (path / name).write_text(f"{value}\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    attempts: list[dict[str, object]]  # what the guard refused: {"kind": "connect" | "resolve", "host", "port"}
    wall_s: float


def run_offline(argv: list[str], tmp_path: Path, *, dmi: dict[str, str], environ: dict[str, str] | None = None,
                timeout: float = 120) -> Run:
    """`python -m gpu_assist *argv` on a machine whose firmware says `dmi`, with `environ` its only settings."""
    log, home = tmp_path / "network.jsonl", tmp_path / "home"
    home.mkdir(exist_ok=True)
    path = [str(CHILD_STARTUP), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)), str(REPO)]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "PYTHONPATH": os.pathsep.join(dict.fromkeys(path)), "GPU_ASSIST_TEST_REFUSED_LOG": str(log),
           "GPU_ASSIST_TEST_UNREACHABLE": "1",
           "GPU_ASSIST_TEST_DMI_DIR": str(dmi_folder(tmp_path / "dmi", dmi)),
           **{name: os.environ[name] for name in MOVED_CLOCK if name in os.environ}, **(environ or {})}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "gpu_assist", *argv], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=tmp_path)
    wall_s = time.monotonic() - started
    attempts = [_attempt(line) for line in log.read_text().splitlines()] if log.exists() else []
    return Run(done.returncode, done.stdout, done.stderr, attempts, wall_s)


def _attempt(line: str) -> dict[str, object]:
    """One line of the guard's log ("connect to 169.254.169.254:80\tpid\targv", "look up name:80\t…") as a dict."""
    what = line.split("\t", 1)[0]
    kind, _, where = what.partition(" to ") if what.startswith("connect") else ("resolve", "", what[len("look up "):])
    host, _, port = where.rpartition(":")
    return {"kind": kind, "host": host.strip("[]"), "port": int(port) if port.isdigit() else port}
