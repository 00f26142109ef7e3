"""AWS's SDK for the price source, the provisioner, fleet and Cost Explorer: boto3 clients, configured once:
botocore's standard retry mode, botocore's default credential chain less its last link off EC2, and
`AWS_ENDPOINT_URL` (honoured by boto3 itself) for moto in tests and for VPC endpoints.

The chain's last link asks EC2's instance metadata service (169.254.169.254) for an instance role's keys. It stays
on an EC2 instance and where the user configured it (`cloud_host.metadata_allowed`, or an endpoint in the profile);
elsewhere it is removed, so a machine without keys gets "no AWS credentials" at once instead of a call nobody asked
for. A profile's `credential_source = Ec2InstanceMetadata` is configuration: botocore still honours it.

The one place boto3 and botocore are imported lazily: fleet, Cost Explorer, the AWS price source and the AWS
provisioner read AWS through here, and the commands import them for every verb, so boto3 loads only when a verb
calls AWS (`launch/aws.py`, off every light path, imports botocore at its top)."""

from __future__ import annotations

import os
from typing import Any

from ...catalog.regions import default_region
from ...errors import ProvisionError
from ...host.cloud_host import metadata_allowed
from ..tags import REQUEST_TAG as REQUEST_TAG  # gpu-assist's own tag, read by fleet and Cost Explorer

# A boto3 client: built from service models at run time, so without boto3-stubs it has no static type.
BotoClient = Any
# One object of a boto3 answer (an instance of DescribeInstances, a CloudWatch metric), as boto3 gives it.
AwsObject = dict[str, Any]


def session(region: str | None = None) -> Any:
    """A boto3 session whose credential chain asks the instance metadata service only where it may (module
    docstring); its clients and credentials are botocore's as usual."""
    # boto3 (about 100 ms) only when a verb calls AWS: every verb's path imports this module through the commands
    import boto3
    import botocore.session
    from botocore.credentials import create_credential_resolver

    core = botocore.session.get_session()
    _share_the_loader(core)
    # the chain botocore would build on the first client, for that client's region (its STS calls use it)
    chain = create_credential_resolver(core, region_name=region or default_region())
    if not _may_ask_metadata(core):
        chain.remove("iam-role")
        if core.get_config_variable("defaults_mode") == "auto" and not os.environ.get("AWS_EXECUTION_ENV"):
            # auto mode asks the metadata service for the machine's region and, with no answer, settles on
            # standard: said here without asking
            core.set_config_variable("defaults_mode", "standard")
    core.register_component("credential_provider", chain)
    made = boto3.session.Session(botocore_session=core)
    loader = core.get_component("data_loader")
    loader.search_paths[:] = dict.fromkeys(loader.search_paths)  # boto3 adds its folder once per session
    return made


# botocore's reader of its data files (service models, endpoints), kept by the first session for every later one.
_LOADER: list[Any] = []


def _share_the_loader(core: Any) -> None:
    """A botocore session reads its data files afresh, and a model is large (EC2's: megabytes of JSON, a second
    to parse): the sessions of this process share one loader, which keeps what it has read. Each client still
    gets a session of its own, so credentials and settings are read from the environment anew."""
    if _LOADER:
        core.register_component("data_loader", _LOADER[0])
    else:
        _LOADER.append(core.get_component("data_loader"))


def _may_ask_metadata(core: Any) -> bool:
    return metadata_allowed("aws") or bool(core.get_config_variable("ec2_metadata_service_endpoint"))


def client(service: str, region: str | None = None) -> BotoClient:
    # botocore, as in `session`
    from botocore.config import Config

    region = region or default_region()
    config = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=30)
    return session(region).client(service, region_name=region, config=config)


def require_credentials(region: str | None = None) -> None:
    """ProvisionError, in one line naming what to set, when the credential chain finds no keys: before a verb's
    first call, so no progress or half-done work comes first."""
    if session(region).get_credentials() is None:
        raise ProvisionError("no AWS credentials",
                             hint="set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")


def explain(error: Exception, doing: str) -> ProvisionError:
    """A botocore failure as a message a user can act on; no secrets (botocore puts none in these)."""
    # botocore, as in `client`: an error to explain means boto3 is loaded already
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    if isinstance(error, (NoCredentialsError, PartialCredentialsError)):
        return ProvisionError(f"no AWS credentials while {doing}",
                              hint="set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    if isinstance(error, EndpointConnectionError):
        return ProvisionError(f"cannot reach AWS while {doing} ({error.kwargs.get('endpoint_url', 'endpoint')})",
                              hint="check the network, AWS_REGION and AWS_ENDPOINT_URL")
    if isinstance(error, NoRegionError):
        return ProvisionError(f"no AWS region while {doing}", hint="set AWS_REGION")
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "Error")
        message = error.response.get("Error", {}).get("Message", "")
        return ProvisionError(f"AWS said {code} while {doing}: {message}")
    return ProvisionError(f"AWS call failed while {doing}: {type(error).__name__}")
