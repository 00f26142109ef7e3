"""Tencent Cloud's own CVM API → offer rows (`gpu-assist catalog refresh tencent`), with the team's own keys.

`DescribeZoneInstanceConfigInfos` (CVM API 2017-03-12) lists, per region, every instance type each zone sells with
its price for the charge type asked: POSTPAID_BY_HOUR gives the on-demand price per hour (`UnitPriceDiscount`, what
the account pays, else `UnitPrice`), SPOTPAID the spot price per hour, PREPAID the monthly (包年包月) price of one
month (`DiscountPrice`, else `OriginalPrice`): its own figure, never derived from the hourly one (their ratio differs
by family). The GPU model is not in the response (`GpuCount` is): it comes from the
catalog's documented Tencent rows (`cn_gpu_specs.csv` via `import-china`), by instance family; a family the
documentation does not describe is skipped and counted.

Credentials come from the SDK's own chain, its links in its order (`TENCENTCLOUD_SECRET_ID`/`TENCENTCLOUD_SECRET_KEY`,
`~/.tencentcloud/credentials`, a CVM role, a TKE pod's OIDC role), built here because the SDK's default chain asks
the CVM metadata service (metadata.tencentyun.com) on any machine: the CVM-role link is in it only on a CVM instance
or where `TENCENTCLOUD_CAM_ROLE_NAME` names the role (`cloud_host.metadata_allowed`). Throttling
(`RequestLimitExceeded`) is retried with backoff. Only
`catalog refresh tencent` and the Tencent provisioner import this module (and so the SDK); tests point it at a local
server through `HttpProfile.endpoint`.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from decimal import Decimal
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

from ..errors import GpuAssistError
from ..facts import Flag, ScopedFlag
from ..host.cloud_host import ROLE_VARIABLES, metadata_allowed
from . import JsonObject
from .china import REGION as LIST_REGION
from .offer_row import OfferRow

SOURCE_KEY = "tencent-api"
DEFAULT_REGIONS = ("ap-guangzhou", "ap-shanghai", "ap-beijing")
CREDENTIAL_VARIABLES = "TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY"
# Per charge type, the row with its price in its column (on-demand per hour, spot per hour, one month ahead)
_PRICED: dict[str, Callable[[OfferRow, Decimal | None], OfferRow]] = {
    "POSTPAID_BY_HOUR": lambda row, price: replace(row, on_demand_hourly=price),
    "SPOTPAID": lambda row, price: replace(row, spot_hourly=price),
    "PREPAID": lambda row, price: replace(row, monthly=price)}
# ItemPrice's fields per charge type, what the account pays first: per hour after use, or one month paid ahead
_PRICE_FIELDS = {"POSTPAID_BY_HOUR": ("UnitPriceDiscount", "UnitPrice"), "SPOTPAID": ("UnitPriceDiscount", "UnitPrice"),
                 "PREPAID": ("DiscountPrice", "OriginalPrice")}
_THROTTLED = ("RequestLimitExceeded", "RequestLimitExceeded.UinLimitExceeded", "InternalError")


class CvmClient(Protocol):
    """What gpu-assist calls of the SDK's CvmClient (the SDK has no types): one action by name, its JSON."""

    def call_json(self, action: str, params: JsonObject) -> JsonObject: ...


class NoCredentials(GpuAssistError):
    """The SDK's credential chain found nothing: the CLI exits 2 with this one line."""


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


def _price(price: JsonObject, charge_type: str) -> Decimal | None:
    first, fallback = _PRICE_FIELDS[charge_type]
    value = price.get(first) or price.get(fallback)
    return Decimal(str(value)).normalize() if value else None


def _size(value: object) -> Decimal | None:
    """A count or size as the API gives it (`10`, `10.5`), written as it reads."""
    return Decimal(str(value)) if value not in (None, "") else None


