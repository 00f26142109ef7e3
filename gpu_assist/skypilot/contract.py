"""SkyPilot 0.14's admin-policy contract, read and written as SkyPilot's `RestfulAdminPolicy` speaks it, without
importing SkyPilot: the Slack server and a quote must not carry its dependencies.

What SkyPilot posts (`sky.admin_policy.UserRequest.encode()`, sent as `requests.post(url, json=encoded)`, so the
body is a JSON *string* whose text is a JSON object): `task` (the task as YAML), `skypilot_config` (YAML),
`request_name` (`AdminPolicyRequestName`'s value), `request_options` (`cluster_name`, `idle_minutes_to_autostop`,
`down`, `dryrun`; absent for jobs and services), `at_client_side`, `user` (YAML of `id` and `name`, empty at the
client side), `client_api_version`, `client_version`. What it reads back (`MutatedUserRequest.decode`): a JSON
string whose text is an object of `task` and `skypilot_config`, each YAML; or HTTP 400, whose text it shows the
user as the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from ..errors import ParseError

# `sky.server.requests.request_names.AdminPolicyRequestName` in 0.14: every name a policy may be asked about.
VALIDATE, OPTIMIZE, CLUSTER_LAUNCH, CLUSTER_EXEC = "validate", "optimize", "launch", "exec"
JOBS_LAUNCH, JOBS_LAUNCH_CONTROLLER, JOBS_POOL_APPLY = "jobs.launch", "jobs.launch_controller", "jobs.pool_apply"
JOBS_LAUNCH_CLUSTER = "jobs.launch_cluster"
SERVE_UP, SERVE_LAUNCH_CONTROLLER, SERVE_UPDATE = "serve.up", "serve.launch_controller", "serve.update"
SERVE_LAUNCH_REPLICA = "serve.launch_replica"
REQUEST_NAMES = (VALIDATE, OPTIMIZE, CLUSTER_LAUNCH, CLUSTER_EXEC, JOBS_LAUNCH, JOBS_LAUNCH_CONTROLLER,
                 JOBS_POOL_APPLY, JOBS_LAUNCH_CLUSTER, SERVE_UP, SERVE_LAUNCH_CONTROLLER, SERVE_UPDATE,
                 SERVE_LAUNCH_REPLICA)
MAX_BODY_BYTES = 1 << 20  # a task with its setup and run scripts is a few KiB
_EXAMPLE = ("the body sky.admin_policy.UserRequest.encode() makes, as SkyPilot's RestfulAdminPolicy posts it "
            "(admin_policy: http://HOST:PORT/skypilot/policy in the API server's config)")


class ContractError(ParseError):
    """A body that is not SkyPilot's admin-policy request: answered 400 with this one line."""


@dataclass(frozen=True)
class Options:
    """`RequestOptions`: what the user asked of a cluster launch or exec."""

    cluster_name: str | None
    idle_minutes_to_autostop: int | None
    down: bool
    dryrun: bool


@dataclass(frozen=True)
class SkyUser:
    id: str
    name: str


@dataclass(frozen=True)
class UserRequest:
    """One request SkyPilot asks its admin policy about, as data: the task and config as parsed YAML (and the
    config's text, given back unchanged)."""

    task: dict[str, Any]
    config_text: str
    request_name: str
    options: Options | None
    at_client_side: bool
    user: SkyUser | None


def read_request(body: bytes) -> UserRequest:
    """The request a body holds; ContractError saying what was wrong (never echoing the body)."""
    if len(body) > MAX_BODY_BYTES:
        raise ContractError(f"body over {MAX_BODY_BYTES} bytes", example=_EXAMPLE)
    try:
        data = json.loads(body.decode("utf-8"))
        if isinstance(data, str):  # RestfulAdminPolicy posts the encoded JSON as a JSON string
            data = json.loads(data)
    except (UnicodeDecodeError, ValueError):
        raise ContractError("the body is not JSON", example=_EXAMPLE) from None
    if not isinstance(data, dict):
        raise ContractError("the body is not a JSON object", example=_EXAMPLE)
    task = _yaml(_text(data, "task"), "task")
    if not isinstance(task, dict):
        raise ContractError("task is not a YAML mapping", example=_EXAMPLE)
    config_text = _text(data, "skypilot_config")
    if not isinstance(_yaml(config_text, "skypilot_config"), (dict, type(None))):
        raise ContractError("skypilot_config is not a YAML mapping", example=_EXAMPLE)
    name = _text(data, "request_name")
    if name not in REQUEST_NAMES:
        raise ContractError("request_name is not one of SkyPilot 0.14's", hint=", ".join(REQUEST_NAMES),
                            example=_EXAMPLE)
    at_client_side = data.get("at_client_side", False)
    if not isinstance(at_client_side, bool):
        raise ContractError("at_client_side is not true or false", example=_EXAMPLE)
    return UserRequest(task, config_text, name, _options(data.get("request_options")), at_client_side,
                       _user(data.get("user", "")))


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ContractError(f"{key} is missing or not a string", example=_EXAMPLE)
    return value


def _yaml(text: str, key: str) -> Any:
    try:
        return next(iter(yaml.safe_load_all(text)), None)
    except yaml.YAMLError:
        raise ContractError(f"{key} is not YAML", example=_EXAMPLE) from None


def _options(value: object) -> Options | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ContractError("request_options is not an object", example=_EXAMPLE)
    cluster, idle = value.get("cluster_name"), value.get("idle_minutes_to_autostop")
    down, dryrun = value.get("down", False), value.get("dryrun", False)
    if not (isinstance(cluster, (str, type(None))) and (idle is None or type(idle) is int)
            and isinstance(down, bool) and isinstance(dryrun, bool)):
        raise ContractError("request_options has a field of the wrong type", example=_EXAMPLE)
    return Options(cluster or None, idle, down, dryrun)


def _user(value: object) -> SkyUser | None:
    if value == "" or value is None:
        return None
    found = _yaml(value, "user") if isinstance(value, str) else None
    if not isinstance(found, dict) or not isinstance(found.get("name"), str) or not found["name"].strip():
        raise ContractError("user is not YAML naming the user", example=_EXAMPLE)
    return SkyUser(str(found.get("id", "")), found["name"].strip())


def mutated(task: dict[str, Any], config_text: str) -> bytes:
    """The answer `MutatedUserRequest.decode` reads: a JSON string holding the object of the task's YAML and the
    config's."""
    inner = json.dumps({"task": yaml.safe_dump(task, sort_keys=False), "skypilot_config": config_text})
    return json.dumps(inner).encode()
