"""AWS prices from the public price list files, no account: the EC2 bulk offer files and the Savings Plans files.

EC2: `…/offers/v1.0/aws/AmazonEC2/current/region_index.json` is `{"regions": {code: {"regionCode",
"currentVersionUrl"}}}`; each region's offer file is `{"products": {sku: {"productFamily", "attributes"}},
"terms": {"OnDemand"|"Reserved": {sku: {offerTermCode: {"priceDimensions", "termAttributes"}}}}}`, where a
Reserved term's dimensions are an hourly `Hrs` rate and an upfront `Quantity` fee. Savings Plans:
`…/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/region_index.json` is `{"regions": [{"regionCode",
"versionUrl"}]}`; each region file is `{"products": [{"sku", "productFamily": "ComputeSavingsPlans" |
"EC2InstanceSavingsPlans", "attributes": {"purchaseOption", …}}], "terms": {"savingsPlan": [{"sku",
"leaseContractLength": {"duration", "unit"}, "rates": [{"discountedSku", "discountedRate": {"price"}}]}]}}`.
A plan's rate is already its effective hourly (the commitment is what is paid, up front or not); a reserved
term's effective hourly is hourly + upfront ÷ term hours (`aws_api.reserved_rates`). `discountedSku` is the
on-demand product a rate discounts, which ties a plan rate to an instance type exactly.

The region files run to gigabytes: they are streamed with ijson (one pass; products precede terms) and only
Linux, shared-tenancy, used-capacity, no-software products of instance types the current aws.csv knows (its
GPU and accelerator types, which give the specs the price list lacks) are kept. The price list has no spot
prices and no zones: each type it prices in a refreshed region gets one row (spot blank) in place of that
type's per-zone rows there; other types and regions keep their rows. A row's `as_of` is its EC2 file's own
`publicationDate`, and `reserved_as_of` that of the file its reserved price came from (the EC2 file for a
reserved instance, the Savings Plans file for a plan), not the day of the refresh: a price is as old as its file.
"""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import ijson
import requests

from ..catalog.regions import location
from ..errors import CatalogError
from ..facts import Label
from . import JsonObject
from .aws_account import ReservedKey, cheapest_standard, on_demand_rate, reserved_rates
from .public import _get, _hourly, _progress, session
from .offer_row import OfferRow, read_rows

PRICING_URL = os.environ.get("GPU_ASSIST_AWS_PRICING_URL", "https://pricing.us-east-1.amazonaws.com")
EC2_INDEX = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
SAVINGS_PLAN_INDEX = "/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/region_index.json"
SOURCE_KEY = "aws-price-list"
_PLANS = {"ComputeSavingsPlans": "Compute Savings Plan", "EC2InstanceSavingsPlans": "EC2 Instance Savings Plan"}
# A Savings Plan rate's key: (years, purchase option, plan)
PlanKey = tuple[int, str, str]
_WANTED = {"operatingSystem": "Linux", "tenancy": "Shared", "capacitystatus": "Used", "preInstalledSw": "NA"}


def stream_members(chunks: Iterable[bytes], wanted: dict[str, Callable[[str], bool] | None],
                   ) -> Iterator[tuple[str, str | None, Any]]:
    """(prefix, key, value) for each member of the JSON objects or arrays at the `wanted` ijson prefixes, in
    one pass over `chunks` (bytes). `wanted[prefix]` is a predicate on a member's key (objects; arrays pass
    every item); members it rejects are skipped without being built."""
    events = ijson.sendable_list()
    parser = ijson.parse_coro(events)
    builder: Any = None  # ijson.ObjectBuilder (ijson is untyped)
    depth = 0
    current: tuple[str, str | None] = ("", None)  # (prefix, key) of the member being built
    for chunk in _then_end(chunks):
        if chunk is None:
            parser.close()
        else:
            parser.send(chunk)
        for prefix, event, value in events:
            if builder is None:
                accept = wanted.get(prefix)
                if event == "map_key" and accept is not None and accept(value):
                    current = (prefix, value)
                    builder, depth = ijson.ObjectBuilder(), 0
                    continue
                if event in ("start_map", "start_array") and prefix.endswith(".item") and prefix[:-5] in wanted:
                    current, builder, depth = (prefix[:-5], None), ijson.ObjectBuilder(), 0
                else:
                    continue
            builder.event(event, value)
            depth += {"start_map": 1, "start_array": 1, "end_map": -1, "end_array": -1}.get(event, 0)
            if depth == 0:
                yield current[0], current[1], builder.value
                builder = None
        del events[:]


