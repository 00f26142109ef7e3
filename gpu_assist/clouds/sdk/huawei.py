"""Huawei Cloud's SDKs (huaweicloudsdkecs, huaweicloudsdkbss) for the price source and the provisioner: ECS and BSS
clients, the credential chain, which errors are retried and how a refusal reads.

Credentials come from the SDK's own chain, its links in its order (an OIDC agency, `HUAWEICLOUD_SDK_AK`/
`HUAWEICLOUD_SDK_SK`, optionally `HUAWEICLOUD_SDK_PROJECT_ID`/`HUAWEICLOUD_SDK_DOMAIN_ID`, else looked up through
IAM; ~/.huaweicloud/credentials; an ECS agency through the metadata service; a CCE pod identity), built here because
the SDK's default chain asks the metadata service (169.254.169.254) on any machine and lets a connection error
through: the agency link is in it only on a Huawei Cloud ECS or where `GPU_ASSIST_CLOUD_HOST=huawei` says so (the SDK
reads no variable naming an agency; `cloud_host.metadata_allowed`), and its network errors end the link, not the
command. Nothing of them is stored or logged. Throttling (HTTP 429, `APIGW.0308`; BSS's `CBC.0999`, "system busy")
is retried with backoff (`sdk.with_backoff`). `GPU_ASSIST_HUAWEI_ENDPOINT` (a URL: a VPC endpoint, or a local fake
in tests) replaces the public ECS endpoint.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from huaweicloudsdkbss.v2 import BssClient
from huaweicloudsdkbss.v2.region.bss_region import BssRegion
from huaweicloudsdkcore.auth.provider import (
    CredentialProviderChain,
    EnvCredentialProvider,
    MetadataCredentialProvider,
    OidcStsCredentialProvider,
    PodIdentityCredentialProvider,
    ProfileCredentialProvider,
)
from huaweicloudsdkcore.exceptions.exceptions import ApiValueError, SdkException
from huaweicloudsdkecs.v2 import EcsClient
from huaweicloudsdkecs.v2.region.ecs_region import EcsRegion
from requests import RequestException

from ...errors import ProvisionError
from ...host.cloud_host import metadata_allowed
from . import NoCredentials

CREDENTIAL_VARIABLES = "HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK"
ENDPOINT_VARIABLE = "GPU_ASSIST_HUAWEI_ENDPOINT"
THROTTLED = ("APIGW.0308", "CBC.0999")  # the gateway's flow control; BSS's "system busy, try again"
_BSS_REGION = "cn-north-1"  # BSS is global: its one Chinese endpoint (bss.myhuaweicloud.com)


class _Metadata:
    """The SDK's metadata link, whose network errors (requests', which the SDK's chain does not catch) end the link
    as its other failures do, so the chain goes on to the next."""

    def __init__(self, kind: str):
        self.link = MetadataCredentialProvider(kind)

    def get_credentials(self) -> Any:
        try:
            return self.link.get_credentials()
        except RequestException as error:
            raise SdkException(f"no metadata service answered ({type(error).__name__})") from None


def chain(kind: str) -> Any:
    """The SDK's default chain (`CredentialProviderChain.get_basic()` or `get_global()`: its links in its order) for
    credentials of `kind` (`basic`: project-scoped, ECS; `global`: account-wide, BSS), the metadata link only where
    `cloud_host.metadata_allowed` says so (module docstring)."""
    links = [OidcStsCredentialProvider(kind), EnvCredentialProvider(kind), ProfileCredentialProvider(kind),
             *([_Metadata(kind)] if metadata_allowed("huawei") else []), PodIdentityCredentialProvider(kind)]
    return CredentialProviderChain(links)


def _chain(kind: str) -> Any:
    """`chain(kind)`'s first find; NoCredentials when it finds none."""
    try:
        return chain(kind).get_credentials()
    except (ApiValueError, SdkException):
        raise NoCredentials(f"no Huawei Cloud keys: set {CREDENTIAL_VARIABLES}") from None


def credential() -> Any:
    """The SDK's default chain, resolved now (project-scoped credentials); NoCredentials when it finds none."""
    return _chain("basic")


def _quiet(client_class: type) -> None:
    """The SDK logs a throttled call at ERROR to a logger of its own with no handler (so Python prints it on
    stderr): our retries and our one-line error say it instead."""
    logger = logging.getLogger(f"HuaweiCloud-SDK-{client_class.__name__}")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())


def ecs_client(region: str, endpoint: str | None = None) -> Any:
    """An ECS client for `region` with fresh credentials (each region has its own project, which the SDK looks up
    through IAM unless the environment names it); `endpoint` (`http://127.0.0.1:8080`) is tried first (tests)."""
    _quiet(EcsClient)
    builder = EcsClient.new_builder().with_credentials(credential()).with_region(EcsRegion.value_of(region))
    return (builder.with_endpoint(endpoint) if endpoint else builder).build()


def default_client(region: str) -> Any:
    """An ECS client for `region`, at `GPU_ASSIST_HUAWEI_ENDPOINT` where it is set (module docstring)."""
    return ecs_client(region, os.environ.get(ENDPOINT_VARIABLE) or None)


def bss_client(endpoint: str | None = None) -> Any:
    """A BSS client (account-wide credentials: the SDK looks the account's domain up through IAM unless the
    environment names it); `endpoint` as for `ecs_client`."""
    _quiet(BssClient)
    builder = BssClient.new_builder().with_credentials(_chain("global")).with_region(BssRegion.value_of(_BSS_REGION))
    return (builder.with_endpoint(endpoint) if endpoint else builder).build()


def code(error: Exception) -> str:
    """An SDK error's code (`APIGW.0308`), "" when it has none."""
    return str(getattr(error, "error_code", "") or "")


def retryable(error: Exception) -> bool:
    """Throttled (HTTP 429 or a throttling code): worth another try after a pause."""
    return getattr(error, "status_code", None) == 429 or code(error) in THROTTLED


def refused(error: Exception, doing: str) -> ProvisionError:
    """An SDK error as one line a user can act on (the SDK prints no credentials in these)."""
    status = getattr(error, "status_code", None)
    if retryable(error):
        return ProvisionError(f"Huawei Cloud {doing}: still throttled (HTTP {status}) after retrying",
                              hint="try again later")
    message = str(getattr(error, "error_msg", None) or error).splitlines()[0][:200]
    hint = "check HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK (or the ECS agency)" \
        if status in (401, 403) and code(error).startswith("APIGW") else None
    return ProvisionError(f"Huawei Cloud refused {doing}: {code(error) or type(error).__name__}: {message}",
                          hint=hint)
