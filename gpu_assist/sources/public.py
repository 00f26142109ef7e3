"""Refreshes from public price lists, no account needed: the Azure Retail Prices API and SkyPilot's catalog
CSVs at a pinned commit.

Every download goes through one `requests.Session` whose adapter retries connection errors and 429/5xx answers
with exponential backoff (urllib3's `Retry`), shows a rich progress bar on stderr for multi-page work, and
fails with a `CatalogError` naming the URL. Nothing is written until every page or file has arrived and the
rows validate (`sources.refresh` then replaces each file by an atomic rename), so a dead endpoint, a 500
mid-way or a truncated file leaves the catalog exactly as it was.

Azure: `GET https://prices.azure.com/api/retail/prices?$filter=…` returns `{"Items": [...], "NextPageLink": …}`
pages. Items of `type` Consumption are on-demand (`skuName` ending in "Spot" is spot; "Low Priority" and Windows
items are skipped); `type` Reservation items price a whole `reservationTerm` ("1 Year", "3 Years"), so their
effective hourly is price ÷ (years × 8760). GPU and host specs of each VM size come from the current azure.csv
(the price list has none); sizes it does not know are counted as skipped.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import os
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import requests
from requests.adapters import HTTPAdapter
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from urllib3.util.retry import Retry

from ..catalog.gpus import load_gpus
from ..catalog.providers import REGISTRY
from ..catalog.regions import location
from ..errors import CatalogError
from ..facts import parse_flags
from . import JsonObject, spot_flags
from .offer_row import OfferRow, read_rows
from .refresh import CountingSource, refresh
from .skypilot import SkyPilotSource

AZURE_PRICES_URL = os.environ.get("GPU_ASSIST_AZURE_PRICES_URL", "https://prices.azure.com/api/retail/prices")
# GPU sizes are the N series (NC, ND, NV, NG, NCC); the price list cannot filter on a prefix server-side reliably,
# so the query narrows to Linux-relevant VM meters and the rest is filtered here.
AZURE_FILTER = "serviceName eq 'Virtual Machines' and contains(armSkuName, 'Standard_N')"
AZURE_API_VERSION = "2023-01-01-preview"
SKYPILOT_RAW_URL = os.environ.get("GPU_ASSIST_SKYPILOT_URL",
                                  "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog")
# GitHub's REST API ("Get a commit", API version 2022-11-28): the catalog commit's date is the day its prices were
# observed (the catalog's fetchers commit what they read).
GITHUB_API_URL = os.environ.get("GPU_ASSIST_GITHUB_API_URL", "https://api.github.com")
SKYPILOT_REPOSITORY = "skypilot-org/skypilot-catalog"
# Where each cloud's vms.csv lives in skypilot-catalog (Azure's GPU rows are in v6; see SOURCES.txt).
SKYPILOT_PATHS = {p.name: f"catalogs/v{6 if p.name == 'azure' else 8}/{p.name}/vms.csv"
                  for p in REGISTRY if p.skypilot}
_YEARS = {"1 Year": 1, "3 Years": 3}
_MICRO = Decimal("0.000001")
TIMEOUT_S = 30


def session(retries: int = 4, backoff_s: float = 0.5) -> requests.Session:
    """A requests session retrying connection errors and 429/500/502/503/504 with exponential backoff."""
    retry = Retry(total=retries, connect=retries, read=retries, status=retries, backoff_factor=backoff_s,
                  status_forcelist=(429, 500, 502, 503, 504), allowed_methods=("GET",), raise_on_status=True)
    http = requests.Session()
    http.mount("http://", HTTPAdapter(max_retries=retry))
    http.mount("https://", HTTPAdapter(max_retries=retry))
    return http


def _get(http: requests.Session, url: str, *, stream: bool = False,
         params: dict[str, str] | None = None) -> requests.Response:
    try:
        response = http.get(url, params=params, timeout=TIMEOUT_S, stream=stream)
        response.raise_for_status()
        return response
    except requests.RequestException as error:
        raise CatalogError(f"cannot fetch {url}: {_reason(error)} (the catalog is unchanged)") from None


def _reason(error: requests.RequestException) -> str:
    """One short line for a requests failure (its own text repeats the whole URL and the retry state)."""
    if isinstance(error, requests.exceptions.RetryError):
        return "server errors on every retry"
    if isinstance(error, requests.exceptions.HTTPError):
        return f"HTTP {error.response.status_code}"
    if isinstance(error, requests.exceptions.ConnectionError) and "IncompleteRead" not in str(error):
        return "connection failed after retries"
    if isinstance(error, (requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError)):
        return "the response ended early (truncated)"
    return type(error).__name__


def _progress(description: str, total: int | None = None) -> tuple[Progress, TaskID]:
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        console=Console(stderr=True), transient=True)
    return progress, progress.add_task(description, total=total)


def azure_items(http: requests.Session, url: str = AZURE_PRICES_URL,
                filter_text: str = AZURE_FILTER) -> list[JsonObject]:
    """Every item of every page, following NextPageLink; a failed page fails the whole fetch."""
    items: list[JsonObject] = []
    page = 0
    progress, task = _progress("Azure retail prices: pages")
    with progress:
        response = _get(http, url, params={"$filter": filter_text, "api-version": AZURE_API_VERSION,
                                           "currencyCode": "USD"})
        while True:
            try:
                body = response.json()
                items.extend(body["Items"])
            except (ValueError, KeyError, TypeError):
                raise CatalogError(f"{response.url}: not an Azure retail prices page (the catalog is unchanged)") \
                    from None
            page += 1
            progress.update(task, completed=page)
            next_link = body.get("NextPageLink")
            if not next_link:
                return items
            response = _get(http, next_link)


def _hourly(value: Decimal) -> str:
    return format(value.quantize(_MICRO, rounding=ROUND_HALF_UP).normalize(), "f")


def _text(price: Decimal | None) -> str:
    return "" if price is None else format(price, "f")


def effective_hourly(price: Decimal, years: int) -> Decimal:
    """A reservation's effective hourly rate: the term's price spread over its hours."""
    return price / (years * 8760)


class AzureRetailSource:
    """Azure on-demand, spot and 1y/3y reservation prices of the GPU sizes the current azure.csv knows."""

    provider = "azure"
    source = "azure-retail"

    def __init__(self, catalog_dir: Path, today: dt.date, http: requests.Session | None = None,
                 url: str = AZURE_PRICES_URL):
        self.catalog_dir, self.today, self.url = Path(catalog_dir), today, url
        self.http = http or session()
        self.skipped: Counter[str] = Counter()

    def _specs(self) -> dict[str, OfferRow]:
        path = self.catalog_dir / "azure.csv"
        if not path.exists():
            return {}
        return {row.instance_type: row for row in read_rows(path)}

    def rows(self) -> Iterator[OfferRow]:
        specs = self._specs()
        prices: dict[tuple[str, str], dict[str, Decimal]] = defaultdict(dict)
        for item in azure_items(self.http, self.url):
            column = self._column(item)
            if column is None:
                continue
            size, region = item.get("armSkuName", ""), item.get("armRegionName", "")
            if size not in specs:
                self.skipped["size not in azure.csv (no GPU spec)"] += 1
                continue
            price = Decimal(str(item["retailPrice"]))
            if column.startswith("reserved"):
                price = effective_hourly(price, _YEARS[item["reservationTerm"]])
            # Several meters may price one size (regional duplicates): keep the cheapest.
            slot = prices[(size, region)]
            slot[column] = min(price, slot.get(column, price))
        for (size, region), found in sorted(prices.items()):
            spec = specs[size]
            if "on_demand_hourly" not in found and "spot_hourly" not in found:
                self.skipped["reservation only, no on-demand or spot price"] += 1
                continue
            yield self._offer(spec, region, {column: Decimal(_hourly(value)) for column, value in found.items()})

    def _offer(self, spec: OfferRow, region: str, hourly: dict[str, Decimal]) -> OfferRow:
        """A size's row in `region` at these prices (column → price), its spec from azure.csv."""
        country, continent = location("azure", region)
        on_demand, spot = hourly.get("on_demand_hourly"), hourly.get("spot_hourly")
        spot_defects = parse_flags(";".join(spot_flags(_text(on_demand), _text(spot))))
        return OfferRow(
            provider="azure", region=region, instance_type=spec.instance_type, gpu=spec.gpu,
            gpu_count=spec.gpu_count, gpu_memory_gib=spec.gpu_memory_gib, vcpus=spec.vcpus,
            memory_gib=spec.memory_gib, interconnect=spec.interconnect, currency="USD", on_demand_hourly=on_demand,
            spot_hourly=spot, reserved_1y_hourly=hourly.get("reserved_1y_hourly"),
            reserved_3y_hourly=hourly.get("reserved_3y_hourly"), billing_granularity_s=60, source=self.source,
            as_of=self.today, imported=self.today, verified=True,
            flags=(*(f for f in spec.flags if f.scope == "all"), *spot_defects),
            source_detail=f"Azure Retail Prices API {self.today.isoformat()}", country=country, continent=continent)

    def _column(self, item: JsonObject) -> str | None:
        """Which catalog column an item prices, or None (Windows, Low Priority, DevTest, non-hourly)."""
        name = f"{item.get('skuName', '')} {item.get('productName', '')}"
        if "Windows" in name or "Low Priority" in name or item.get("unitOfMeasure") != "1 Hour":
            self.skipped["not a Linux hourly price"] += 1
            return None
        if item.get("type") == "Reservation":
            years = _YEARS.get(item.get("reservationTerm", ""))
            return f"reserved_{years}y_hourly" if years else None
        if item.get("type") == "Consumption":
            return "spot_hourly" if item.get("skuName", "").endswith("Spot") else "on_demand_hourly"
        self.skipped[f"price type {item.get('type')}"] += 1
        return None


