"""SkyPilot's gate as a team's API server meets it: SkyPilot 0.14's own classes (`sky.Task`, `sky.Resources`,
`UserRequest`, `RestfulAdminPolicy`) post to `POST /skypilot/policy` on the real Slack server (started as
docs/skypilot.md starts it, on loopback), whose cards go to the mock Slack Web API; an approver approves through
the real Slack click. SkyPilot's own encoder and decoder are on both ends, so a change of its contract fails here.

The mutated task is decoded by SkyPilot, which checks an instance type against its catalog: `sky_client_home`
seeds the vendored extracts of SkyPilot's catalogs (catalogs/sources/*_gpu.csv, SkyPilot's vms.csv format), so
no catalog is fetched.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from sky_client_home import SKY_HOME
from slack_client import action_body, signed_post, start_slack_server

pytestmark = [pytest.mark.slow, pytest.mark.clock]  # the server dates requests and admissions by the wall clock

ROOT = Path(__file__).resolve().parents[2]
POLICY_ENV = {"GPU_ASSIST_AUTO_APPROVE_BELOW": "100", "GPU_ASSIST_MAX_GPUS": "16",
              "GPU_ASSIST_SKYPILOT_TTL": "8h"}


@pytest.fixture(scope="module")
def sky_home():
    """SkyPilot's home with its catalogs in place (the client side decodes the mutated task with them:
    `sky_client_home`), and no AWS identity to look up: SkyPilot then keeps the catalog's zone ids rather than
    asking AWS for its names."""
    home = SKY_HOME
    changed = {"HOME": str(home), "AWS_EC2_METADATA_DISABLED": "true", "AWS_ACCESS_KEY_ID": None,
               "AWS_SECRET_ACCESS_KEY": None, "AWS_SESSION_TOKEN": None, "AWS_PROFILE": None}
    before = {name: os.environ.get(name) for name in changed}
    _set(changed)
    yield home
    _set(before)


def _set(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="module")
def sky(sky_home):
    return pytest.importorskip("sky", reason="SkyPilot is not installed (pip install 'gpu-assist[skypilot]')")


@pytest.fixture(scope="module")
def gate_server(moto_server, mock_slack, tmp_path_factory, sky):
    process, info = start_slack_server(moto_server, mock_slack, tmp_path_factory.mktemp("gate"),
                                       extra_env=POLICY_ENV)
    info["policy"] = info["base"] + "/skypilot/policy"
    yield info
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def gate(gate_server, mock_slack):
    mock_slack.clear()
    return gate_server


def _request(sky, resources, name: str, *, user: str, cluster: str | None = None, nodes: int = 1,
             dryrun: bool = False):
    from sky import admin_policy
    from sky.server.requests.request_names import AdminPolicyRequestName

    task = sky.Task(name="train", run="python train.py", num_nodes=nodes)
    task.set_resources(resources)
    request_name = AdminPolicyRequestName(name)
    options = admin_policy.RequestOptions(cluster_name=cluster, idle_minutes_to_autostop=None, down=False,
                                          dryrun=dryrun) if name == "launch" else None
    return admin_policy.UserRequest(task, sky.Config(), request_name, options, False,
                                    sky.models.User(id=f"id-{user}", name=user))


def _ask(sky, url: str, request):
    """SkyPilot's RestfulAdminPolicy on `request`: the mutated request, or the rejection it raises."""
    from sky import admin_policy, exceptions

    try:
        return admin_policy.RestfulAdminPolicy(url).validate_and_mutate(request)
    except exceptions.UserRequestRejectedByPolicy as rejected:
        return rejected


def _launch(sky, url, resources, *, user, cluster):
    """One `sky launch -c CLUSTER`: SkyPilot asks its policy to validate, optimize, then launch."""
    return [_ask(sky, url, _request(sky, resources, name, user=user, cluster=cluster if name == "launch" else None))
            for name in ("validate", "optimize", "launch")]


def _resources_of(mutated) -> dict:
    (resources,) = mutated.task.resources
    return resources.to_yaml_config()


def _cards(mock) -> list[dict]:
    return [call["params"] for call in mock.calls("chat.postMessage") if call["params"].get("blocks")]


def _card_text(card: dict) -> str:
    return "\n".join(block["text"]["text"] for block in card["blocks"] if block["type"] == "section")


def _request_id(rejection) -> str:
    return re.search(r"request (r-[0-9a-f]{12})", str(rejection))[1]