def _then_end(chunks: Iterable[bytes]) -> Iterator[bytes | None]:
    yield from chunks
    yield None


def _chunks(http: requests.Session, url: str) -> Iterator[bytes]:
    """The body of `url` in 1 MiB chunks as they arrive; a connection that ends early raises CatalogError."""
    response = _get(http, url, stream=True)
    try:
        yield from response.iter_content(chunk_size=1 << 20)
    except requests.RequestException:
        raise CatalogError(f"{url}: the response ended early (truncated) (the catalog is unchanged)") from None


def _parsed(http: requests.Session, url: str, wanted: dict[str, Callable[[str], bool] | None],
            ) -> Iterator[tuple[str, str | None, Any]]:
    try:
        yield from stream_members(_chunks(http, url), wanted)
    except ijson.JSONError as error:
        raise CatalogError(f"{url}: not a complete price list file ({error}) (the catalog is unchanged)") from None


def region_urls(http: requests.Session, base: str, index: str, regions: list[str]) -> dict[str, str]:
    """region → absolute URL of its file, from an EC2 (object) or Savings Plans (array) region index."""
    body = _get(http, base + index)
    try:
        listed = body.json()["regions"]
        entries = listed.values() if isinstance(listed, dict) else listed
        urls = {e["regionCode"]: base + (e.get("currentVersionUrl") or e["versionUrl"]) for e in entries}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise CatalogError(f"{base + index}: not a price list region index (the catalog is unchanged)") from None
    missing = [r for r in regions if r not in urls]
    if missing:
        raise CatalogError(f"region '{missing[0]}' is not in the AWS price list {base + index}",
                           hint="known: " + ", ".join(sorted(urls)[:12]) + ", …")
    return {r: urls[r] for r in regions}


