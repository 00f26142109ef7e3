"""Alibaba Cloud, Tencent Cloud and Huawei Cloud rows from public sources (`catalog import-china`).

Inputs, in `catalogs/sources/` (`SOURCES-cn.txt` says where each row comes from):
- `cn_gpu_specs.csv`: GPU model, count and total GPU memory per instance type, from the providers' documentation.
  Every Chinese row's GPU comes from here: the articles' own specs were wrong more often than right.
- `cn_gpu_prices.csv`: Tencent Cloud's published list prices (2019-02-27 … 2021-09-27), on-demand per hour and
  monthly (包年包月) per month, each copied as printed: a monthly price is never derived from an hourly one (their
  ratio is 480 on GT4/GN10Xp and about 288 on older families). Each size's newest version is kept; where that
  version prints a range "a - b", b (the earlier single list price) is the price and a is named in a note.
  The rows are `verified=yes` (the provider's own list) and dated, so quotes label them stale.
- the articles' claims (`china_rules.SEED_CLAIMS`), checked against the documentation.

No Alibaba or Huawei price could be traced to a public source: those files hold only the articles' rows.
"""

from __future__ import annotations

import csv
import datetime as dt
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import NamedTuple

from ..catalog.gpus import GpuTable
from ..catalog.providers import CHINA_PROVIDERS
from ..catalog.regions import location
from ..facts import ContradictedBy, Flag, Label, ScopedFlag
from . import number_text
from .china_rules import SEED_CLAIMS, SeedClaim
from .offer_row import OfferRow

SPECS_FILE = "cn_gpu_specs.csv"
PRICES_FILE = "cn_gpu_prices.csv"
PROVIDERS = CHINA_PROVIDERS
REGION = "cn"  # the sources name no region; the price page says its prices are mainly mainland China's
CONTRADICTED_BY = "contradicted-by "  # a note's keyword: the source that contradicts an article's claim


class Documented(NamedTuple):
    """An instance type as its provider's documentation describes it."""

    instance_type: str
    gpu: str
    gpu_count: str
    total_memory_gib: str
    interconnect: str
    source: str

    @property
    def memory_per_gpu(self) -> str:
        return number_text(str(round(float(self.total_memory_gib) / float(self.gpu_count), 2)))


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def read_specs(path: Path) -> dict[str, list[Documented]]:
    """Each provider's documented instance types (the name without Alibaba's `ecs.` prefix kept as written)."""
    specs: dict[str, list[Documented]] = defaultdict(list)
    for row in read_csv(path):
        specs[row["provider"]].append(Documented(row["instance_type"], row["gpu"], row["gpu_count"],
                                                 row["gpu_memory_gib"], row["interconnect"], row["source_id"]))
    return specs


def interconnect(documented: Documented) -> str:
    """nvlink, pcie or unknown, from the documentation's own words."""
    text = documented.interconnect.lower()
    if "nvlink" in text or "nvswitch" in text:
        return "nvlink"
    return "pcie" if "pcie" in text else "unknown"


def _decimal(text: str) -> Decimal | None:
    return Decimal(text) if text else None


