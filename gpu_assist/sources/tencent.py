"""Tencent Cloud's own CVM API → offer rows (`gpu-assist catalog refresh tencent`), with the team's own keys.

`DescribeZoneInstanceConfigInfos` (CVM API 2017-03-12) lists, per region, every instance type each zone sells with
its price for the charge type asked: POSTPAID_BY_HOUR gives the on-demand price per hour (`UnitPriceDiscount`, what
the account pays, else `UnitPrice`), SPOTPAID the spot price per hour, PREPAID the monthly (包年包月) price of one
month (`DiscountPrice`, else `OriginalPrice`): its own figure, never derived from the hourly one (their ratio differs
by family). The GPU model is not in the response (`GpuCount` is): it comes from the
catalog's documented Tencent rows (`cn_gpu_specs.csv` via `import-china`), by instance family; a family the
documentation does not describe is skipped and counted.

Client, credentials (the SDK's own chain, without the CVM-role link off a CVM instance), retries and error
explanations are the SDK adapter's (`clouds/sdk/tencent.py`), shared with the provisioner. Only
`catalog refresh tencent` imports this module; tests point the client at a local server through
`HttpProfile.endpoint`.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from decimal import Decimal

from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException

from ..clouds.sdk import tencent, with_backoff
from ..clouds.sdk.tencent import credential as credential  # `catalog refresh` asks it before any progress bar
from ..clouds.sdk.tencent import CvmClient
from ..facts import Flag, ScopedFlag
from . import JsonObject
from .account_api import AccountApiSource
from .china import REGION as LIST_REGION
from .offer_row import OfferRow

SOURCE_KEY = "tencent-api"
DEFAULT_REGIONS = ("ap-guangzhou", "ap-shanghai", "ap-beijing")
# Per charge type, the row with its price in its column (on-demand per hour, spot per hour, one month ahead)
_PRICED: dict[str, Callable[[OfferRow, Decimal | None], OfferRow]] = {
    "POSTPAID_BY_HOUR": lambda row, price: replace(row, on_demand_hourly=price),
    "SPOTPAID": lambda row, price: replace(row, spot_hourly=price),
    "PREPAID": lambda row, price: replace(row, monthly=price)}
# ItemPrice's fields per charge type, what the account pays first: per hour after use, or one month paid ahead
_PRICE_FIELDS = {"POSTPAID_BY_HOUR": ("UnitPriceDiscount", "UnitPrice"), "SPOTPAID": ("UnitPriceDiscount", "UnitPrice"),
                 "PREPAID": ("DiscountPrice", "OriginalPrice")}


def _price(price: JsonObject, charge_type: str) -> Decimal | None:
    first, fallback = _PRICE_FIELDS[charge_type]
    value = price.get(first) or price.get(fallback)
    return Decimal(str(value)).normalize() if value else None


def _size(value: object) -> Decimal | None:
    """A count or size as the API gives it (`10`, `10.5`), written as it reads."""
    return Decimal(str(value)) if value not in (None, "") else None


class TencentPriceSource(AccountApiSource):
    """A PriceSource over Tencent Cloud's CVM API for some regions: on-demand, spot and monthly per zone, in CNY."""

    provider = "tencent"
    source = SOURCE_KEY

    def __init__(self, regions: Iterable[str], documented: dict[str, tuple[str, str]], *, today: dt.date,
                 client: Callable[[str], CvmClient] | None = None, sleep: Callable[[float], None] = time.sleep,
                 progress: Callable[[str, int, int], None] | None = None, retries: int = 4):
        super().__init__(regions, today=today, sleep=sleep, progress=progress, retries=retries)
        self.documented = documented  # instance family → (GPU name, memory per GPU), from the documented rows
        self.client = client or tencent.default_client

    def _call(self, client: CvmClient, charge_type: str) -> list[JsonObject]:
        """One DescribeZoneInstanceConfigInfos call, retried with backoff while throttled or the network fails."""
        params = {"Filters": [{"Name": "instance-charge-type", "Values": [charge_type]}]}
        try:
            answer = with_backoff(lambda: client.call_json("DescribeZoneInstanceConfigInfos", params),
                                  tencent.retryable, self.sleep, self.retries)
        except TencentCloudSDKException as error:
            raise tencent.refused(error, f"the {charge_type} prices") from None
        return list(answer["Response"].get("InstanceTypeQuotaSet", []))

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
            self._skip(f"family {family} not documented")
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