class AwsPublicPriceSource:
    """On-demand, reserved (1y/3y × upfront × class) and Savings Plans rates of the GPU/accelerator types in
    aws.csv, for some regions, from the public price list files."""

    provider = "aws"
    source = SOURCE_KEY

    def __init__(self, catalog_dir: Path, regions: list[str], http: requests.Session | None = None,
                 base_url: str = PRICING_URL):
        self.catalog_dir, self.regions, self.base = Path(catalog_dir), list(regions), base_url
        self.http = http or session()
        self.skipped: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.urls: list[str] = []
        self.priced: set[tuple[str, str]] = set()
        self.published: dict[str, str] = {}  # file URL → its publicationDate's day
        self.gp3: dict[str, tuple[Decimal, str]] = {}  # region → EBS gp3 USD per GB-month, its file's day

    def in_scope(self, row: OfferRow) -> bool:
        """An existing row this refresh replaces: an instance type it priced in that region (all its zones:
        the price list has none). `sources.refresh` asks only after `rows()` ran."""
        return (row.region, row.instance_type) in self.priced

    def _specs(self) -> dict[str, OfferRow]:
        return {row.instance_type: row for row in read_rows(self.catalog_dir / "aws.csv")}

    def rows(self) -> list[OfferRow]:
        specs = self._specs()
        ec2 = region_urls(self.http, self.base, EC2_INDEX, self.regions)
        plans = region_urls(self.http, self.base, SAVINGS_PLAN_INDEX, self.regions)
        rows: list[OfferRow] = []
        progress, task = _progress("AWS price list: region files", total=2 * len(self.regions))
        with progress:
            for region in self.regions:
                products, on_demand, reserved = self._offers(ec2[region], specs)
                progress.update(task, advance=1)
                if "gp3" in on_demand:
                    self.gp3[region] = (on_demand.pop("gp3"), self._published(ec2[region]))
                plan_rates = self._plans(plans[region], products)
                progress.update(task, advance=1)
                dates = (self._published(ec2[region]), self._published(plans[region]))
                rows += self._rows(region, specs, products, on_demand, reserved, plan_rates, dates)
        return rows

    def _published(self, url: str) -> str:
        if url not in self.published:
            raise CatalogError(f"{url}: no publicationDate, so no date for its prices (the catalog is unchanged)")
        return self.published[url]

    def _offers(self, url: str, specs: dict[str, OfferRow],
                ) -> tuple[dict[str, str], dict[str, Decimal], dict[str, dict[ReservedKey, Decimal]]]:
        self.urls.append(url)
        products: dict[str, str] = {}
        on_demand: dict[str, Decimal] = {}
        reserved: dict[str, dict[ReservedKey, Decimal]] = {}
        storage: set[str] = set()  # the EBS gp3 storage product's sku (the whole bill)
        wanted: dict[str, Callable[[str], bool] | None] = {"": _publication_date, "products": lambda sku: True,
                  "terms.OnDemand": lambda sku: sku in products or sku in storage,
                  "terms.Reserved": lambda sku: sku in products}
        for prefix, sku, value in _parsed(self.http, url, wanted):
            if sku is None:  # an array's item: none of these prefixes is an array
                continue
            if prefix == "":
                self.published[url] = _day(url, value)
            elif prefix == "products":
                attributes = value.get("attributes", {})
                if (value.get("productFamily") == "Compute Instance" and attributes.get("instanceType") in specs
                        and all(attributes.get(k) == v for k, v in _WANTED.items())):
                    products[sku] = attributes["instanceType"]
                    self.counts["products"] += 1
                elif value.get("productFamily") == "Storage" and attributes.get("volumeApiName") == "gp3":
                    storage.add(sku)
            elif prefix == "terms.OnDemand" and sku in storage:
                rate = gb_month_rate(value)
                if rate is not None:
                    on_demand["gp3"] = rate
            elif prefix == "terms.OnDemand":
                rate = on_demand_rate({"terms": {"OnDemand": value}})
                if rate is not None:
                    on_demand[sku] = rate
            else:
                reserved[sku] = reserved_rates({"terms": {"Reserved": value}})
                self.counts["reserved terms"] += len(reserved[sku])
        return products, on_demand, reserved

    def _plans(self, url: str, products: dict[str, str]) -> dict[str, dict[PlanKey, Decimal]]:
        """on-demand sku → {(years, purchase option, plan): hourly rate}."""
        self.urls.append(url)
        kinds: dict[str, tuple[str, str]] = {}
        rates: dict[str, dict[PlanKey, Decimal]] = {}
        wanted: dict[str, Callable[[str], bool] | None] = {"": _publication_date, "products": None,
                                                            "terms.savingsPlan": None}
        for prefix, _, value in _parsed(self.http, url, wanted):
            if prefix == "":
                self.published[url] = _day(url, value)
                continue
            if prefix == "products":
                if value.get("productFamily") in _PLANS:
                    kinds[value["sku"]] = (_PLANS[value["productFamily"]],
                                           value.get("attributes", {}).get("purchaseOption", ""))
                continue
            plan = kinds.get(value.get("sku"))
            length = value.get("leaseContractLength", {})
            if plan is None or length.get("unit") != "year":
                continue
            years = int(length["duration"])
            for rate in value.get("rates", []):
                if rate.get("discountedSku") in products:
                    rates.setdefault(rate["discountedSku"], {})[(years, plan[1], plan[0])] = \
                        Decimal(str(rate["discountedRate"]["price"]))
                    self.counts["savings plan rates"] += 1
        return rates

    def _rows(self, region: str, specs: dict[str, OfferRow], products: dict[str, str],
              on_demand: dict[str, Decimal], reserved: dict[str, dict[ReservedKey, Decimal]],
              plan_rates: dict[str, dict[PlanKey, Decimal]], dates: tuple[str, str]) -> Iterator[OfferRow]:
        """One row per priced type; `dates` are the EC2 and Savings Plans files' publication days."""
        country, continent = location("aws", region)
        for sku, instance_type in sorted(products.items(), key=lambda item: item[1]):
            if sku not in on_demand:
                self.skipped["no on-demand price"] += 1
                continue
            self.priced.add((region, instance_type))
            spec = specs[instance_type]
            terms: dict[int, Decimal] = {}
            details: list[str] = []
            reserved_dates: set[str] = set()
            for years in (1, 3):
                found = _cheapest_reserved(reserved.get(sku, {}), years)
                found_date = dates[0]
                if not found:
                    found, found_date = _cheapest_plan(plan_rates.get(sku, {}), years), dates[1]
                if found:
                    terms[years] = Decimal(_hourly(found[0]))
                    details.append(f"reserved {years}y: {found[1]}")
                    reserved_dates.add(found_date)
            notes = tuple(Label(f"reserved_{y}y", f"{option} {plan}: ${_hourly(rate)}/h")
                          for (y, option, plan), rate in sorted(plan_rates.get(sku, {}).items()))
            yield OfferRow(
                provider="aws", region=region, instance_type=spec.instance_type, gpu=spec.gpu,
                gpu_count=spec.gpu_count, gpu_memory_gib=spec.gpu_memory_gib, vcpus=spec.vcpus,
                memory_gib=spec.memory_gib, interconnect=spec.interconnect, currency="USD",
                on_demand_hourly=Decimal(_hourly(on_demand[sku])), reserved_1y_hourly=terms.get(1),
                reserved_3y_hourly=terms.get(3), billing_granularity_s=1, source=SOURCE_KEY,
                as_of=dt.date.fromisoformat(dates[0]), verified=True,
                source_detail="; ".join(["AWS public price list", *details]), country=country, continent=continent,
                notes=notes, reserved_source=SOURCE_KEY if terms else "",
                # the older, when the terms' files differ
                reserved_as_of=dt.date.fromisoformat(min(reserved_dates)) if terms else None)


