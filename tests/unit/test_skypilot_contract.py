"""SkyPilot's admin-policy contract read and written without SkyPilot: bodies in the shape `UserRequest.encode()`
gives (SkyPilot 0.14.1, sky/admin_policy.py), posted as `RestfulAdminPolicy` posts them (a JSON string holding the
JSON object), and what the gate answers. The same contract against SkyPilot's own classes:
tests/integration/test_skypilot_gate.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from gpu_assist.skypilot import contract
from gpu_assist.skypilot.gate import suggested_cluster
from gpu_assist.skypilot.pricing import task_shape

TASK = "name: train\n\nresources:\n  infra: aws/us-east-1\n  accelerators:\n    A100: 8\n\nnum_nodes: 2\n\nrun: x\n"


def _body(**changes: object) -> bytes:
    fields = {"task": TASK, "skypilot_config": "{}\n", "request_name": "launch",
              "request_options": {"cluster_name": "train", "idle_minutes_to_autostop": None, "down": False,
                                  "dryrun": False},
              "at_client_side": False, "user": "id: a1b2\n\nname: carol\n", "client_api_version": None,
              "client_version": None, **changes}
    return json.dumps(json.dumps(fields)).encode()


def test_a_request_as_skypilot_posts_it_is_read_once_into_types():
    request = contract.read_request(_body())
    assert request.request_name == "launch" and request.user == contract.SkyUser("a1b2", "carol")
    assert request.options == contract.Options("train", None, False, False)
    assert request.task["resources"]["accelerators"] == {"A100": 8} and request.config_text == "{}\n"
    shape = task_shape(request.task)
    assert shape.nodes == 2 and [(c.provider, c.region, c.accelerator, c.per_node) for c in shape.choices] == [
        ("aws", "us-east-1", "A100", 8)]


def test_the_client_side_call_has_no_user_and_no_options():
    request = contract.read_request(_body(user="", at_client_side=True, request_options=None, request_name="validate"))
    assert request.user is None and request.options is None and request.at_client_side


@pytest.mark.parametrize(("body", "line"), [
    (b"\xff", "the body is not JSON"),
    (b"[1]", "the body is not a JSON object"),
    (_body(task=3), "task is missing or not a string"),
    (_body(task="resources: ["), "task is not YAML"),
    (_body(task="- a list"), "task is not a YAML mapping"),
    (_body(request_name="sky down"), "request_name is not one of SkyPilot 0.14's"),
    (_body(request_options={"cluster_name": 3}), "request_options has a field of the wrong type"),
    (_body(user="just words"), "user is not YAML naming the user"),
    (_body(at_client_side="yes"), "at_client_side is not true or false"),
])
def test_a_body_that_is_not_skypilots_request_is_one_line_without_the_input(body, line):
    with pytest.raises(contract.ContractError) as refused:
        contract.read_request(body)
    assert refused.value.message == line


def test_the_answer_is_what_mutateduserrequest_decode_reads():
    answer = json.loads(json.loads(contract.mutated({"resources": {"autostop": {"wait_for": "none"}}}, "{}\n")))
    assert set(answer) == {"task", "skypilot_config"} and answer["skypilot_config"] == "{}\n"
    assert yaml.safe_load(answer["task"]) == {"resources": {"autostop": {"wait_for": "none"}}}  # `none`, a word


def test_the_same_resources_have_one_fingerprint_and_a_name_skypilot_takes():
    one = task_shape({"resources": {"infra": "aws", "accelerators": "A100:8"}})
    labelled = task_shape({"resources": {"accelerators": "A100:8", "infra": "aws", "labels": {"a": "b"}}})
    assert one.fingerprint == labelled.fingerprint != task_shape({"resources": {"accelerators": "A100:4"}}).fingerprint
    assert suggested_cluster("Carol.Smith@example.com", "2f7449") == "carol-smith-example-com-2f7449"
    assert suggested_cluster("42", "2f7449") == "sky-42-2f7449"


def test_the_gate_and_a_quote_do_not_import_skypilot():
    code = ("import sys, gpu_assist.skypilot.server, gpu_assist.skypilot.gate; "
            "print(any(name == 'sky' or name.startswith('sky.') for name in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
