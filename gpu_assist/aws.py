"""boto3 clients, configured once: botocore's standard retry mode, the default credential chain,
and `AWS_ENDPOINT_URL` (honoured by boto3 itself) for moto in tests and for VPC endpoints.

The one place boto3 and botocore are imported lazily: fleet and Cost Explorer read AWS through here, and the commands
import them for every verb, so boto3 loads only when a verb calls AWS (provision.aws, off every light path, imports
botocore at its top)."""

from __future__ import annotations

from typing import Any

from .errors import ProvisionError
from .regions import default_region

# A boto3 client: built from service models at run time, so without boto3-stubs it has no static type.
BotoClient = Any
# One object of a boto3 answer (an instance of DescribeInstances, a CloudWatch metric), as boto3 gives it.
AwsObject = dict[str, Any]
# The tags gpu-assist puts on every instance it launches: it acts only on instances carrying the first.
REQUEST_TAG, REQUESTER_TAG, EXPIRES_TAG = "gpu-assist:request-id", "gpu-assist:requester", "gpu-assist:expires-at"


def client(service: str, region: str | None = None) -> BotoClient:
    # boto3 (about 100 ms) only when a verb calls AWS: every verb's path imports this module through the commands
    import boto3
    from botocore.config import Config

    region = region or default_region()
    config = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=30)
    return boto3.session.Session().client(service, region_name=region, config=config)


def explain(error: Exception, doing: str) -> ProvisionError:
    """A botocore failure as a message a user can act on; no secrets (botocore puts none in these)."""
    # botocore, as in `client`: an error to explain means boto3 is loaded already
    from botocore.exceptions import (ClientError, EndpointConnectionError, NoCredentialsError, NoRegionError,
                                     PartialCredentialsError)

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
