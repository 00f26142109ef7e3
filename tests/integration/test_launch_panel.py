"""The notebook launch panel over the real request lifecycle (SQLite store, moto over HTTP)."""

from __future__ import annotations

import pytest

from gpu_assist.approvals import Approvals
from gpu_assist.commands import Context
from gpu_assist.jupyter import LaunchPanel
from gpu_assist.policy import Policy
from gpu_assist.provision.aws import AwsProvisioner
from gpu_assist.store import Store
from support import TODAY

POLICY = Policy(approvers=frozenset({"bob"}), ami_id="ami-12c6146b")


@pytest.fixture
def context(aws, tmp_path, catalog):
    store = Store(f"sqlite:///{tmp_path / 'state.db'}")
    return Context(catalog_loader=lambda: catalog, today=lambda: TODAY,
                   approvals_factory=lambda ctx: Approvals(store, POLICY, AwsProvisioner(POLICY), ctx.catalog))


def test_request_in_the_panel_then_an_approver_decides_in_the_panel(context):
    carol = LaunchPanel(context, user="carol")
    carol.text.value = "8xA100 2h region=us-east-1"
    carol.button.click()
    assert carol.error.value == "" and "[pending]" in carol.message.value and "dry run: ok" in carol.message.value
    (row,) = carol.pending.children
    row.children[1].click()  # carol's own Approve button: refused by the same policy as Slack
    assert "requesters cannot approve" in carol.error.value

    bob = LaunchPanel(context, user="bob")
    (row,) = bob.pending.children
    row.children[1].click()
    assert bob.error.value == "" and "[running]" in bob.message.value and bob.pending.children == ()


def test_bad_launch_text_shows_in_the_error_line(context):
    panel = LaunchPanel(context, user="carol")
    panel.text.value = "8xA1000 2h"
    panel.button.click()
    assert "unknown GPU &#x27;A1000&#x27;" in panel.error.value
