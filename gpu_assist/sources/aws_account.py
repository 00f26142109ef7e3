"""AWS's own APIs → offer rows: specs and GPUs (DescribeInstanceTypes), zones (DescribeInstanceTypeOfferings),
spot (DescribeSpotPriceHistory, latest per zone, Linux/UNIX), on-demand and reserved (Pricing GetProducts).

Reserved terms become effective hourly rates: hourly + upfront / (years × 8760), for every
LeaseContractLength × PurchaseOption × OfferingClass; the catalog's `reserved_1y_hourly` / `reserved_3y_hourly`
hold the cheapest *standard* rate of each term, with its purchase option in `source_detail`.
Pricing is served from us-east-1 (also eu-central-1, ap-south-1); `PriceList` items arrive as JSON strings.
moto has no Pricing API: tests drive the real parsing with the recorded GetProducts response in
tests/fixtures/aws/ through botocore's Stubber.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any, Protocol

from ..catalog.gpus import GpuTable
from ..clouds.sdk import aws
from ..facts import parse_flags
from . import JsonObject, interconnect, spot_flags
from .offer_row import OfferRow

SOURCE_KEY = "aws-api"
DEFAULT_FAMILIES = ("p*", "g*")
PRICING_REGION = "us-east-1"
_YEARS = {"1yr": 1, "3yr": 3}
# A reserved rate's key: (years, purchase option, offering class), as the price list names them
ReservedKey = tuple[int, str, str]


class Paginator(Protocol):
    def paginate(self, **kwargs: Any) -> Iterable[JsonObject]: ...


class AwsClient(Protocol):
    """What the refresh calls of a boto3 client (boto3 has no types of its own here)."""

    def get_paginator(self, _operation_name: str, /) -> Paginator: ...


def on_demand_rate(item: JsonObject) -> Decimal | None:
    """The hourly USD price of a price-list item's OnDemand term."""
    for term in item.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term["priceDimensions"].values():
            if dimension.get("unit") == "Hrs":
                return Decimal(dimension["pricePerUnit"]["USD"])
    return None


def reserved_rates(item: JsonObject) -> dict[ReservedKey, Decimal]:
    """(years, purchase option, offering class) → effective hourly: hourly + upfront / (years × 8760)."""
    rates: dict[ReservedKey, Decimal] = {}
    for term in item.get("terms", {}).get("Reserved", {}).values():
        attributes = term.get("termAttributes", {})
        years = _YEARS.get(attributes.get("LeaseContractLength", ""))
        if years is None:
            continue
        hourly, upfront = Decimal(0), Decimal(0)
        for dimension in term["priceDimensions"].values():
            price = Decimal(dimension["pricePerUnit"]["USD"])
            if dimension.get("unit") == "Hrs":
                hourly += price
            elif dimension.get("unit") == "Quantity":
                upfront += price
        rates[(years, attributes.get("PurchaseOption", ""), attributes.get("OfferingClass", ""))] = \
            hourly + upfront / (years * 8760)
    return rates


def cheapest_standard(rates: dict[ReservedKey, Decimal], years: int) -> tuple[Decimal, str] | None:
    standard = {k: v for k, v in rates.items() if k[0] == years and k[2] == "standard"}
    if not standard:
        return None
    key = min(standard, key=lambda k: standard[k])
    return standard[key], key[1]


def latest_spot_prices(history: list[JsonObject]) -> dict[tuple[str, str], Decimal]:
    """(instance type, zone) → the newest spot price in a DescribeSpotPriceHistory result."""
    newest: dict[tuple[str, str], tuple[dt.datetime, Decimal]] = {}
    for entry in history:
        key = (entry["InstanceType"], entry["AvailabilityZone"])
        stamp = entry["Timestamp"]
        stamp = stamp if isinstance(stamp, dt.datetime) else dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        if key not in newest or stamp > newest[key][0]:
            newest[key] = (stamp, Decimal(entry["SpotPrice"]))
    return {key: value[1] for key, value in newest.items()}


def gpu_instance_types(instance_types: list[JsonObject], gpus: GpuTable) -> dict[str, dict[str, str]]:
    """instance type → specs, for the types with a GPU gpu-assist knows (DescribeInstanceTypes items)."""
    found: dict[str, dict[str, str]] = {}
    for item in instance_types:
        info = item.get("GpuInfo")
        if not info or not info.get("Gpus"):
            continue
        gpu = info["Gpus"][0]
        memory_gib = gpu.get("MemoryInfo", {}).get("SizeInMiB", 0) / 1024
        spec = gpus.find(gpu["Name"])
        if spec is None:
            continue
        if abs(spec.memory_gib - memory_gib) > 2:  # e.g. A100 with 80 GB → A100-80GB
            spec = next((s for s in gpus.family(spec) if abs(s.memory_gib - memory_gib) <= 2), spec)
        found[item["InstanceType"]] = {
            "gpu": spec.name, "gpu_count": str(sum(int(g.get("Count", 0)) for g in info["Gpus"])),
            "gpu_memory_gib": str(round(memory_gib, 2)), "vcpus": str(item["VCpuInfo"]["DefaultVCpus"]),
            "memory_gib": str(round(item["MemoryInfo"]["SizeInMiB"] / 1024, 2)),
        }
    return found


