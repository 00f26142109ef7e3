"""GCP prices from Google's own Cloud Billing Catalog API (v1), through Google's client over its REST transport.

`services/6F81-5844-456A/skus` (Compute Engine) lists every SKU with its category (resource family and group, usage
type), the regions it is sold in and its hourly unit price. A GPU machine's price is built as SkyPilot's GCP fetcher
(`sky/catalog/data_fetchers/fetch_gcp.py`) builds it: vCPUs × the series' core SKU + GiB × its RAM SKU (the SKU whose
description names the series, `SERIES`; of several, the last) + GPUs × the GPU's SKU (the first whose description
names it, `GPU_SKUS`), in the same region; usage type `OnDemand` gives on-demand, `Preemptible` spot, and
`Commit1Yr`/`Commit3Yr` the resource-based committed-use prices ("Commitment v1: …", already hourly). Pruned as that
fetcher prunes (not Compute, custom, premium, reserved, sole tenancy), and also every Dynamic Workload Scheduler SKU
(DWS, Defined Duration, Calendar Mode, Flex-start): those carry usage type OnDemand but are queued, time-boxed
capacity, the rates `sanity.py` rule c catches in SkyPilot's catalog. The machines priced are those gcp.csv knows
(vCPUs, memory, GPU and count from it; the price list has no machine specs), one row per machine and region, with no
zone: the billing catalog prices regions. Local SSD that some machines bundle is left out, as SkyPilot does.

Credentials: an API key (`GPU_ASSIST_GCP_API_KEY`), else application-default credentials; off GCP google-auth is
told not to probe the metadata server (`NO_GCE_CHECK`, docs/security.md).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import warnings
from collections.abc import Iterable, Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from ..catalog.regions import location
from ..errors import CatalogError
from ..facts import parse_flags
from ..host.cloud_host import metadata_allowed
from . import spot_flags
from .offer_row import OfferRow, read_rows

SOURCE_KEY = "gcp-billing"
COMPUTE_SERVICE = "services/6F81-5844-456A"
API_KEY_VARIABLE = "GPU_ASSIST_GCP_API_KEY"
# Machine series → the words its core and RAM SKUs' descriptions carry (fetch_gcp.py's SERIES_TO_DESCRIPTION).
SERIES = {"a2": "A2 Instance", "a3": "A3 Instance", "a4": "A4 Instance", "g2": "G2 Instance"}
# gpus.csv name → the words its SKU's description carries (fetch_gcp.py's get_gpu_price).
GPU_SKUS = {"A100": "A100 GPU", "A100-80GB": "A100 80GB GPU", "H100": "H100 80GB GPU",
            "H100-MEGA": "H100 80GB Mega GPU", "H200": "H200 141GB GPU", "B200": "B200 (1 gpu slice)", "L4": "L4 GPU"}
_PRUNED = ("custom", "premium", "reserved", "sole tenancy", "dws", "defined duration", "calendar mode", "flex")
# usage type → the catalog column it prices
_COLUMNS = {"OnDemand": "on_demand_hourly", "Preemptible": "spot_hourly", "Commit1Yr": "reserved_1y_hourly",
            "Commit3Yr": "reserved_3y_hourly"}
_MICRO = Decimal("0.000001")


@contextlib.contextmanager
def _quiet_imports() -> Iterator[None]:
    """Google's libraries warn when imported that this Python version will lose their support (a FutureWarning,
    from a date on): the user asked for prices, and the warning says nothing about them."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"google\.")
        yield


def catalog_client(*, api_key: str | None = None, endpoint: str | None = None, credentials: Any = None) -> Any:
    """Google's CloudCatalogClient over REST: with `api_key`, else `credentials`, else application-default
    credentials; `endpoint` (`http://127.0.0.1:8080` in tests) else Google's."""
    if not metadata_allowed("gcp"):  # before google.auth is imported: it would ping metadata.google.internal first
        os.environ.setdefault("NO_GCE_CHECK", "true")
    with _quiet_imports():
        from google.api_core.client_options import ClientOptions
        from google.cloud import billing_v1

    options = ClientOptions(api_endpoint=endpoint, api_key=api_key)
    return billing_v1.CloudCatalogClient(transport="rest", client_options=options, credentials=credentials)


def default_client() -> Any:
    """The client a user's `catalog refresh gcp` uses: their API key if set, else their ADC."""
    with _quiet_imports():
        import google.auth.exceptions

    try:
        return catalog_client(api_key=os.environ.get(API_KEY_VARIABLE) or None)
    except google.auth.exceptions.DefaultCredentialsError:
        raise CatalogError(f"no GCP credentials: set {API_KEY_VARIABLE} or application-default credentials") \
            from None


def skus(client: Any) -> list[Any]:
    """Every Compute Engine SKU, following pages; any failure is a CatalogError and nothing is written."""
    with _quiet_imports():
        from google.api_core import exceptions, retry

    # Google's generated client retries nothing by default: a throttled or unavailable page is asked again,
    # 0.5 s, then twice as long, for at most a minute
    again = retry.Retry(predicate=retry.if_exception_type(exceptions.TooManyRequests, exceptions.ServiceUnavailable),
                        initial=0.5, multiplier=2.0, maximum=8.0, timeout=60.0)
    try:
        return list(client.list_skus(request={"parent": COMPUTE_SERVICE, "currency_code": "USD"}, retry=again))
    except exceptions.GoogleAPIError as error:
        reason = getattr(error, "message", "") or type(error).__name__
        raise CatalogError(f"Cloud Billing Catalog API: {reason} (the catalog is unchanged)") from None


