"""A laptop without cloud keys: `gpu-assist catalog refresh aws|aliyun|tencent|huawei` says in one line what to set
and exits 2, having tried no network at all (no instance metadata service, no name look-up); on an instance of that
cloud, or where the user names a role, the chain still asks the cloud's metadata service for the instance role's
keys, and nothing else. Each refresh runs in a process of its own behind the tests' loopback guard
(tests/offline.py)."""

from __future__ import annotations

import http.server
import json
import shutil

import pytest

from offline import INSTANCES, LAPTOP, dmi_folder, run_offline
from support import CATALOGS, free_port, running

# cloud → (what its one line names, where its metadata service is: what the guard records of a try)
CLOUDS = {
    "aws": ("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", ("connect", "169.254.169.254", 80)),
    "aliyun": ("ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET", ("connect", "100.100.100.200", 80)),
    "tencent": ("TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY", ("resolve", "metadata.tencentyun.com", 80)),
    "huawei": ("HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK", ("connect", "169.254.169.254", 80)),
}
# On a laptop, what names a role (or the machine) for each cloud's chain.
ROLES = {"aws": {"AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://169.254.169.254"},
         "aliyun": {"ALIBABA_CLOUD_ECS_METADATA": "gpu-assist-prices"},
         "tencent": {"TENCENTCLOUD_CAM_ROLE_NAME": "gpu-assist-prices"},
         "huawei": {"GPU_ASSIST_CLOUD_HOST": "huawei"}}


def _refresh(cloud, tmp_path, dmi, environ=None):
    directory = tmp_path / "catalogs"
    directory.mkdir()
    shutil.copy(CATALOGS / "gpus.csv", directory / "gpus.csv")
    return run_offline(["catalog", "refresh", cloud, "--catalog-dir", str(directory)], tmp_path, dmi=dmi,
                       environ=environ)


def _one_line(run, cloud):
    lines = run.stderr.splitlines()
    assert (run.returncode, run.stdout) == (2, ""), run.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: ") and CLOUDS[cloud][0] in lines[0], run.stderr[-2000:]


@pytest.mark.clock
@pytest.mark.parametrize("cloud", CLOUDS)
def test_on_a_laptop_without_keys_the_refresh_says_what_to_set_in_one_line_and_tries_no_network(cloud, tmp_path):
    run = _refresh(cloud, tmp_path, LAPTOP)
    print(f"keyless `catalog refresh {cloud}` on a laptop: {run.wall_s:.2f} s")  # a figure, not a bound
    _one_line(run, cloud)
    assert run.attempts == []


@pytest.mark.clock
@pytest.mark.parametrize("cloud", CLOUDS)
def test_on_an_instance_of_that_cloud_the_instance_role_is_asked_for_and_nothing_else(cloud, tmp_path):
    run = _refresh(cloud, tmp_path, INSTANCES[cloud])
    _one_line(run, cloud)  # the guard refused the metadata service: still one line
    assert {(a["kind"], a["host"], a["port"]) for a in run.attempts} == {CLOUDS[cloud][1]}


@pytest.mark.clock
@pytest.mark.parametrize("cloud", CLOUDS)
def test_on_a_laptop_a_role_the_user_names_is_asked_for(cloud, tmp_path):
    run = _refresh(cloud, tmp_path, LAPTOP, ROLES[cloud])
    _one_line(run, cloud)
    assert {(a["kind"], a["host"], a["port"]) for a in run.attempts} == {CLOUDS[cloud][1]}


class _Imds(http.server.ThreadingHTTPServer):
    """EC2's instance metadata service as botocore asks it for an instance role's keys (IMDSv2: a token first)."""

    def __init__(self):
        super().__init__(("127.0.0.1", free_port()), _ImdsHandler)
        self.paths: list[str] = []


class _ImdsHandler(http.server.BaseHTTPRequestHandler):
    server: _Imds
    ROLE = "gpu-assist-prices"
    KEYS = {"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": "ASIAIMDSFAKE0000KEY", "SecretAccessKey": "imds-fake",
            "Token": "imds-fake-token", "Expiration": "2099-01-01T00:00:00Z", "LastUpdated": "2026-12-02T12:00:00Z"}

    def log_message(self, *args):
        pass

    def _send(self, body: bytes):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        self.server.paths.append(f"PUT {self.path}")
        self._send(b"imds-session-token")

    def do_GET(self):
        self.server.paths.append(f"GET {self.path}")
        base = "/latest/meta-data/iam/security-credentials/"
        self._send(self.ROLE.encode() if self.path == base else json.dumps(self.KEYS).encode())


def test_on_an_ec2_instance_the_chain_gets_the_instance_roles_keys(tmp_path, monkeypatch):
    from gpu_assist.clouds.sdk import aws
    from gpu_assist.host import cloud_host

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_EC2_METADATA_DISABLED", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setattr(cloud_host, "DMI_DIR", dmi_folder(tmp_path / "dmi", INSTANCES["aws"]))
    with running(_Imds()) as imds:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f"http://127.0.0.1:{imds.server_port}")
        keys = aws.session("us-east-1").get_credentials()
        assert (keys.method, keys.access_key) == ("iam-role", "ASIAIMDSFAKE0000KEY")
        assert imds.paths[:3] == ["PUT /latest/api/token", "GET /latest/meta-data/iam/security-credentials/",
                                  "GET /latest/meta-data/iam/security-credentials/gpu-assist-prices"]
