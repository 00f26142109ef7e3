"""Alibaba Cloud's own ECS API → offer rows (`gpu-assist catalog refresh aliyun`), with the team's own keys.

ECS API version 2014-05-26, through the official SDK (alibabacloud-ecs20140526):
- `DescribeInstanceTypes` (paged by NextToken): every instance type with its GPU model (`GPUSpec`, e.g.
  "NVIDIA A10"), count (`GPUAmount`) and memory (`GPUMemorySize`, GiB per GPU); kept: types with a GPU gpus.csv knows;
- `DescribePrice` per type and region: pay-as-you-go per hour (`PriceUnit=Hour`) and subscription per month
  (`PriceUnit=Month`, Period 1: 包年包月, its own figure, never derived from the hourly one); `TradePrice`, what the
  account pays, in the response's currency (CNY on the China site). A type the region does not sell answers with an
  error code naming the instance type: skipped and counted. No spot price (DescribePrice does not give one).

Client, credentials (the SDK's own chain, without the RAM-role link off an ECS instance), retries and error
explanations are the SDK adapter's (`clouds/sdk/aliyun.py`), shared with the provisioner. Only
`catalog refresh aliyun` imports this module; tests point the client at a local server through `Config.endpoint`.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from alibabacloud_ecs20140526 import models as ecs_models
from alibabacloud_tea_openapi.exceptions import ClientException

from ..catalog.gpus import GpuTable
from ..clouds.sdk import aliyun, with_backoff
from ..clouds.sdk.aliyun import credential as credential  # `catalog refresh` asks it before any progress bar
from . import JsonObject
from .account_api import AccountApiSource
from .offer_row import OfferRow

SOURCE_KEY = "aliyun-api"
DEFAULT_REGIONS = ("cn-hangzhou", "cn-shanghai", "cn-beijing")
_UNITS = ("Hour", "Month")  # DescribePrice's PriceUnit: on-demand per hour, one month paid ahead


def _size(text: str) -> Decimal | None:
    return Decimal(text) if text else None


class AliyunPriceSource(AccountApiSource):
    """A PriceSource over Alibaba Cloud's ECS API for some regions: pay-as-you-go and monthly, per region."""

    provider = "aliyun"
    source = SOURCE_KEY

    def __init__(self, regions: Iterable[str], gpus: GpuTable, *, today: dt.date,
                 client: Callable[[str], Any] | None = None, sleep: Callable[[float], None] = time.sleep,
                 progress: Callable[[str, int, int], None] | None = None, retries: int = 4):
        super().__init__(regions, today=today, sleep=sleep, progress=progress, retries=retries)
        self.gpus = gpus
        self.client = client or aliyun.default_client

    def _call(self, call: Callable[[Any], Any], request: Any) -> JsonObject | None:
        """One SDK call's response body as a dict, retried with backoff while throttled; None when the region does
        not sell the instance type asked about."""
        try:
            body: JsonObject = with_backoff(lambda: call(request).body.to_map(), aliyun.retryable, self.sleep,
                                            self.retries)
        except ClientException as error:
            code = aliyun.code(error)
            if "InstanceType" in code or code.endswith(("NotSupported", "NotFound")):
                self._skip(f"not sold in the region ({code})")
                return None
            raise aliyun.refused(error, type(request).__name__.removesuffix("Request")) from None
        return body

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