def unit_price(sku: Any) -> Decimal:
    """The SKU's first tiered rate, in USD per unit (hour, or GiB-hour)."""
    money = sku.pricing_info[0].pricing_expression.tiered_rates[0].unit_price
    return Decimal(money.units) + Decimal(money.nanos).scaleb(-9)


# (part, usage type, region) → price; a part is ("core"|"ram", series) or ("gpu", gpus.csv name)
Rates = dict[tuple[tuple[str, str], str, str], Decimal]


def rates(listed: Iterable[Any]) -> Rates:
    """The unit prices the machines are built from, by part, usage type and region."""
    found: Rates = {}
    for sku in listed:
        category, words = sku.category, sku.description.lower()
        if (category.resource_family != "Compute" or category.usage_type not in _COLUMNS
                or any(p in words for p in _PRUNED) or not sku.pricing_info):
            continue
        for part, last_wins in _parts(category.resource_group, sku.description):
            for region in sku.service_regions:
                key = (part, category.usage_type, region)
                if last_wins or key not in found:
                    found[key] = unit_price(sku)
    return found


def _parts(group: str, description: str) -> Iterator[tuple[tuple[str, str], bool]]:
    words = description.lower()
    if group == "GPU":
        yield from ((("gpu", gpu), False) for gpu, said in GPU_SKUS.items() if said.lower() in words)
    elif group in ("CPU", "RAM"):
        for series, said in SERIES.items():
            if said.lower() in words or f"commitment v1: {said.split()[0].lower()} " in words:
                yield ("core" if group == "CPU" else "ram", series), True


class GcpBillingSource:
    """GCP on-demand, spot and committed-use prices of the GPU machines gcp.csv knows, per region, from the
    Cloud Billing Catalog (a `refresh.PriceSource` refreshing the machines and regions it prices)."""

    provider = "gcp"
    source = SOURCE_KEY

    def __init__(self, catalog_dir: Path, today: dt.date, client: Any):
        self.catalog_dir, self.today, self.client = Path(catalog_dir), today, client
        self.skipped: dict[str, int] = {}
        self._priced: set[tuple[str, str]] = set()

    def rows(self) -> list[OfferRow]:
        found = rates(skus(self.client))
        machines = {(row.instance_type, row.region): row for row in read_rows(self.catalog_dir / "gcp.csv")}
        rows = [row for key, spec in sorted(machines.items()) if (row := self._row(spec, found)) is not None]
        self._priced = {(row.instance_type, row.region) for row in rows}
        return rows

    def in_scope(self, row: OfferRow) -> bool:
        """A row this refresh replaces: a machine and region it priced (every zone of it)."""
        return (row.instance_type, row.region) in self._priced

    def _row(self, spec: OfferRow, found: Rates) -> OfferRow | None:
        series = spec.instance_type.split("-")[0]
        if series not in SERIES or spec.vcpus is None or spec.memory_gib is None:
            self._skip("not a priced GPU series, or no vCPU/memory in gcp.csv")
            return None
        parts = {("core", series): spec.vcpus, ("ram", series): spec.memory_gib, ("gpu", spec.gpu): spec.gpu_count}
        prices: dict[str, Decimal] = {}
        for usage, column in _COLUMNS.items():
            amounts = [found.get((part, usage, spec.region)) for part in parts]
            if all(amount is not None for amount in amounts):
                total = sum((quantity * amount for quantity, amount in zip(parts.values(), amounts) if amount),
                            Decimal(0))
                prices[column] = total.quantize(_MICRO, rounding=ROUND_HALF_UP).normalize()
        if "on_demand_hourly" not in prices and "spot_hourly" not in prices:
            self._skip("a part (core, RAM or GPU) has no SKU in the region")
            return None
        country, continent = location("gcp", spec.region)
        on_demand, spot = prices.get("on_demand_hourly"), prices.get("spot_hourly")
        flags = spot_flags(_text(on_demand), _text(spot))
        return OfferRow(
            provider="gcp", region=spec.region, instance_type=spec.instance_type, gpu=spec.gpu,
            gpu_count=spec.gpu_count, gpu_memory_gib=spec.gpu_memory_gib, vcpus=spec.vcpus, memory_gib=spec.memory_gib,
            interconnect=spec.interconnect, currency="USD", on_demand_hourly=on_demand, spot_hourly=spot,
            reserved_1y_hourly=prices.get("reserved_1y_hourly"), reserved_3y_hourly=prices.get("reserved_3y_hourly"),
            billing_granularity_s=1, source=SOURCE_KEY, as_of=self.today, imported=self.today, verified=True,
            flags=parse_flags(";".join(flags)), source_detail=f"Cloud Billing Catalog API v1 {self.today.isoformat()}",
            country=country, continent=continent)

    def _skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _text(price: Decimal | None) -> str:
    return "" if price is None else format(price, "f")

