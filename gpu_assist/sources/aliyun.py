"""Alibaba Cloud's own ECS API → offer rows (`gpu-assist catalog refresh aliyun`), with the team's own keys.

ECS API version 2014-05-26, through the official SDK (alibabacloud-ecs20140526):
- `DescribeInstanceTypes` (paged by NextToken): every instance type with its GPU model (`GPUSpec`, e.g.
  "NVIDIA A10"), count (`GPUAmount`) and memory (`GPUMemorySize`, GiB per GPU); kept: types with a GPU gpus.csv knows;
- `DescribePrice` per type and region: pay-as-you-go per hour (`PriceUnit=Hour`) and subscription per month
  (`PriceUnit=Month`, Period 1: 包年包月, its own figure, never derived from the hourly one); `TradePrice`, what the
  account pays, in the response's currency (CNY on the China site). A type the region does not sell answers with an
  error code naming the instance type: skipped and counted. No spot price (DescribePrice does not give one).

Credentials come from the SDK's own chain, its links in its order (`ALIBABA_CLOUD_ACCESS_KEY_ID`/
`ALIBABA_CLOUD_ACCESS_KEY_SECRET`, an OIDC role, ~/.aliyun/config.json, ~/.alibabacloud/credentials.ini, an ECS RAM
role, `ALIBABA_CLOUD_CREDENTIALS_URI`), built here because the SDK's default chain asks the ECS metadata service
(100.100.100.200) on any machine: the RAM-role link is in it only on an ECS instance or where
`ALIBABA_CLOUD_ECS_METADATA` names the role (`cloud_host.metadata_allowed`); a profile of type `ecs_ram_role` still
asks, as configured. Throttling is retried with backoff. Only
`catalog refresh aliyun` and the Alibaba provisioner import this module (and so the SDK); tests point it at a local
server through `Config.endpoint`.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable
from decimal import Decimal
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
from alibabacloud_tea_openapi.exceptions import ClientException

from ..catalog.gpus import GpuTable
from ..errors import GpuAssistError
from ..host.cloud_host import metadata_allowed
from . import JsonObject
from .offer_row import OfferRow

SOURCE_KEY = "aliyun-api"
DEFAULT_REGIONS = ("cn-hangzhou", "cn-shanghai", "cn-beijing")
CREDENTIAL_VARIABLES = "ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET"
_UNITS = ("Hour", "Month")  # DescribePrice's PriceUnit: on-demand per hour, one month paid ahead
_THROTTLED = ("Throttling", "Throttling.User", "Throttling.Api", "ServiceUnavailable")


def _size(text: str) -> Decimal | None:
    return Decimal(text) if text else None


class NoCredentials(GpuAssistError):
    """The SDK's credential chain found nothing: the CLI exits 2 with this one line."""


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


class AliyunPriceSource:
    """A PriceSource over Alibaba Cloud's ECS API for some regions: pay-as-you-go and monthly, per region."""

    provider = "aliyun"
    source = SOURCE_KEY

    def __init__(self, regions: Iterable[str], gpus: GpuTable, *, today: dt.date,
                 client: Callable[[str], Any] | None = None, sleep: Callable[[float], None] = time.sleep,
                 progress: Callable[[str, int, int], None] | None = None, retries: int = 4):
        self.regions = list(regions)
        self.gpus = gpus
        self.today = today
        self.client = client or (lambda region: ecs_client(region))  # looked up per call: tests point it elsewhere
        self.sleep = sleep
        self.progress = progress or (lambda _step, _done, _total: None)
        self.retries = retries
        self.skipped: dict[str, int] = {}

    def in_scope(self, row: OfferRow) -> bool:
        """This refresh replaces its own earlier rows in its regions; the articles' rows (region `cn`) stay."""
        return row.source == SOURCE_KEY and row.region in self.regions

    def _skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def _call(self, call: Callable[[Any], Any], request: Any) -> JsonObject | None:
        """One SDK call's response body as a dict, retried with exponential backoff while throttled; None when the
        region does not sell the instance type asked about."""
        for attempt in range(self.retries):
            try:
                body: JsonObject = call(request).body.to_map()
                return body
            except ClientException as error:
                code = str(error.code)
                if "InstanceType" in code or code.endswith(("NotSupported", "NotFound")):
                    self._skip(f"not sold in the region ({code})")
                    return None
                if code not in _THROTTLED or attempt == self.retries - 1:
                    raise GpuAssistError(f"Alibaba Cloud ECS: {code}: {error.message}") from None
                self.sleep(0.5 * 2 ** attempt)
        return None

    def gpu_types(self, client: Any) -> dict[str, dict[str, str]]:
        """instance type → its GPU columns, for the types with a GPU gpus.csv knows (DescribeInstanceTypes)."""
        found: dict[str, dict[str, str]] = {}
        token = None
        while True:
            body = self._call(client.describe_instance_types,
                              ecs_models.DescribeInstanceTypesRequest(max_results=1600, next_token=token)) or {}
            for item in body.get("InstanceTypes", {}).get("InstanceType", []):
                if not item.get("GPUAmount"):
                    continue
                spec = self.gpus.find(str(item.get("GPUSpec", "")).removeprefix("NVIDIA ").strip())
                if spec is None:
                    self._skip(f"GPU {item.get('GPUSpec') or 'unnamed'} not in gpus.csv")
                    continue
                memory = float(item.get("GPUMemorySize") or spec.memory_gib)
                found[item["InstanceTypeId"]] = {
                    "gpu": self.gpus.variant(spec, memory).name, "gpu_count": str(item["GPUAmount"]),
                    "gpu_memory_gib": format(Decimal(str(memory)).normalize(), "f"),
                    "vcpus": str(item.get("CpuCoreCount", "")), "memory_gib": str(item.get("MemorySize", ""))}
            token = body.get("NextToken")
            if not token:
                return found

    def rows(self) -> list[OfferRow]:
        rows = []
        for done, region in enumerate(self.regions):
            self.progress(region, done, len(self.regions))
            client = self.client(region)
            for instance_type, specs in sorted(self.gpu_types(client).items()):
                prices, currency = self._prices(client, region, instance_type)
                if not prices:
                    continue
                rows.append(OfferRow(
                    provider="aliyun", region=region, instance_type=instance_type, gpu=specs["gpu"],
                    gpu_count=Decimal(specs["gpu_count"]), gpu_memory_gib=Decimal(specs["gpu_memory_gib"]),
                    vcpus=_size(specs["vcpus"]), memory_gib=_size(specs["memory_gib"]), interconnect="unknown",
                    currency=currency, on_demand_hourly=prices.get("Hour"), monthly=prices.get("Month"),
                    billing_granularity_s=3600, source=SOURCE_KEY, as_of=self.today, verified=True,
                    source_detail="DescribePrice TradePrice"))
        self.progress("", len(self.regions), len(self.regions))
        return rows

    def _prices(self, client: Any, region: str, instance_type: str) -> tuple[dict[str, Decimal], str]:
        """PriceUnit → the TradePrice of one period of it, and the currency the answers name."""
        prices, currency = {}, "CNY"
        for unit in _UNITS:
            body = self._call(client.describe_price, ecs_models.DescribePriceRequest(
                region_id=region, resource_type="instance", instance_type=instance_type, price_unit=unit, period=1))
            price = (body or {}).get("PriceInfo", {}).get("Price", {})
            if price.get("TradePrice") is not None:
                prices[unit] = Decimal(str(price["TradePrice"])).normalize()
                currency = price.get("Currency", "CNY")
        return prices, currency
