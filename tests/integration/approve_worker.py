"""A separate process that races approvals (or crashes mid-launch) against a shared store, for the tests.

    python approve_worker.py race  DB_URL REQUEST_ID APPROVER N   → prints {"ok": k, "refused": m}
    python approve_worker.py crash DB_URL REQUEST_ID APPROVER     → killed by SIGKILL right after run_instances
    python approve_worker.py crash-approved …                     → killed right after the approval is recorded
    python approve_worker.py crash-stop …                         → killed right after stop/terminate reached EC2
"""

from __future__ import annotations

import json
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor

from gpu_assist.catalog import load_catalog
from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.errors import PolicyError
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.store import Store

POLICY = Policy(approvers=frozenset({"slack:U-ALICE", "slack:U-BOB"}), ami_id="ami-12c6146b")


def _die():
    os.kill(os.getpid(), signal.SIGKILL)


class CrashAfterLaunch(AwsProvisioner):
    def launch(self, spec, *, ends_at, still_ours):
        super().launch(spec, ends_at=ends_at, still_ours=still_ours)
        _die()  # the instance exists; the store never hears of it


class CrashAfterStop(AwsProvisioner):
    def stop(self, launched):
        super().stop(launched)
        _die()


def main(mode: str, url: str, request_id: str, approver: str, count: str = "1") -> None:
    provisioner = {"crash": CrashAfterLaunch, "crash-stop": CrashAfterStop}.get(mode, AwsProvisioner)(POLICY)
    approvals = Approvals(Store(url), POLICY, provisioner, load_catalog())
    if mode == "crash-approved":
        approvals.approve(request_id, approver, on_approved=lambda record: _die())
        return
    if mode.startswith("crash"):
        approvals.approve(request_id, approver)
        return

    def attempt(_):
        try:
            approvals.approve(request_id, approver)
            return "ok"
        except PolicyError:
            return "refused"

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(attempt, range(int(count))))
    print(json.dumps({"ok": outcomes.count("ok"), "refused": outcomes.count("refused")}))


if __name__ == "__main__":
    main(*sys.argv[1:])