def test_a_launch_under_the_auto_approve_amount_is_let_through_with_autodown_and_labels(gate, sky, mock_slack):
    t4 = sky.Resources(infra="aws/us-east-1", accelerators="T4:1")
    calls = _launch(sky, gate["policy"], t4, user="erin", cluster="small")
    assert all(isinstance(call, sky.admin_policy.MutatedUserRequest) for call in calls)
    resources = _resources_of(calls[-1])
    assert resources["infra"] == "aws/us-east-1" and resources["instance_type"] == "g4dn.xlarge"
    assert resources["autostop"] == {"idle_minutes": 480, "down": True, "wait_for": "none"}
    assert resources["labels"]["gpu-assist-request-id"].startswith("r-")
    assert resources["labels"]["gpu-assist-project"] == "none"
    assert _cards(mock_slack) == []  # nobody had to approve it


def test_a_launch_the_policy_refuses_is_rejected_with_its_reason(gate, sky, mock_slack):
    a100 = sky.Resources(infra="aws", accelerators="A100:8")
    rejected = _ask(sky, gate["policy"], _request(sky, a100, "validate", user="erin", nodes=3))
    assert isinstance(rejected, sky.exceptions.UserRequestRejectedByPolicy)
    assert "24 GPUs (3× p4d.24xlarge) is over the limit of 16 per request" in str(rejected)
    assert _cards(mock_slack) == []


def test_pending_then_approved_then_let_through_once(gate, sky, mock_slack):
    a100 = sky.Resources(infra="aws/us-east-1", accelerators="A100:8")
    first = _launch(sky, gate["policy"], a100, user="carol", cluster="sky-5e1f-carol")
    assert all(isinstance(call, sky.exceptions.UserRequestRejectedByPolicy) for call in first)
    request_id = _request_id(first[0])
    assert {_request_id(call) for call in first} == {request_id}  # three calls, one request
    cards = _cards(mock_slack)
    assert len(cards) == 1 and request_id in json.dumps(cards[0]["blocks"])  # and one card
    cluster = str(first[0]).rsplit("-c ", 1)[1].strip()

    status, _ = signed_post(gate["url"], action_body("approve_request", request_id, user="U-BOB",
                                                     response_url=mock_slack.response_url()))
    assert status == 200
    carrying_out, outcome = mock_slack.wait_for("chat.update", 2)[:2]  # approved, then what came of it
    assert f"Admitted: SkyPilot may launch it as `sky launch -c {cluster}`" in outcome["params"]["text"]

    let_through = _launch(sky, gate["policy"], a100, user="carol", cluster=cluster)
    assert all(isinstance(call, sky.admin_policy.MutatedUserRequest) for call in let_through)
    resources = _resources_of(let_through[-1])
    assert resources["instance_type"] == "p4d.24xlarge" and resources["labels"]["gpu-assist-request-id"] == request_id
    assert resources["autostop"]["wait_for"] == "none"
    again = _ask(sky, gate["policy"], _request(sky, a100, "launch", user="carol", cluster=cluster))
    assert isinstance(again, sky.admin_policy.MutatedUserRequest)  # a retry of the same cluster passes

    second = _ask(sky, gate["policy"], _request(sky, a100, "launch", user="carol", cluster="another"))
    assert isinstance(second, sky.exceptions.UserRequestRejectedByPolicy)
    assert _request_id(second) != request_id and "waits for an approver" in str(second)


def test_validate_and_dry_runs_never_use_an_approval_and_another_name_is_refused(gate, sky, mock_slack):
    v100 = sky.Resources(infra="aws/us-east-1", accelerators="V100:8")
    request_id = _request_id(_ask(sky, gate["policy"], _request(sky, v100, "validate", user="frank")))
    signed_post(gate["url"], action_body("approve_request", request_id, user="U-ALICE",
                                         response_url=mock_slack.response_url()))
    mock_slack.wait_for("chat.update", 2)
    named = _ask(sky, gate["policy"], _request(sky, v100, "launch", user="frank", cluster="mine"))
    assert isinstance(named, sky.exceptions.UserRequestRejectedByPolicy)
    assert f"request {request_id} was approved for the cluster frank-" in str(named)
    cluster = str(named).rsplit("-c ", 1)[1].strip()
    dry = _ask(sky, gate["policy"], _request(sky, v100, "launch", user="frank", cluster=cluster, dryrun=True))
    assert isinstance(dry, sky.admin_policy.MutatedUserRequest)
    real = _ask(sky, gate["policy"], _request(sky, v100, "launch", user="frank", cluster=cluster))
    assert isinstance(real, sky.admin_policy.MutatedUserRequest)


