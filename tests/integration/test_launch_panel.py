"""The notebook launch panel in a kernel with no Jupyter server link (SQLite store, moto over HTTP): it submits
as `unauthenticated:<login>`, offers no Approve button, and no name a kernel picks approves anything."""

from __future__ import annotations

import pytest
from support import TODAY

from gpu_assist.clouds.launch.aws import AwsProvisioner
from gpu_assist.commands import Context
from gpu_assist.errors import PolicyError
from gpu_assist.jupyter import LaunchPanel
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.identity import chosen_name
from gpu_assist.lifecycle.policy import Policy
from gpu_assist.store import Store

POLICY = Policy(approvers=frozenset({"jupyter:bob", "slack:U-BOB"}), ami_id="ami-12c6146b")


@pytest.fixture
def context(aws, tmp_path, catalog, monkeypatch):
    monkeypatch.delenv("GPU_ASSIST_JUPYTER_URL", raising=False)
    store = Store(f"sqlite:///{tmp_path / 'state.db'}")
    return Context(catalog_loader=lambda: catalog, today=lambda: TODAY,
                   approvals_factory=lambda ctx: Approvals(store, POLICY, AwsProvisioner(POLICY), ctx.catalog))


@pytest.mark.clock
def test_a_kernel_without_a_server_submits_unauthenticated_and_cannot_decide(context, monkeypatch):
    monkeypatch.setenv("GPU_ASSIST_USER", "bob")  # carol's kernel claims to be bob, an approver
    panel = LaunchPanel(context)
    panel.text.value = "8xA100 2h region=us-east-1"
    record = panel.request()
    assert panel.error.value == "" and "[pending]" in panel.message.value and "dry run: ok" in panel.message.value
    assert record.requester == "unauthenticated:bob"
    (row,) = panel.pending.children
    assert [type(w).__name__ for w in row.children] == ["Label"]  # no Approve/Reject buttons
    assert panel.decide(record.id, True) is None and "no server link" in panel.error.value
    # The names a kernel could pass on: none is an approver's identity.
    for name in ("bob", chosen_name(), "jupyter", "U-BOB"):
        with pytest.raises(PolicyError):
            context.approvals.approve(record.id, name)
    assert context.approvals.store.get(record.id).state == "pending"


def test_bad_launch_text_shows_in_the_error_line(context):
    panel = LaunchPanel(context)
    panel.text.value = "8xA1000 2h"
    panel.button.click()
    assert "unknown GPU &#x27;A1000&#x27;" in panel.error.value