def download_skypilot(commit: str, providers: Sequence[str], directory: Path, http: requests.Session | None = None,
                      base_url: str = SKYPILOT_RAW_URL) -> dict[str, tuple[str, str, int]]:
    """Each provider's vms.csv at `commit` into `directory` as <provider>_gpu.csv; returns
    {provider: (url, sha256, rows)}. Any failure (dead endpoint, HTTP error, truncated body) raises before
    anything in the catalog is touched."""
    http = http or session()
    fetched: dict[str, tuple[str, str, int]] = {}
    progress, task = _progress(f"skypilot-catalog {commit[:12]}: files", total=len(providers))
    with progress:
        for provider in providers:
            url = f"{base_url}/{commit}/{SKYPILOT_PATHS[provider]}"
            body = _get(http, url).content
            text = body.decode("utf-8")
            rows = list(csv.reader(text.splitlines()))
            if not rows or any(len(r) != len(rows[0]) for r in rows[1:] if r):
                raise CatalogError(f"{url}: truncated or malformed CSV (the catalog is unchanged)")
            (Path(directory) / f"{provider}_gpu.csv").write_bytes(body)
            fetched[provider] = (url, hashlib.sha256(body).hexdigest(), len(rows) - 1)
            progress.update(task, advance=1)
    return fetched