class TencentPriceSource:
    """A PriceSource over Tencent Cloud's CVM API for some regions: on-demand, spot and monthly per zone, in CNY."""

    provider = "tencent"
    source = SOURCE_KEY

    def __init__(self, regions: Iterable[str], documented: dict[str, tuple[str, str]], *, today: dt.date,
                 client: Callable[[str], CvmClient] | None = None, sleep: Callable[[float], None] = time.sleep,
                 progress: Callable[[str, int, int], None] | None = None, retries: int = 4):
        self.regions = list(regions)
        self.documented = documented  # instance family → (GPU name, memory per GPU), from the documented rows
        self.today = today
        self.client = client or (lambda region: cvm_client(region))  # looked up per call: tests point it elsewhere
        self.sleep = sleep
        self.progress = progress or (lambda _region, _done, _total: None)
        self.retries = retries
        self.skipped: dict[str, int] = {}

    def in_scope(self, row: OfferRow) -> bool:
        """This refresh replaces its own earlier rows in the regions it asks; the published list and the
        articles' rows (region `cn`) stay."""
        return row.source == SOURCE_KEY and row.region in self.regions

    def _call(self, client: CvmClient, charge_type: str) -> list[JsonObject]:
        """One DescribeZoneInstanceConfigInfos call, retried with exponential backoff while throttled."""
        params = {"Filters": [{"Name": "instance-charge-type", "Values": [charge_type]}]}
        for attempt in range(self.retries):
            try:
                return list(client.call_json("DescribeZoneInstanceConfigInfos", params)["Response"]
                            .get("InstanceTypeQuotaSet", []))
            except TencentCloudSDKException as error:
                if error.get_code() not in _THROTTLED or attempt == self.retries - 1:
                    raise GpuAssistError(f"Tencent Cloud {charge_type} prices: {error.get_code()}: "
                                         f"{error.get_message()}") from None
                self.sleep(0.5 * 2 ** attempt)
        return []

    def rows(self) -> list[OfferRow]:
        rows: dict[tuple[str, str], OfferRow] = {}
        for done, region in enumerate(self.regions):
            self.progress(region, done, len(self.regions))
            client = self.client(region)
            for charge_type, priced in _PRICED.items():
                for item in self._call(client, charge_type):
                    row = self._row(region, item, rows)
                    if row is not None:
                        key = (row.zone, row.instance_type)
                        rows[key] = priced(row, _price(item.get("Price") or {}, charge_type))
        self.progress("", len(self.regions), len(self.regions))
        return [row for row in rows.values()
                if row.on_demand_hourly is not None or row.spot_hourly is not None or row.monthly is not None]

    def _row(self, region: str, item: JsonObject, rows: dict[tuple[str, str], OfferRow]) -> OfferRow | None:
        """The row of an item's zone and instance type (made on first sight), None for a type without GPUs or one
        whose family the documentation does not describe."""
        count = Decimal(str(item.get("GpuCount") or 0))
        if count <= 0:
            return None
        family = item["InstanceType"].split(".")[0]
        if family not in self.documented:
            self.skipped[f"family {family} not documented"] = self.skipped.get(f"family {family} not documented",
                                                                               0) + 1
            return None
        key = (item["Zone"], item["InstanceType"])
        if key not in rows:
            gpu, memory = self.documented[family]
            rows[key] = OfferRow(
                provider="tencent", region=region, zone=item["Zone"], instance_type=item["InstanceType"], gpu=gpu,
                gpu_count=count.normalize(), gpu_memory_gib=Decimal(memory), vcpus=_size(item.get("Cpu")),
                memory_gib=_size(item.get("Memory")), interconnect="unknown", currency="CNY",
                billing_granularity_s=3600, source=SOURCE_KEY, as_of=self.today, verified=True,
                flags=(ScopedFlag("all", Flag.FRACTIONAL_GPU),) if count < 1 else (),
                source_detail=f"DescribeZoneInstanceConfigInfos, {item.get('TypeName', '')}".strip(", "))
        return rows[key]


def documented_families(rows: Iterable[dict[str, str]]) -> dict[str, tuple[str, str]]:
    """instance family → (GPU, memory per GPU) from the catalog's documented Tencent rows (not the articles')."""
    families: dict[str, tuple[str, str]] = {}
    for row in rows:
        if row["verified"] == "yes" and row["region"] == LIST_REGION:
            families.setdefault(row["instance_type"].split(".")[0], (row["gpu"], row["gpu_memory_gib"]))
    return families
