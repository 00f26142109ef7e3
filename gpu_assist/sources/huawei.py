"""Huawei Cloud's own APIs → offer rows (`gpu-assist catalog refresh huawei`), with the team's own keys.

Through the official SDKs (huaweicloudsdkecs, huaweicloudsdkbss), per region:
- ECS API v1 `ListFlavors` (GET /v1/{project_id}/cloudservers/flavors): every flavor the region sells, with its
  vCPUs, memory (`ram`, MiB) and `os_extra_specs`. A flavor's GPU model, count and memory come from the providers'
  documentation (`cn_gpu_specs.csv`), else from the flavor's own `info:gpus` (`[{"name": "V100", "memory_mb":
  32768, "count": 1}]`) where gpus.csv knows the name; a flavor with neither is skipped and counted, and one whose
  `cond:operation:status` is `abandon` (withdrawn from sale) is left out.
- BSS API v2 `ListOnDemandResourceRatings` (POST /v2/bills/ratings/on-demand-resources): the pay-per-use price of
  one hour of each GPU flavor (Linux, `usage_measure_id` 4 = hour), `amount`: what this account pays, in the
  response's currency (CNY on the Chinese site, `measure_id` 1 = yuan).
- BSS API v2 `ListRateOnPeriodDetail` (POST /v2/bills/ratings/period-resources/subscribe-rate): one month's
  subscription (包年包月, `period_type` 2 = month), the official website price: its own figure, never derived
  from the hourly one. No spot price (BSS does not rate spot).

Clients, credentials (the SDK's own chain, without the agency link off a Huawei Cloud ECS), retries (HTTP 429,
`APIGW.0308`) and error explanations are the SDK adapter's (`clouds/sdk/huawei.py`), shared with the provisioner.
Only `catalog refresh huawei` imports this module; tests point the clients at a local server through the client
builder's endpoint.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any, NamedTuple

from huaweicloudsdkbss.v2 import (
    DemandProductInfo,
    ListOnDemandResourceRatingsRequest,
    ListRateOnPeriodDetailRequest,
    PeriodProductInfo,
    RateOnDemandReq,
    RateOnPeriodReq,
)
from huaweicloudsdkcore.exceptions.exceptions import ServiceResponseException
from huaweicloudsdkecs.v2 import ListFlavorsRequest

from ..catalog.gpus import GpuTable
from ..clouds.sdk import huawei, with_backoff
from ..clouds.sdk.huawei import credential as credential  # `catalog refresh` asks it before any progress bar
from ..errors import GpuAssistError
from . import number_text
from .account_api import AccountApiSource
from .china import Documented
from .offer_row import OfferRow

SOURCE_KEY = "huawei-api"
DEFAULT_REGIONS = ("cn-north-4", "cn-east-3", "cn-south-1")
_BATCH = 100  # product_infos a rating request takes at most
_ECS_PRODUCT = dict(cloud_service_type="hws.service.type.ec2", resource_type="hws.resource.type.vm")


class Refused(GpuAssistError):
    """The API refused the request itself (HTTP 400): for a rating, one of the flavors asked about."""


class Flavor(NamedTuple):
    """A GPU flavor a region sells, with its GPU columns."""

    name: str
    gpu: str
    gpu_count: str
    gpu_memory_gib: str
    vcpus: str
    memory_gib: str
    interconnect: str
    specs_from: str  # the documentation's source id, or "ListFlavors info:gpus"


class HuaweiPriceSource(AccountApiSource):
    """A PriceSource over Huawei Cloud's ECS and BSS APIs for some regions: pay-per-use and monthly, in CNY."""

    provider = "huawei"
    source = SOURCE_KEY

    def __init__(self, regions: Iterable[str], documented: Iterable[Documented], gpus: GpuTable, *, today: dt.date,
                 ecs: Callable[[str], Any] | None = None, bss: Callable[[], Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 progress: Callable[[str, int, int], None] | None = None, retries: int = 4):
        super().__init__(regions, today=today, sleep=sleep, progress=progress, retries=retries)
        self.documented = {d.instance_type: d for d in documented}
        self.gpus = gpus
        self.ecs = ecs or huawei.default_client
        self.bss = bss or huawei.bss_client

    def _call(self, what: str, call: Callable[[Any], Any], request: Any) -> Any:
        """One SDK call, retried with backoff while throttled; `Refused` when the API refuses the request itself."""
        try:
            return with_backoff(lambda: call(request), huawei.retryable, self.sleep, self.retries)
        except ServiceResponseException as error:
            if error.status_code == 400:
                raise Refused(f"Huawei Cloud {what}: {error.error_code}: {error.error_msg}") from None
            raise huawei.refused(error, what) from None

    def flavors(self, client: Any) -> list[Flavor]:
        """The region's GPU flavors on sale, with their GPU columns (ListFlavors)."""
        found = []
        for flavor in self._call("ListFlavors", client.list_flavors, ListFlavorsRequest()).flavors or []:
            extra = flavor.os_extra_specs
            if extra is not None and extra.condoperationstatus == "abandon":
                self._skip("withdrawn from sale (abandon)")
                continue
            gpu = self._gpu_columns(flavor.id, extra)
            if gpu is not None:
                memory = number_text(str(round(int(flavor.ram or 0) / 1024, 2)))
                found.append(Flavor(flavor.id, *gpu[:3], str(flavor.vcpus or ""), memory, *gpu[3:]))
        return found

    def _gpu_columns(self, name: str, extra: Any) -> tuple[str, str, str, str, str] | None:
        """(GPU, count, memory per GPU, interconnect, specs source) of a flavor; None for one without a GPU or
        whose GPU neither the documentation nor gpus.csv names (counted)."""
        documented = self.documented.get(name)
        if documented is not None:
            spec = self.gpus.find(documented.gpu)
            if spec is not None:
                gpu = self.gpus.variant(spec, float(documented.memory_per_gpu)).name
                interconnect = "nvlink" if "nvlink" in documented.interconnect.lower() else "unknown"
                return gpu, documented.gpu_count, documented.memory_per_gpu, interconnect, documented.source
        listed = json.loads(extra.infogpus) if extra is not None and extra.infogpus else []
        if not listed:
            if extra is not None and extra.ecsperformancetype == "gpu":
                self._skip("GPU flavor with no info:gpus and no documented spec")
            return None
        card = listed[0]
        spec = self.gpus.find(str(card.get("name", "")).removeprefix("NVIDIA ").strip())
        if spec is None:
            self._skip(f"GPU {card.get('name') or 'unnamed'} not in gpus.csv")
            return None
        memory = float(card.get("memory_mb") or spec.memory_gib * 1024) / 1024
        count = sum(int(c.get("count") or 0) for c in listed)
        return (self.gpus.variant(spec, memory).name, str(count), number_text(str(round(memory, 2))), "unknown",
                "ListFlavors info:gpus")

    def _ratings(self, client: Any, region: str, project_id: str, flavors: list[Flavor],
                 monthly: bool) -> dict[str, tuple[Decimal, str]]:
        """flavor name → its price (one hour pay-per-use, or one month's subscription) and currency, asked in
        batches; a batch BSS refuses (a flavor it cannot rate there) is asked flavor by flavor, and a flavor
        refused alone is skipped and counted."""
        prices: dict[str, tuple[Decimal, str]] = {}
        for start in range(0, len(flavors), _BATCH):
            batch = flavors[start:start + _BATCH]
            try:
                prices.update(self._rate(client, region, project_id, batch, monthly))
            except Refused:
                if len(batch) == 1:
                    self._skip(f"not rated in the region ({'monthly' if monthly else 'hourly'})")
                    continue
                for flavor in batch:
                    prices.update(self._ratings(client, region, project_id, [flavor], monthly))
        return prices

    def _rate(self, client: Any, region: str, project_id: str, flavors: list[Flavor],
              monthly: bool) -> dict[str, tuple[Decimal, str]]:
        """One rating request for some flavors (ids 1, 2, … in their order)."""
        batch = {str(n): f for n, f in enumerate(flavors, 1)}
        if monthly:
            infos = [PeriodProductInfo(id=n, resource_spec=f"{f.name}.linux", region=region, period_type=2,
                                       period_num=1, subscription_num=1, **_ECS_PRODUCT) for n, f in batch.items()]
            period = RateOnPeriodReq(project_id=project_id, product_infos=infos)
            answer = self._call("ListRateOnPeriodDetail", client.list_rate_on_period_detail,
                                ListRateOnPeriodDetailRequest(body=period))
            results = [(r.id, r.official_website_amount)
                       for r in answer.official_website_rating_result.product_rating_results or []]
        else:
            infos = [DemandProductInfo(id=n, resource_spec=f"{f.name}.linux", region=region, usage_factor="Duration",
                                       usage_value=1, usage_measure_id=4, subscription_num=1, **_ECS_PRODUCT)
                     for n, f in batch.items()]
            demand = RateOnDemandReq(project_id=project_id, product_infos=infos)
            answer = self._call("ListOnDemandResourceRatings", client.list_on_demand_resource_ratings,
                                ListOnDemandResourceRatingsRequest(body=demand))
            results = [(r.id, r.amount) for r in answer.product_rating_results or []]
        return {batch[key].name: (Decimal(str(amount)), answer.currency or "CNY")
                for key, amount in results if key in batch and amount is not None}

    def rows(self) -> list[OfferRow]:
        rows = []
        bss = self.bss()
        for done, region in enumerate(self.regions):
            self.progress(region, done, len(self.regions))
            ecs = self.ecs(region)
            flavors = self.flavors(ecs)
            if not flavors:
                continue
            project_id = ecs.get_credentials().project_id
            hourly = self._ratings(bss, region, project_id, flavors, monthly=False)
            monthly = self._ratings(bss, region, project_id, flavors, monthly=True)
            for flavor in flavors:
                if flavor.name not in hourly and flavor.name not in monthly:
                    self._skip("no price in the region")
                    continue
                currency = (hourly.get(flavor.name) or monthly[flavor.name])[1]
                rows.append(OfferRow(
                    provider="huawei", region=region, instance_type=flavor.name, gpu=flavor.gpu,
                    gpu_count=Decimal(flavor.gpu_count), gpu_memory_gib=_size(flavor.gpu_memory_gib),
                    vcpus=_size(flavor.vcpus), memory_gib=_size(flavor.memory_gib), interconnect=flavor.interconnect,
                    currency=currency, on_demand_hourly=_price(hourly.get(flavor.name)),
                    monthly=_price(monthly.get(flavor.name)), billing_granularity_s=3600, source=SOURCE_KEY,
                    as_of=self.today, verified=True,
                    source_detail=f"ListOnDemandResourceRatings amount, ListRateOnPeriodDetail official price; "
                                  f"specs {flavor.specs_from}"))
        self.progress("", len(self.regions), len(self.regions))
        return rows


def _price(price: tuple[Decimal, str] | None) -> Decimal | None:
    return price[0].normalize() if price else None


def _size(text: str) -> Decimal | None:
    return Decimal(text) if text else None