class ChinaSource:
    """The rows of one Chinese provider (a `sources.PriceSource`): its list prices and the articles' claims."""

    def __init__(self, provider: str, sources_dir: Path, gpus: GpuTable):
        self.provider = provider
        self.source = "TC-PRICE-20210927" if provider == "tencent" else "seed-000"  # its main source
        self.sources_dir = Path(sources_dir)
        self.gpus = gpus
        self.skipped: dict[str, int] = {}

    def rows(self) -> list[OfferRow]:
        specs = read_specs(self.sources_dir / SPECS_FILE)[self.provider]
        rows = [self._seed_row(claim, specs) for claim in SEED_CLAIMS if claim.provider == self.provider]
        if self.provider == "tencent":
            rows += self._list_rows(read_csv(self.sources_dir / PRICES_FILE), specs)
        return rows

    def _gpu_name(self, documented: Documented) -> str | None:
        """gpus.csv's name of a documented GPU (`A100-40GB` → A100), None when gpus.csv does not know it."""
        spec = self.gpus.find(documented.gpu) if documented.gpu else None
        if spec is None:
            return None
        return self.gpus.variant(spec, float(documented.memory_per_gpu)).name

    def _seed_row(self, claim: SeedClaim, specs: list[Documented]) -> OfferRow:
        """The article's price, on the documented GPU where the documentation names the family's GPU; a claim the
        documentation contradicts is flagged with the source that does."""
        family = [d for d in specs if claim.family and d.instance_type.startswith(claim.family)]
        gpu, count, memory = claim.gpu, claim.gpu_count, claim.gpu_memory_gib
        models = {self._gpu_name(d) for d in family}
        if len(models) == 1 and None not in models:
            sized = [d for d in family if d.gpu_count == claim.gpu_count] or family
            counts = {d.gpu_count for d in sized}
            gpu = models.pop() or gpu
            count = counts.pop() if len(counts) == 1 else claim.gpu_count
            memory = next(d.memory_per_gpu for d in sized if d.gpu_count == count)
        country, continent = location(claim.provider, REGION)
        refuted = bool(claim.refuted_by)
        return OfferRow(
            provider=claim.provider, region=REGION, instance_type=claim.instance_type, gpu=gpu,
            gpu_count=Decimal(count), gpu_memory_gib=Decimal(memory), vcpus=_decimal(claim.vcpus),
            memory_gib=_decimal(claim.memory_gib), interconnect="unknown", currency="CNY",
            on_demand_hourly=_decimal(claim.on_demand_hourly), monthly=_decimal(claim.monthly),
            billing_granularity_s=3600, source=claim.source, as_of=None, verified=False,
            flags=(ScopedFlag("all", Flag.ARTICLE_CLAIM_CONTRADICTED),) if refuted else (),
            source_detail=claim.source_detail, country=country, continent=continent,
            notes=(ContradictedBy("all", f"{CONTRADICTED_BY}{claim.refuted_by}"),) if refuted else ())

    def _list_rows(self, prices: list[dict[str, str]], specs: list[Documented]) -> list[OfferRow]:
        """One row per Tencent size: its newest published version's prices, specs from the documentation."""
        by_type: dict[str, list[dict[str, str]]] = defaultdict(list)
        for price in prices:
            if price["provider"] == self.provider:
                by_type[price["instance_type"]].append(price)
        documented = {d.instance_type: d for d in specs}
        rows = []
        for instance_type, versions in sorted(by_type.items()):
            doc = documented.get(instance_type)
            gpu = self._gpu_name(doc) if doc else None
            if doc is None or gpu is None:
                reason = "no documented spec" if doc is None else f"GPU {doc.gpu} not in gpus.csv"
                self.skipped[reason] = self.skipped.get(reason, 0) + 1
                continue
            rows.append(self._list_row(doc, gpu, versions))
        return rows

    def _list_row(self, doc: Documented, gpu: str, versions: list[dict[str, str]]) -> OfferRow:
        newest = max(v["as_of"] for v in versions)
        current = [v for v in versions if v["as_of"] == newest]
        lows = {v["pricing_model"]: v for v in current if v["source_id"].endswith("-LOW")}
        listed = [v for v in current if not v["source_id"].endswith("-LOW")]
        first = listed[0]
        price = {v["pricing_model"]: Decimal(v["price_cny"]) for v in listed}  # the last listed of a model
        lower = " and ".join(f"¥{v['price_cny']}/h" if model == "on-demand" else f"¥{v['price_cny']} a month"
                             for model, v in sorted(lows.items()))
        also = Label("all", f"the page also prints a lower price ({lower}) without saying for whom")
        country, continent = location(self.provider, REGION)
        return OfferRow(
            provider=self.provider, region=REGION, instance_type=doc.instance_type, gpu=gpu,
            gpu_count=Decimal(doc.gpu_count), gpu_memory_gib=Decimal(doc.memory_per_gpu),
            vcpus=_decimal(first["vcpus"]), memory_gib=_decimal(first["memory_gib"]), interconnect=interconnect(doc),
            currency="CNY", on_demand_hourly=price.get("on-demand"), monthly=price.get("monthly"),
            billing_granularity_s=3600, source=first["source_id"].removesuffix("-HIGH"),
            as_of=dt.date.fromisoformat(newest), verified=True,
            flags=(ScopedFlag("all", Flag.FRACTIONAL_GPU),) if Decimal(doc.gpu_count) < 1 else (),
            source_detail=f"specs {doc.source}", country=country, continent=continent,
            notes=(also,) if lows else ())