def test_a_requester_cannot_approve_their_own_launch(gate, sky, mock_slack):
    """The SkyPilot user U-ALICE is, by name, the Slack approver U-ALICE: the click is refused."""
    h100 = sky.Resources(infra="aws/us-east-1", accelerators="H100:8")
    request_id = _request_id(_ask(sky, gate["policy"], _request(sky, h100, "validate", user="U-ALICE")))
    signed_post(gate["url"], action_body("approve_request", request_id, user="U-ALICE",
                                         response_url=mock_slack.response_url()))
    (refusal,) = mock_slack.wait_for("chat.postEphemeral")
    assert refusal["params"]["text"] == "Not done: requesters cannot approve or reject their own request"
    still = _ask(sky, gate["policy"], _request(sky, h100, "validate", user="U-ALICE"))
    assert isinstance(still, sky.exceptions.UserRequestRejectedByPolicy) and request_id in str(still)
    assert "waits for an approver" in str(still)


@pytest.mark.parametrize("body", [b"not json", b'"{}"', json.dumps(json.dumps({
    "task": "resources: [", "skypilot_config": "{}", "request_name": "launch", "user": ""})).encode(),
    json.dumps(json.dumps({"task": "{}", "skypilot_config": "{}", "request_name": "rm -rf", "user": ""})).encode()])