def commit_date(commit: str, http: requests.Session, api_url: str = GITHUB_API_URL) -> str:
    """The day (UTC, YYYY-MM-DD) `commit` of skypilot-catalog was committed, or "" when GitHub does not say
    (rate limit, no network): the rows are then dated unknown, which is true, rather than not refreshed."""
    url = f"{api_url}/repos/{SKYPILOT_REPOSITORY}/commits/{commit}"
    try:
        response = http.get(url, timeout=TIMEOUT_S, headers={"Accept": "application/vnd.github+json",
                                                              "X-GitHub-Api-Version": "2022-11-28"})
        response.raise_for_status()
        stamp = response.json()["commit"]["committer"]["date"]
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(dt.timezone.utc).date().isoformat()
    except (requests.RequestException, ValueError, KeyError, TypeError, AttributeError):
        return ""


def refresh_skypilot(commit: str, providers: list[str], catalog_dir: Path, today: dt.date,
                     http: requests.Session | None = None, base_url: str = SKYPILOT_RAW_URL,
                     api_url: str = GITHUB_API_URL) -> list[str]:
    """Download every file first, then convert and write each provider, dated by the commit's day and imported
    `today`; returns one summary line per provider and appends each file's URL, sha256, row count and the
    commit's date to SOURCES.md's refresh log."""
    catalog_dir = Path(catalog_dir)
    http = http or session()
    with tempfile.TemporaryDirectory(prefix="skypilot-") as temp:
        fetched = download_skypilot(commit, providers, Path(temp), http, base_url)
        observed = commit_date(commit, http, api_url)
        gpus = load_gpus(catalog_dir / "gpus.csv")
        sources = [SkyPilotSource(p, Path(temp), gpus, today.isoformat(), observed,
                                  detail=f"skypilot-catalog {commit} {SKYPILOT_PATHS[p]}",
                                  specs_dir=catalog_dir / "sources") for p in providers]
        rows = {s.provider: list(s.rows()) for s in sources}  # every file converts before any is written
        lines = []
        for source in sources:
            lines.append(refresh(FixedRows(source, rows[source.provider]), catalog_dir).summary())
    dated = f"committed {observed}" if observed else "commit date unknown"
    log = [f"| {today.isoformat()} | `skypilot-{p}` | {url} ({dated}) | sha256 {digest} | {count} rows |"
           for p, (url, digest, count) in fetched.items()]
    append_refresh_log(catalog_dir / "SOURCES.md", log)
    return lines + [f"{p}: {url} ({dated}) sha256 {digest}" for p, (url, digest, _) in fetched.items()]


class FixedRows:
    """Rows already computed (and corrected across providers), presented as a price source."""

    def __init__(self, source: CountingSource, rows: list[OfferRow]):
        self.provider, self.source, self.skipped, self._rows = source.provider, source.source, source.skipped, rows

    def rows(self) -> list[OfferRow]:
        return self._rows


_LOG_HEADING = "## Refresh log"


def append_refresh_log(sources_md: Path, lines: list[str]) -> None:
    text = sources_md.read_text(encoding="utf-8") if sources_md.exists() else ""
    if _LOG_HEADING not in text:
        text = (text.rstrip("\n") + f"\n\n{_LOG_HEADING}\n\n"
                "| date | source | url | digest | rows |\n|---|---|---|---|---|\n")
    sources_md.write_text(text.rstrip("\n") + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
