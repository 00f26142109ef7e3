"""Tencent Cloud's SDK (tencentcloud-sdk-python, CVM API 2017-03-12) for the price source and the provisioner: a CVM
client, the credential chain, which errors are retried and how a refusal reads.

Credentials come from the SDK's own chain, its links in its order (`TENCENTCLOUD_SECRET_ID`/`TENCENTCLOUD_SECRET_KEY`,
`~/.tencentcloud/credentials`, a CVM role, a TKE pod's OIDC role), built here because the SDK's default chain asks
the CVM metadata service (metadata.tencentyun.com) on any machine: the CVM-role link is in it only on a CVM instance
or where `TENCENTCLOUD_CAM_ROLE_NAME` names the role (`cloud_host.metadata_allowed`). Nothing of them is stored or
logged. Throttling and network errors are retried with backoff (`sdk.with_backoff`), here rather than by the SDK's
StandardRetryer, which (3.0.x) keeps the first error after a later attempt succeeds and raises it.
`GPU_ASSIST_TENCENT_ENDPOINT` (a URL: a VPC's internal endpoint, or a local fake in tests) replaces the public
endpoint, as AWS_ENDPOINT_URL does for boto3.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable
from typing import Any, Protocol

from tencentcloud.common.credential import (
    CVMRoleCredential,
    DefaultTkeOIDCRoleArnProvider,
    EnvironmentVariableCredential,
    ProfileCredential,
)
from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException
from tencentcloud.common.profile.client_profile import ClientProfile
from tencentcloud.common.profile.http_profile import HttpProfile
from tencentcloud.cvm.v20170312 import cvm_client as cvm

from ...errors import ProvisionError
from ...host.cloud_host import ROLE_VARIABLES, metadata_allowed
from . import NoCredentials

CREDENTIAL_VARIABLES = "TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY"
ENDPOINT_VARIABLE = "GPU_ASSIST_TENCENT_ENDPOINT"
RETRIED = ("RequestLimitExceeded", "RequestLimitExceeded.UinLimitExceeded", "ClientNetworkError",
           "ServerNetworkError", "InternalError")


class CvmClient(Protocol):
    """What gpu-assist calls of the SDK's CvmClient (the SDK has no types): one action by name, its JSON."""
    def call_json(self, action: str, params: dict[str, Any]) -> dict[str, Any]: ...


def chain() -> list[Callable[[], Any]]:
    """The SDK's default chain's links (`DefaultCredentialProvider`, in its order), each a call giving credentials
    or None; the CVM-role link only where `cloud_host.metadata_allowed` says so (module docstring)."""
    links: list[Callable[[], Any]] = [EnvironmentVariableCredential().get_credential,
                                      ProfileCredential().get_credential]
    if metadata_allowed("tencent"):
        role = os.environ.get(ROLE_VARIABLES["tencent"][0]) or None  # None: the SDK asks the service for its name
        links.append(CVMRoleCredential(role).get_credential)
    return [*links, DefaultTkeOIDCRoleArnProvider().get_credentials]


def credential() -> Any:
    """The first credentials `chain()` finds; NoCredentials when none does."""
    for link in chain():
        try:
            found = link()
        except (TencentCloudSDKException, OSError):  # the TKE link raises OSError outside a TKE pod
            continue
        if found is not None:
            return found
    raise NoCredentials(f"no Tencent Cloud credentials: set {CREDENTIAL_VARIABLES}")


def cvm_client(region: str, endpoint: str | None = None, *, scheme: str = "http") -> CvmClient:
    """A CVM client for `region`; `endpoint` (`127.0.0.1:8080`) sends its calls there, over plain HTTP unless
    `scheme` says otherwise (tests, a VPC's internal endpoint)."""
    http = HttpProfile(endpoint=endpoint, protocol=scheme, reqTimeout=30) if endpoint else HttpProfile(reqTimeout=30)
    client: CvmClient = cvm.CvmClient(credential(), region, ClientProfile(httpProfile=http))
    return client


def default_client(region: str) -> CvmClient:
    """A CVM client for `region`, at `GPU_ASSIST_TENCENT_ENDPOINT` where it is set (module docstring)."""
    url = urllib.parse.urlsplit(os.environ.get(ENDPOINT_VARIABLE, ""))
    return cvm_client(region, url.netloc or None, scheme=url.scheme or "https")


def _code(error: Exception) -> str:
    return str(getattr(error, "code", None) or type(error).__name__)


def retryable(error: Exception) -> bool:
    """Throttled, or the network failed: worth another try after a pause."""
    return _code(error) in RETRIED


def refused(error: Exception, doing: str) -> ProvisionError:
    """An SDK error as one line a user can act on (the SDK prints no credentials in these)."""
    code, message = _code(error), getattr(error, "message", None) or str(error)
    if retryable(error):
        return ProvisionError(f"Tencent Cloud {doing}: still throttled or unreachable after retrying: {code}: "
                              f"{message}", hint="try again later")
    hint = "check TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY (or the CVM role)" \
        if code.startswith("AuthFailure") else None
    return ProvisionError(f"Tencent Cloud refused {doing}: {code}: {message}", hint=hint)
