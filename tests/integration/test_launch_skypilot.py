"""Launches on the clouds gpu-assist has no provisioner of its own for, through SkyPilot: the real `sky` SDK (0.14)
over HTTP against a local stand-in for the team's API server (`skypilot_api_fake.py`), behind the real router
(`commands.lifecycle.clouds`) and the real approval path, as a buyer and an approver would use them."""

from __future__ import annotations

import datetime as dt
import json
import socket

import pytest
from skypilot_api_fake import SERVICE_TOKEN, SKY_HOME, shared_server
from support import Clock, offer, submit_launch

from gpu_assist.catalog import load_catalog
from gpu_assist.cli import main
from gpu_assist.clouds.launch.skypilot import PROJECT_LABEL, REQUEST_LABEL
from gpu_assist.commands.grammar import parse_command
from gpu_assist.commands.lifecycle import clouds, configured_approvals
from gpu_assist.commands.objects import LaunchCommand
from gpu_assist.errors import ParseError, PolicyError
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.policy import Policy, load_policy
from gpu_assist.pricing.quote import quote
from gpu_assist.skypilot import contract
from gpu_assist.skypilot.gate import Gate, LetThrough, Waiting
from gpu_assist.store import Store
from slackbot.blocks import launch_button_choice, quote_blocks

APPROVER, OTHER_APPROVER = "slack:U-ALICE", "jupyter:bob"
H100_ROW = offer(provider="gcp", region="us-central1", instance_type="a3-highgpu-8g", gpu="H100", gpu_count="8",
                 gpu_memory_gib="80", vcpus="208", memory_gib="1872", on_demand_hourly="88.25",
                 source="skypilot-gcp", as_of="2026-12-02")


@pytest.fixture
def api_server(monkeypatch):
    """The team's API server, as the SDK finds it: its endpoint and the engine's service account token."""
    server = shared_server()
    monkeypatch.setenv("HOME", str(SKY_HOME))
    monkeypatch.setenv("SKYPILOT_API_SERVER_ENDPOINT", server.endpoint)
    monkeypatch.setenv("SKYPILOT_SERVICE_ACCOUNT_TOKEN", SERVICE_TOKEN)
    return server


@pytest.fixture
def team(api_server, tmp_path, make_catalog):
    """The lifecycle as a process builds it: the registry's provisioners, gcp allowed, two approvers."""
    policy = Policy(approvers=frozenset({APPROVER, OTHER_APPROVER}), allowed_providers=("aws", "gcp"),
                    cost_tags={"project": "vision"})
    return Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy, clouds(policy),
                     make_catalog(H100_ROW, {**H100_ROW, "region": "us-east4", "on_demand_hourly": "88.25"}),
                     Clock())


@pytest.mark.clock  # `gpu-assist launch` dates its request by the wall clock
def test_a_gcp_launch_asked_on_the_cli_is_approved_once_launched_once_and_stopped(api_server, tmp_path, make_catalog,
                                                                                  monkeypatch, capsys):
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path / 'state.db'}")
    monkeypatch.setenv("GPU_ASSIST_APPROVERS", f"{APPROVER},{OTHER_APPROVER}")
    monkeypatch.setenv("GPU_ASSIST_ALLOWED_PROVIDERS", "aws,gcp")
    # priced today, by the wall clock the CLI dates by: a list price past its age limit would not be launched
    today = {**H100_ROW, "as_of": dt.datetime.now(dt.timezone.utc).date().isoformat()}
    monkeypatch.setenv("GPU_ASSIST_CATALOG_DIR", str(make_catalog(today, load=False)))
    assert main(["launch", "8xH100", "24h", "provider=gcp", "--as", "carol", "--format", "json"]) == 0
    asked = json.loads(capsys.readouterr().out)
    assert asked["state"] == "pending" and asked["spec"]["provider"] == "gcp"
    assert asked["spec"]["checks"]["dry_run"] == "ok" and api_server.launches() == []  # validated, nothing launched

    approvals = configured_approvals(Store(), load_policy(),
                                     load_catalog(make_catalog(today, load=False), cache_dir=None))
    done = approvals.approve(asked["id"], APPROVER)
    cluster = f"gpu-assist-{asked['id']}"
    assert done.state == "running" and done.instance_ids == (cluster,)
    [launch] = api_server.launches()
    assert launch["cluster_name"] == cluster and launch["retry_until_up"] is False
    resources = launch["task"]["resources"]
    assert resources["infra"] == "gcp/us-central1" and resources["instance_type"] == "a3-highgpu-8g"
    assert resources["use_spot"] is False
    assert resources["autostop"] == {"idle_minutes": 24 * 60, "down": True, "wait_for": "none"}
    assert resources["labels"] == {REQUEST_LABEL: asked["id"]}

    with pytest.raises(PolicyError):  # a second approval decides nothing
        approvals.approve(asked["id"], OTHER_APPROVER)
    assert approvals.orchestration.reconcile() == [] and len(api_server.launches()) == 1

    stop = approvals.submit_stop("slack:U-CAROL", [cluster])
    assert approvals.approve(stop.id, OTHER_APPROVER).state == "stopped"
    assert [b["cluster_name"] for p, b in api_server.calls if p == "/down"] == [cluster]
    assert cluster not in api_server.clusters and approvals.store.fetch(asked["id"]).state == "stopped"