def test_a_forged_or_malformed_body_is_400_with_one_line(gate, body):
    request = urllib.request.Request(gate["policy"], data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(request, timeout=10)
    text = answered.value.read().decode()
    assert answered.value.code == 400 and "\n" not in text and "Traceback" not in text
    assert text.startswith("gpu-assist cannot read this admin-policy request: ")


@pytest.fixture
def policy_class(sky, tmp_path, monkeypatch):
    """`admin_policy: gpu_assist.skypilot.Policy`, loaded the way SkyPilot's server loads a policy class, over a
    store of its own."""
    from sky.utils import admin_policy_utils

    from gpu_assist.skypilot import policy_class as module

    for name, value in {**POLICY_ENV, "GPU_ASSIST_DB_URL": f"sqlite:///{tmp_path / 'state.db'}",
                        "GPU_ASSIST_APPROVERS": "U-BOB"}.items():
        monkeypatch.setenv(name, value)
    module._gate.cache_clear()
    yield admin_policy_utils._get_policy_impl("gpu_assist.skypilot.Policy")
    module._gate.cache_clear()


def test_the_policy_class_decides_as_the_url_does(policy_class, sky):
    t4 = sky.Resources(infra="aws/us-east-1", accelerators="T4:1")
    mutated = policy_class.apply(_request(sky, t4, "launch", user="erin", cluster="small"))
    assert _resources_of(mutated)["autostop"] == {"idle_minutes": 480, "down": True, "wait_for": "none"}
    a100 = sky.Resources(infra="aws/us-east-1", accelerators="A100:8")
    with pytest.raises(sky.exceptions.UserRequestRejectedByPolicy, match="waits for an approver"):
        policy_class.apply(_request(sky, a100, "validate", user="erin"))


def test_a_managed_jobs_cluster_and_its_recovery_pass_by_the_approved_request(gate, sky, mock_slack):
    a100 = sky.Resources(infra="aws/us-east-1", accelerators="A100:8")
    request_id = _request_id(_ask(sky, gate["policy"], _request(sky, a100, "jobs.launch", user="gina")))
    signed_post(gate["url"], action_body("approve_request", request_id, user="U-BOB",
                                         response_url=mock_slack.response_url()))
    mock_slack.wait_for("chat.update", 2)
    submitted = _ask(sky, gate["policy"], _request(sky, a100, "jobs.launch", user="gina"))
    assert _resources_of(submitted)["labels"]["gpu-assist-request-id"] == request_id

    from sky import admin_policy
    from sky.server.requests.request_names import AdminPolicyRequestName

    for _ in ("launch", "recovery"):  # the controller launches the job's cluster, then relaunches it under its name
        cluster = admin_policy.UserRequest(
            submitted.task, sky.Config(), AdminPolicyRequestName.JOBS_LAUNCH_CLUSTER, None, False,
            sky.models.User(id="id-gina", name="gina"))
        passed = _ask(sky, gate["policy"], cluster)
        assert isinstance(passed, sky.admin_policy.MutatedUserRequest)
        assert _resources_of(passed)["instance_type"] == "p4d.24xlarge"
    assert len(_cards(mock_slack)) == 1


@pytest.fixture(scope="module")
def lone_gate(tmp_path_factory, sky):
    """`gpu-assist skypilot serve --port N`, as docs/skypilot.md starts it, over a store of its own."""
    import subprocess
    import sys
    import time

    from support import free_port

    state, port = tmp_path_factory.mktemp("lone-gate"), free_port()
    env = {**os.environ, **POLICY_ENV, "GPU_ASSIST_DB_URL": f"sqlite:///{state / 'state.db'}",
           "GPU_ASSIST_APPROVERS": "U-BOB"}
    process = subprocess.Popen([sys.executable, "-m", "gpu_assist", "skypilot", "serve", "--port", str(port)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()  # it says where it listens once it does
    deadline = time.monotonic() + 30
    while "policy on" not in line and time.monotonic() < deadline and process.poll() is None:
        line = process.stdout.readline()
    assert line.strip() == f"SkyPilot's admin policy on http://127.0.0.1:{port}/skypilot/policy", line
    yield f"http://127.0.0.1:{port}/skypilot/policy"
    process.terminate()
    process.wait(timeout=10)


def test_the_gate_alone_says_where_a_request_waits(lone_gate, sky):
    a100 = sky.Resources(infra="aws/us-east-1", accelerators="A100:8")
    rejected = _ask(sky, lone_gate, _request(sky, a100, "validate", user="hana"))
    assert "waits for an approver in JupyterLab's Requests tab (and `gpu-assist requests`)" in str(rejected)
    request = urllib.request.Request(lone_gate, data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(request, timeout=10)
    assert answered.value.code == 400
    assert answered.value.read().decode() == ("gpu-assist cannot read this admin-policy request: task is missing or "
                                              "not a string")


def test_the_engines_own_launch_passes_without_a_second_request(gate, sky, mock_slack):
    """A launch gpu-assist approved and carries out through SkyPilot (its engine): the cluster is named from the
    request id and labelled with it, and the gate lets it through as it is, with autodown and labels."""
    import datetime as dt
    from decimal import Decimal

    from gpu_assist.facts import PricingModel
    from gpu_assist.lifecycle import states
    from gpu_assist.lifecycle.records import RequestRecord, new_request_id
    from gpu_assist.lifecycle.specs import Candidate, LaunchSpec
    from gpu_assist.store import Store

    store, now = Store(gate["env"]["GPU_ASSIST_DB_URL"]), dt.datetime.now(dt.timezone.utc)
    request_id = new_request_id()
    spec = LaunchSpec(request_id=request_id, requester="slack:U-CAROL", text="launch 8xA100 24h provider=aws",
                      gpu="A100", gpus=8, instance_type="p4d.24xlarge", instances=1, vcpus=96, region="us-east-1",
                      zone="", pricing_model=PricingModel.ON_DEMAND, duration_s=24 * 3600,
                      hourly=Decimal("21.96"), ceiling_hourly=Decimal("21.96"), estimated_total=Decimal("527.04"),
                      currency="USD", candidates=(Candidate("us-east-1", None, Decimal("21.96")),),
                      price_source="skypilot-aws 2026-12-02")
    store.insert_request(RequestRecord(id=request_id, kind="launch", requester="slack:U-CAROL", spec=spec,
                                       estimated_cost=spec.estimated_total, currency="USD", state="pending",
                                       created_at=now, expires_at=now + dt.timedelta(days=1)), actor="slack:U-CAROL")
    assert store.transition(request_id, states.APPROVE, actor="slack:U-BOB", now=now)
    engine = sky.Resources(infra="aws/us-east-1", instance_type="p4d.24xlarge",
                           labels={"gpu-assist-request-id": request_id})
    passed = _ask(sky, gate["policy"], _request(sky, engine, "launch", user="gpu-assist",
                                                cluster=f"gpu-assist-{request_id}"))
    assert isinstance(passed, sky.admin_policy.MutatedUserRequest)
    resources = _resources_of(passed)
    assert resources["autostop"] == {"idle_minutes": 24 * 60, "down": True, "wait_for": "none"}
    assert resources["labels"]["gpu-assist-request-id"] == request_id
    assert [r.requester for r in store.list(limit=10_000)].count("skypilot:gpu-assist") == 0
    assert _cards(mock_slack) == []