class AwsPriceSource:
    """A PriceSource over the live AWS APIs for some regions and instance families."""

    provider = "aws"
    source = SOURCE_KEY

    def __init__(self, regions: list[str], gpus: GpuTable, *, families: tuple[str, ...] = DEFAULT_FAMILIES,
                 today: dt.date, client: Callable[[str, str], AwsClient] = aws.client,
                 pricing_client: AwsClient | None = None, progress: Callable[[str], None] | None = None):
        self.regions = list(regions)
        self.gpus = gpus
        self.families = tuple(f if "*" in f else f"{f}.*" for f in families)
        self.today = today
        self.client = client
        self.pricing = pricing_client
        self.progress = progress or (lambda message: print(message, file=sys.stderr, flush=True))
        self.skipped: dict[str, int] = {}

    def in_scope(self, row: OfferRow) -> bool:
        """Whether an existing catalog row is one this refresh replaces."""
        return row.region in self.regions and any(fnmatch.fnmatchcase(row.instance_type, f) for f in self.families)

    def _pages(self, client: AwsClient, operation: str, key: str, **kwargs: Any) -> list[Any]:
        items: list[Any] = []
        for page in client.get_paginator(operation).paginate(**kwargs):
            items.extend(page[key])
        return items

    def _prices(self, instance_type: str, region: str) -> JsonObject | None:
        pricing = self.pricing or self.client("pricing", PRICING_REGION)
        filters = [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in (
            ("instanceType", instance_type), ("regionCode", region), ("operatingSystem", "Linux"),
            ("tenancy", "Shared"), ("capacitystatus", "Used"), ("preInstalledSw", "NA"))]
        items: list[JsonObject] = [json.loads(text) for text in self._pages(pricing, "get_products", "PriceList",
                                                          ServiceCode="AmazonEC2", Filters=filters)]
        return items[0] if items else None

    def rows(self) -> list[OfferRow]:
        """Raises botocore's errors as they come: `sources.refresh` then keeps the previous file."""
        rows: list[OfferRow] = []
        for number, region in enumerate(self.regions, 1):
            ec2 = self.client("ec2", region)
            types = gpu_instance_types(self._pages(ec2, "describe_instance_types", "InstanceTypes", Filters=[
                {"Name": "instance-type", "Values": list(self.families)}]), self.gpus)
            self.progress(f"[{number}/{len(self.regions)}] {region}: {len(types)} GPU instance types")
            if not types:
                continue
            zones: dict[str, list[str]] = defaultdict(list)
            for offering in self._pages(ec2, "describe_instance_type_offerings", "InstanceTypeOfferings",
                                        LocationType="availability-zone",
                                        Filters=[{"Name": "instance-type", "Values": sorted(types)}]):
                zones[offering["InstanceType"]].append(offering["Location"])
            spot = latest_spot_prices(self._pages(
                ec2, "describe_spot_price_history", "SpotPriceHistory", InstanceTypes=sorted(types),
                ProductDescriptions=["Linux/UNIX"],
                StartTime=dt.datetime.combine(self.today, dt.time(), tzinfo=dt.timezone.utc)))
            for instance_type, specs in sorted(types.items()):
                item = self._prices(instance_type, region)
                on_demand = on_demand_rate(item) if item else None
                reserved = reserved_rates(item) if item else {}
                one, three = cheapest_standard(reserved, 1), cheapest_standard(reserved, 3)
                detail = "; ".join(f"reserved {y}y: standard {option}" for y, found in ((1, one), (3, three))
                                   if found for option in [found[1]])
                for zone in sorted(zones.get(instance_type, [])) or [""]:
                    spot_price = spot.get((instance_type, zone))
                    od, sp = _text(on_demand), _text(spot_price)
                    if not (od or sp):
                        self.skipped["no price"] = self.skipped.get("no price", 0) + 1
                        continue
                    rows.append(OfferRow(
                        provider="aws", region=region, zone=zone, instance_type=instance_type, gpu=specs["gpu"],
                        gpu_count=Decimal(specs["gpu_count"]), gpu_memory_gib=Decimal(specs["gpu_memory_gib"]),
                        vcpus=Decimal(specs["vcpus"]), memory_gib=Decimal(specs["memory_gib"]),
                        interconnect=interconnect(instance_type), currency="USD", on_demand_hourly=_price(od),
                        spot_hourly=_price(sp), reserved_1y_hourly=_price(_text(one[0] if one else None)),
                        reserved_3y_hourly=_price(_text(three[0] if three else None)), billing_granularity_s=1,
                        source=SOURCE_KEY, as_of=self.today, verified=True,
                        flags=parse_flags(";".join(spot_flags(od, sp))), source_detail=detail))
        return rows


def _price(text: str) -> Decimal | None:
    return Decimal(text) if text else None


def _text(value: Decimal | None) -> str:
    """A price with at most 6 decimals (the catalog's precision), rounded half-even."""
    if value is None:
        return ""
    return format(value.quantize(Decimal("0.000001")).normalize(), "f")