def gb_month_rate(terms: JsonObject) -> Decimal | None:
    """The USD price per GB-month of a storage product's OnDemand terms (`unit` GB-Mo)."""
    for term in terms.values():
        for dimension in term.get("priceDimensions", {}).values():
            if dimension.get("unit") == "GB-Mo":
                return Decimal(dimension["pricePerUnit"]["USD"])
    return None


def data_price_rows(gp3: dict[str, tuple[Decimal, str]]) -> list[dict[str, str]]:
    """`data_prices.csv` rows (the whole bill) for the EBS gp3 prices a refresh read: one `block` row per region."""
    return [{"provider": "aws", "region": region, "item": "block", "unit": "GB", "price": f"{price.normalize():f}",
             "currency": "USD", "up_to": "", "source": SOURCE_KEY, "as_of": day, "verified": "yes"}
            for region, (price, day) in sorted(gp3.items())]


def _publication_date(key: str) -> bool:
    return key == "publicationDate"


def _day(url: str, published: object) -> str:
    """The day of a price list's `publicationDate` (`2026-12-01T00:00:00Z` → 2026-12-01)."""
    try:
        return dt.date.fromisoformat(str(published)[:10]).isoformat()
    except ValueError:
        raise CatalogError(f"{url}: publicationDate '{published}' is not a date (the catalog is unchanged)") \
            from None


def _cheapest_reserved(rates: dict[ReservedKey, Decimal], years: int) -> tuple[Decimal, str] | None:
    found = cheapest_standard(rates, years)
    return (found[0], f"standard reserved instance, {found[1]}") if found else None


def _cheapest_plan(rates: dict[PlanKey, Decimal], years: int) -> tuple[Decimal, str] | None:
    """The cheapest Savings Plan rate of a term, for types no standard reserved instance prices."""
    term = {k: v for k, v in rates.items() if k[0] == years}
    if not term:
        return None
    key = min(term, key=lambda k: term[k])
    return term[key], f"{key[2]} {key[1]}"
