"""Alibaba Cloud's SDK (alibabacloud-ecs20140526, ECS API 2014-05-26) for the price source and the provisioner: an
ECS client, the credential chain, which errors are retried and how a refusal reads.

Credentials come from the SDK's own chain, its links in its order (`ALIBABA_CLOUD_ACCESS_KEY_ID`/
`ALIBABA_CLOUD_ACCESS_KEY_SECRET`, an OIDC role, ~/.aliyun/config.json, ~/.alibabacloud/credentials.ini, an ECS RAM
role, `ALIBABA_CLOUD_CREDENTIALS_URI`), built here because the SDK's default chain asks the ECS metadata service
(100.100.100.200) on any machine: the RAM-role link is in it only on an ECS instance or where
`ALIBABA_CLOUD_ECS_METADATA` names the role (`cloud_host.metadata_allowed`); a profile of type `ecs_ram_role` still
asks, as configured. Nothing of them is stored or logged. Throttling is retried with backoff (`sdk.with_backoff`).
`GPU_ASSIST_ALIYUN_ENDPOINT` (a URL: a VPC endpoint, or a local fake in tests) replaces the public endpoint, as
AWS_ENDPOINT_URL does for boto3.
"""

from __future__ import annotations

import logging
import os
import urllib.parse
from typing import Any

from alibabacloud_credentials.client import Client as Credentials
from alibabacloud_credentials.provider import (
    CLIProfileCredentialsProvider,
    EcsRamRoleCredentialsProvider,
    EnvironmentVariableCredentialsProvider,
    OIDCRoleArnCredentialsProvider,
    ProfileCredentialsProvider,
    URLCredentialsProvider,
)
from alibabacloud_credentials.utils import auth_util
from alibabacloud_ecs20140526 import models as ecs_models
from alibabacloud_ecs20140526.client import Client
from alibabacloud_tea_openapi import models as openapi_models

from ...errors import ProvisionError
from ...host.cloud_host import metadata_allowed
from . import NoCredentials

CREDENTIAL_VARIABLES = "ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET"
ENDPOINT_VARIABLE = "GPU_ASSIST_ALIYUN_ENDPOINT"
RETRIED = ("Throttling", "Throttling.User", "Throttling.Api", "ServiceUnavailable")


def chain() -> list[type]:
    """The SDK's default chain's links (`DefaultCredentialsProvider`, in its order, read from the same settings),
    the ECS RAM-role link only where `cloud_host.metadata_allowed` says so (module docstring)."""
    links: list[type] = [EnvironmentVariableCredentialsProvider]
    if auth_util.enable_oidc_credential:
        links.append(OIDCRoleArnCredentialsProvider)
    links += [CLIProfileCredentialsProvider, ProfileCredentialsProvider]
    if auth_util.environment_ecs_metadata_disabled.lower() != "true" and metadata_allowed("aliyun"):
        links.append(EcsRamRoleCredentialsProvider)
    if auth_util.environment_credentials_uri:
        links.append(URLCredentialsProvider)
    return links


def credential() -> Any:
    """The first link of `chain()` that finds keys, resolved now, as the SDK's credentials client; NoCredentials
    when none does. A failing link logs a warning and a traceback to the SDK's logger `credentials` (a handler of
    its own, on stderr): silenced while resolving, the one line says what to set."""
    sdk_log = logging.getLogger("credentials")
    level = sdk_log.level
    sdk_log.setLevel(logging.CRITICAL + 1)
    try:
        for link in chain():
            try:
                provider = link()
                provider.get_credentials()
            except Exception:  # noqa: BLE001 - a link that finds nothing raises what it likes, as in the SDK's chain
                continue
            return Credentials(provider=provider)
    finally:
        sdk_log.setLevel(level)
    raise NoCredentials(f"no Alibaba Cloud keys: set {CREDENTIAL_VARIABLES}")


def ecs_client(region: str, endpoint: str | None = None, *, scheme: str = "http") -> Any:
    """An ECS client for `region`; `endpoint` (`127.0.0.1:8080`) sends its calls there, over plain HTTP unless
    `scheme` says otherwise (tests, a VPC endpoint)."""
    return Client(openapi_models.Config(credential=credential(), region_id=region,
                                        protocol=scheme if endpoint else "https",
                                        endpoint=endpoint or f"ecs.{region}.aliyuncs.com"))


def default_client(region: str) -> Any:
    """An ECS client for `region`, at `GPU_ASSIST_ALIYUN_ENDPOINT` where it is set (module docstring)."""
    url = urllib.parse.urlsplit(os.environ.get(ENDPOINT_VARIABLE, ""))
    return ecs_client(region, url.netloc or None, scheme=url.scheme or "https")


def models() -> Any:
    """The SDK's request models (`alibabacloud_ecs20140526.models`, untyped)."""
    return ecs_models


def code(error: Exception) -> str:
    """An SDK error's code (`Throttling.User`), or its type's name for another error."""
    return str(getattr(error, "code", None) or type(error).__name__)


def retryable(error: Exception) -> bool:
    """Throttled: worth another try after a pause."""
    return code(error) in RETRIED


def refused(error: Exception, doing: str) -> ProvisionError:
    """An SDK error as one line a user can act on (the SDK prints no credentials in these)."""
    message = str(getattr(error, "message", None) or error).splitlines()[0][:200]
    if retryable(error):
        return ProvisionError(f"Alibaba Cloud {doing}: still throttled after retrying: {code(error)}: {message}",
                              hint="try again later")
    hint = "check ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET (or the RAM role)" \
        if "Signature" in code(error) or "AccessKey" in code(error) else None
    return ProvisionError(f"Alibaba Cloud refused {doing}: {code(error)}: {message}", hint=hint)