def test_a_retry_or_a_takeover_finds_the_cluster_by_name_and_never_launches_again(team, api_server):
    record = team.approve(submit_launch(team, "slack:U-CAROL", "8xH100 24h provider=gcp region=us-central1").id,
                          APPROVER)
    again = team.provisioner.launch(record.spec, ends_at="2026-12-08T12:00:00Z", still_ours=lambda: True)
    assert again.reused and again.instance_ids == list(record.instance_ids) and len(api_server.launches()) == 1
    assert api_server.launches()[0]["task"]["resources"]["labels"][PROJECT_LABEL] == "vision"


def test_a_region_without_capacity_moves_on_to_the_next_one_under_the_ceiling(team, api_server):
    api_server.sold_out.add("us-central1")
    record = team.approve(submit_launch(team, "slack:U-CAROL", "8xH100 24h provider=gcp").id, APPROVER)
    assert record.state == "running" and record.spec.launched_region == "us-east4"
    running = [e for e in team.store.audit_trail(record.id) if e.action == "running"][0]
    assert "tried: us-central1: ResourcesUnavailableError" in running.detail
    assert [launch["task"]["resources"]["infra"] for launch in api_server.launches()] == ["gcp/us-central1",
                                                                                         "gcp/us-east4"]


def test_the_reaper_and_an_extension_act_on_the_cluster(team, api_server):
    team.provisioner.of("gcp").cloud.now = team.clock  # the autodown moves by the minutes left from now
    record = team.approve(submit_launch(team, "slack:U-CAROL", "8xH100 24h provider=gcp region=us-central1").id,
                          APPROVER)
    extension = team.submit_extend("slack:U-CAROL", record.id, 12 * 3600)
    assert team.approve(extension.id, OTHER_APPROVER).state == "extended"
    [(_, moved)] = [(p, b) for p, b in api_server.calls if p == "/autostop"]
    assert moved["cluster_name"] == record.instance_ids[0] and moved["idle_minutes"] == 36 * 60
    assert moved["down"] is True and moved["wait_for"] == "none"
    team.clock.advance(hours=37)
    assert team.orchestration.reap() == [record.id]
    assert record.instance_ids[0] not in api_server.clusters


def test_a_cluster_its_autodown_already_ended_is_reaped_without_a_fault(team, api_server):
    record = team.approve(submit_launch(team, "slack:U-CAROL", "8xH100 24h provider=gcp region=us-central1").id,
                          APPROVER)
    del api_server.clusters[record.instance_ids[0]]  # SkyPilot's autodown came first
    team.clock.advance(hours=25)
    assert team.orchestration.reap() == [record.id] and team.store.fetch(record.id).state == "stopped"


def test_a_cluster_the_gate_let_through_is_brought_down_at_its_time_to_live(team, api_server):
    """`sky autostop --cancel` takes a cluster's autodown off, and SkyPilot asks no policy about it: the reaper
    brings a cluster SkyPilot's gate admitted down itself, at the approved end, when it carries the request's label;
    a cluster of the same user that is not the request's is left alone."""
    gate = Gate(team, ttl_s=8 * 3600)
    asked = gate.decide(_gate_request("launch", "carol-x"))
    assert isinstance(asked, Waiting)
    assert team.approve(asked.record.id, APPROVER).state == "admitted"
    assert isinstance(gate.decide(_gate_request("launch", "carol-x")), LetThrough)
    api_server.add_cluster("carol-x", "us-central1", {REQUEST_LABEL: asked.record.id})  # autodown cancelled
    api_server.add_cluster("carol-y", "us-central1", {REQUEST_LABEL: "r-000000000000"})
    team.clock.advance(hours=8, minutes=1)
    assert team.orchestration.reap() == [asked.record.id]
    assert "carol-x" not in api_server.clusters and "carol-y" in api_server.clusters
    (ended,) = [e for e in team.store.audit_trail(asked.record.id) if e.to_state == "stopped"]
    assert ended.detail == "its time to live ended: the cluster carol-x was brought down"


