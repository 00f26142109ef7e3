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

Credentials come from the SDK's own chain, its links in its order (an OIDC agency, `HUAWEICLOUD_SDK_AK`/
`HUAWEICLOUD_SDK_SK`, optionally `HUAWEICLOUD_SDK_PROJECT_ID`/`HUAWEICLOUD_SDK_DOMAIN_ID`, else looked up through
IAM; ~/.huaweicloud/credentials; an ECS agency through the metadata service; a CCE pod identity), built here because
the SDK's default chain asks the metadata service (169.254.169.254) on any machine and lets a connection error
through: the agency link is in it only on a Huawei Cloud ECS or where `GPU_ASSIST_CLOUD_HOST=huawei` says so (the SDK
reads no variable naming an agency; `cloud_host.metadata_allowed`), and its network errors end the link, not the
command. Throttling (HTTP 429, `APIGW.0308`) is retried with backoff. Only
`catalog refresh huawei` imports this module (and so the SDKs); tests point them at a local server through the
client builder's endpoint.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any, NamedTuple

from huaweicloudsdkbss.v2 import (
    BssClient,
    DemandProductInfo,
    ListOnDemandResourceRatingsRequest,
    ListRateOnPeriodDetailRequest,
    PeriodProductInfo,
    RateOnDemandReq,
    RateOnPeriodReq,
)
from huaweicloudsdkbss.v2.region.bss_region import BssRegion
from huaweicloudsdkcore.auth.provider import (
    CredentialProviderChain,
    EnvCredentialProvider,
    MetadataCredentialProvider,
    OidcStsCredentialProvider,
    PodIdentityCredentialProvider,
    ProfileCredentialProvider,
)
from huaweicloudsdkcore.exceptions.exceptions import ApiValueError, SdkException, ServiceResponseException
from huaweicloudsdkecs.v2 import EcsClient, ListFlavorsRequest
from huaweicloudsdkecs.v2.region.ecs_region import EcsRegion
from requests import RequestException

from ..catalog.gpus import GpuTable
from ..errors import GpuAssistError
from ..host.cloud_host import metadata_allowed
from . import number_text
from .china import Documented
from .offer_row import OfferRow

SOURCE_KEY = "huawei-api"
DEFAULT_REGIONS = ("cn-north-4", "cn-east-3", "cn-south-1")
CREDENTIAL_VARIABLES = "HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK"
_BSS_REGION = "cn-north-1"  # BSS is global: its one Chinese endpoint (bss.myhuaweicloud.com)
_THROTTLED = ("APIGW.0308", "CBC.0999")  # the gateway's flow control; BSS's "system busy, try again"
_BATCH = 100  # product_infos a rating request takes at most
_ECS_PRODUCT = dict(cloud_service_type="hws.service.type.ec2", resource_type="hws.resource.type.vm")


class NoCredentials(GpuAssistError):
    """The SDK's credential chain found nothing: the CLI exits 2 with this one line."""


class Refused(GpuAssistError):
    """The API refused the request itself (HTTP 400): for a rating, one of the flavors asked about."""


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


def chain(kind: str) -> CredentialProviderChain:
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


def bss_client(endpoint: str | None = None) -> Any:
    """A BSS client (account-wide credentials: the SDK looks the account's domain up through IAM unless the
    environment names it); `endpoint` as for `ecs_client`."""
    _quiet(BssClient)
    builder = BssClient.new_builder().with_credentials(_chain("global")).with_region(BssRegion.value_of(_BSS_REGION))
    return (builder.with_endpoint(endpoint) if endpoint else builder).build()


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


class HuaweiPriceSource:
    """A PriceSource over Huawei Cloud's ECS and BSS APIs for some regions: pay-per-use and monthly, in CNY."""

    provider = "huawei"
    source = SOURCE_KEY

    def __init__(self, regions: Iterable[str], documented: Iterable[Documented], gpus: GpuTable, *, today: dt.date,
                 ecs: Callable[[str], Any] | None = None, bss: Callable[[], Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 progress: Callable[[str, int, int], None] | None = None, retries: int = 4):
        self.regions = list(regions)
        self.documented = {d.instance_type: d for d in documented}
        self.gpus = gpus
        self.today = today
        self.ecs = ecs or (lambda region: ecs_client(region))  # looked up per call: tests point them elsewhere
        self.bss = bss or (lambda: bss_client())
        self.sleep = sleep
        self.progress = progress or (lambda _region, _done, _total: None)
        self.retries = retries
        self.skipped: dict[str, int] = {}

    def in_scope(self, row: OfferRow) -> bool:
        """This refresh replaces its own earlier rows in its regions; the articles' rows (region `cn`) stay."""
        return row.source == SOURCE_KEY and row.region in self.regions

    def _skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def _call(self, what: str, call: Callable[[Any], Any], request: Any) -> Any:
        """One SDK call, retried with exponential backoff while throttled."""
        for attempt in range(self.retries):
            try:
                return call(request)
            except ServiceResponseException as error:
                throttled = error.status_code == 429 or error.error_code in _THROTTLED
                if throttled and attempt == self.retries - 1:
                    raise GpuAssistError(f"Huawei Cloud {what}: still throttled (HTTP {error.status_code}) after "
                                         f"{self.retries} tries; try again later") from None
                if not throttled:
                    kind = Refused if error.status_code == 400 else GpuAssistError
                    raise kind(f"Huawei Cloud {what}: {error.error_code}: {error.error_msg}") from None
                self.sleep(0.5 * 2 ** attempt)
        raise AssertionError("unreachable: the last attempt raises")

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
