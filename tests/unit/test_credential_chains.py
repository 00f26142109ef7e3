"""Each cloud's credential chain, as gpu-assist builds it: the SDK's own links in the SDK's order, the one that asks
the instance metadata service only on an instance of that cloud or where the user names a role. Read from the chains
themselves, without resolving them (tests/integration/test_keyless_refresh.py runs them)."""

from __future__ import annotations

import pytest
from offline import INSTANCES, LAPTOP, dmi_folder

from gpu_assist.clouds.sdk import aws
from gpu_assist.host import cloud_host


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """`machine("aliyun")` makes this process an Alibaba ECS instance as cloud_host reads it; `machine(None)` a
    laptop. No variable names a role or a host, and no AWS profile is read."""
    for variable in (cloud_host.HOST_VARIABLE, *(v for vs in cloud_host.ROLE_VARIABLES.values() for v in vs),
                     "AWS_PROFILE", "AWS_EC2_METADATA_DISABLED"):
        monkeypatch.delenv(variable, raising=False)
    for variable in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):  # no profile of the machine's own
        monkeypatch.setenv(variable, str(tmp_path / "no-such-file"))

    def become(cloud):
        folder = tmp_path / (cloud or "laptop")
        monkeypatch.setattr(cloud_host, "DMI_DIR", dmi_folder(folder, INSTANCES[cloud] if cloud else LAPTOP))
    return become


def _aws_links():
    return [provider.METHOD for provider in aws.session("us-east-1")._session.get_component(
        "credential_provider").providers]


def test_aws_drops_only_the_instance_role_link_off_ec2(machine, monkeypatch):
    monkeypatch.delenv("AWS_DEFAULTS_MODE", raising=False)
    machine("aws")
    on_ec2 = _aws_links()
    machine(None)
    assert on_ec2[-1] == "iam-role" and _aws_links() == on_ec2[:-1]
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://169.254.169.254")
    assert _aws_links() == on_ec2


def test_aws_auto_defaults_mode_is_standard_off_ec2_without_asking(machine, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULTS_MODE", "auto")
    monkeypatch.delenv("AWS_EXECUTION_ENV", raising=False)
    machine(None)
    assert aws.session("us-east-1")._session.get_config_variable("defaults_mode") == "standard"
    machine("aws")
    assert aws.session("us-east-1")._session.get_config_variable("defaults_mode") == "auto"


def test_alibaba_asks_for_the_ram_role_on_ecs_or_when_it_is_named(machine, monkeypatch):
    pytest.importorskip("gpu_assist.sources.aliyun")  # the SDK: the `china` extra
    from gpu_assist.clouds.sdk import aliyun as aliyun_api
    from alibabacloud_credentials import provider
    from alibabacloud_credentials.utils import auth_util

    for name, value in (("ecs_metadata_disabled", "false"), ("credentials_uri", None)):
        monkeypatch.setattr(auth_util, f"environment_{name}", value)  # read by the SDK at its import
    monkeypatch.setattr(auth_util, "enable_oidc_credential", False)
    sdk_order = [provider.EnvironmentVariableCredentialsProvider, provider.CLIProfileCredentialsProvider,
                 provider.ProfileCredentialsProvider]
    machine(None)
    assert aliyun_api.chain() == sdk_order
    machine("aliyun")
    assert aliyun_api.chain() == [*sdk_order, provider.EcsRamRoleCredentialsProvider]
    machine(None)
    monkeypatch.setenv("ALIBABA_CLOUD_ECS_METADATA", "gpu-assist-prices")
    assert aliyun_api.chain() == [*sdk_order, provider.EcsRamRoleCredentialsProvider]
    monkeypatch.setattr(auth_util, "environment_ecs_metadata_disabled", "true")  # the SDK's own switch still holds
    assert aliyun_api.chain() == sdk_order


def test_tencent_asks_for_the_cvm_role_on_cvm_or_when_it_is_named(machine, monkeypatch):
    pytest.importorskip("gpu_assist.sources.tencent")  # the SDK: the `china` extra
    from gpu_assist.clouds.sdk import tencent as tencent_api

    def links():
        return [(type(link.__self__).__name__, getattr(link.__self__, "role", None)) for link in tencent_api.chain()]
    machine(None)
    sdk_order = [("EnvironmentVariableCredential", None), ("ProfileCredential", None),
                 ("DefaultTkeOIDCRoleArnProvider", None)]
    assert links() == sdk_order
    machine("tencent")
    assert links() == [*sdk_order[:2], ("CVMRoleCredential", None), sdk_order[2]]  # the SDK asks for the role's name
    machine(None)
    monkeypatch.setenv("TENCENTCLOUD_CAM_ROLE_NAME", "gpu-assist-prices")
    assert links() == [*sdk_order[:2], ("CVMRoleCredential", "gpu-assist-prices"), sdk_order[2]]


@pytest.mark.parametrize("kind", ["basic", "global"])
def test_huawei_asks_for_the_ecs_agency_on_huawei_cloud_or_when_told_it_is_there(kind, machine, monkeypatch):
    pytest.importorskip("gpu_assist.sources.huawei")  # the SDK: the `china` extra
    from gpu_assist.clouds.sdk import huawei as huawei_api

    def links():
        return [type(link).__name__ for link in huawei_api.chain(kind)._providers]
    machine(None)
    sdk_order = ["OidcStsCredentialProvider", "EnvCredentialProvider", "ProfileCredentialProvider",
                 "PodIdentityCredentialProvider"]
    assert links() == sdk_order
    machine("huawei")
    assert links() == [*sdk_order[:3], "_Metadata", sdk_order[3]]
    machine(None)
    monkeypatch.setenv("GPU_ASSIST_CLOUD_HOST", "huawei")
    assert links() == [*sdk_order[:3], "_Metadata", sdk_order[3]]


def test_aws_sessions_share_the_data_files_botocore_read_but_each_reads_its_credentials_anew(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "first")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "first-secret")
    first = aws.session("us-east-1")
    first_key = first.get_credentials().access_key
    aws.client("ec2", "us-east-1")  # EC2's model (megabytes of JSON) read once, for this process
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "second")
    second = aws.session("us-east-1")
    loader = second._session.get_component("data_loader")
    assert loader is first._session.get_component("data_loader")
    assert any(key[:2] == ("load_service_model", "ec2") for key in loader._cache)
    assert len(loader.search_paths) == len(set(loader.search_paths))  # boto3's folder once, however many sessions
    assert (first_key, second.get_credentials().access_key) == ("first", "second")