def _gate_request(name: str, cluster: str) -> contract.UserRequest:
    """SkyPilot's request for `sky launch -c CLUSTER` of 8×H100 on GCP, as its `UserRequest.encode()` writes it."""
    task = "resources:\n  infra: gcp/us-central1\n  accelerators:\n    H100: 8\nrun: python train.py\n"
    options = {"cluster_name": cluster, "idle_minutes_to_autostop": None, "down": False, "dryrun": False}
    body = json.dumps(json.dumps({"task": task, "skypilot_config": "{}\n", "request_name": name,
                                  "request_options": options, "at_client_side": False,
                                  "user": "id: c1\nname: carol\n"})).encode()
    return contract.read_request(body)


def test_without_an_endpoint_nothing_is_launched_and_the_request_says_why(team, api_server, monkeypatch):
    monkeypatch.delenv("SKYPILOT_API_SERVER_ENDPOINT")
    record = submit_launch(team, "slack:U-CAROL", "8xH100 24h provider=gcp region=us-central1")
    assert record.spec.checks.dry_run.startswith("not checked: SKYPILOT_API_SERVER_ENDPOINT is not set")
    failed = team.approve(record.id, APPROVER)
    assert failed.state == "failed" and "SKYPILOT_API_SERVER_ENDPOINT is not set" in failed.error
    assert api_server.calls == []


def test_no_local_api_server_is_started_behind_the_users_back(team, api_server, monkeypatch):
    """The SDK starts a local server when its endpoint is the local default and nothing answers there: the
    engine forbids it, so the launch fails with SkyPilot's reason and nothing listens."""
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", 46580)) != 0
    monkeypatch.setenv("SKYPILOT_API_SERVER_ENDPOINT", "http://127.0.0.1:46580")
    record = submit_launch(team, "slack:U-CAROL", "8xH100 24h provider=gcp region=us-central1")
    assert "starting a local API server on this machine is disabled" in record.spec.checks.dry_run
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", 46580)) != 0


def test_a_wrong_token_is_refused_with_a_hint_and_never_shown(team, api_server, monkeypatch):
    monkeypatch.setenv("SKYPILOT_SERVICE_ACCOUNT_TOKEN", "sky_not-the-teams-token")
    failed = team.approve(submit_launch(team, "slack:U-CAROL", "8xH100 24h provider=gcp region=us-central1").id,
                          APPROVER)
    assert failed.state == "failed" and "check SKYPILOT_SERVICE_ACCOUNT_TOKEN" in failed.error
    assert "ApiServerAuthenticationError" in failed.error or "401 Client Error" in failed.error  # the SDK's health
    # answer is kept 5 s: a fresh one says it needs a login, a kept one lets the call be refused with 401
    assert "sky_not-the-teams-token" not in failed.error and api_server.launches() == []


def test_a_stop_refuses_a_cluster_gpu_assist_did_not_launch(team, api_server):
    api_server.add_cluster("gpu-assist-r-0123456789ab", "us-central1", {"team": "vision"})  # our name, not our label
    with pytest.raises(ParseError):
        team.submit_stop("slack:U-CAROL", ["gpu-assist-r-0123456789ab"])  # no launch record holds it
    assert "gpu-assist-r-0123456789ab" in api_server.clusters


def test_the_quote_cards_request_launch_button_on_a_gcp_row_asks_for_that_launch(team, api_server):
    asked = parse_command("quote 8xH100 24h provider=gcp", team.catalog.gpus)
    card = quote_blocks(quote(asked.request, team.catalog, today=dt.date(2026, 12, 2)))
    [buttons] = [block["elements"] for block in card if block["type"] == "actions"]
    option, duration_s = launch_button_choice(buttons[0]["value"])
    assert (option.provider, option.instance_type, duration_s) == ("gcp", "a3-highgpu-8g", 24 * 3600)
    record = team.submit_launch("slack:U-CAROL", LaunchCommand(option, duration_s))
    assert record.state == "pending" and record.spec.provider == "gcp" and record.spec.checks.dry_run == "ok"


def test_a_launch_the_api_server_refuses_to_validate_says_why_before_anyone_decides(team, api_server):
    api_server.refuse_validation = "the team's admin policy allows at most 4 GPUs"
    record = submit_launch(team, "slack:U-CAROL", "8xH100 24h provider=gcp region=us-central1")
    assert record.state == "pending" and record.spec.checks.dry_run == (
        "refused: SkyPilot refused checking the launch: ValueError: the team's admin policy allows at most 4 GPUs")
    assert api_server.launches() == []
