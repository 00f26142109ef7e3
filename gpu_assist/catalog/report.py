"""Summaries of a loaded catalog: which GPUs are offered where, and how fresh each provider's prices are."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable

import pandas as pd

from ..facts import SANITY_RULE, Corrected, PricingModel, Replaced, parse_flags, parse_labels
from . import Catalog
from .ages import figure_date
from .offers import Offer


def gpu_summary(catalog: Catalog) -> pd.DataFrame:
    """One row per known GPU: specs, providers offering it, offers, and the cheapest verified, unflagged
    on-demand price per GPU-hour in USD."""
    offers = catalog.offers[catalog.offers.gpu_count >= 1]
    trusted = offers[offers.verified & (offers["flags"] == "")]
    usd = trusted.on_demand_hourly * trusted.currency.map(lambda c: catalog.fx.factor(c, "USD"))
    per_gpu = (usd / trusted.gpu_count).groupby(trusted.gpu).min()
    providers = offers.groupby("gpu").provider.agg(lambda p: ",".join(sorted(set(p))))
    count = offers.groupby("gpu").size()
    rows = []
    for spec in catalog.gpus:
        rows.append({
            "gpu": spec.name, "memory_gib": spec.memory_gib, "architecture": spec.architecture,
            "bf16_tflops": spec.bf16_tflops if spec.bf16_tflops is not None else "",
            "offers": int(count.get(spec.name, 0)), "providers": providers.get(spec.name, ""),
            "min_verified_on_demand_per_gpu_hour_usd":
                "" if pd.isna(per_gpu.get(spec.name)) else round(per_gpu[spec.name], 4),
        })
    return pd.DataFrame(rows)


def provider_status(catalog: Catalog, today: dt.date, billing_documented: Collection[str] = ()) -> pd.DataFrame:
    """One row per provider: offers, GPU models, sources, age in days of its oldest price (from its import where
    its source gives no date), verified share, flagged offers, and how many offers have a price older than its
    kind's limit (`ages.AGE_LIMIT_DAYS`, reserved included).
    `billing_documented`: the providers whose price lists state their billing granularity (for the others the
    importer assumed it)."""
    rows = []
    offers = [Offer.from_row(row) for row in catalog.rows]
    for provider, group in catalog.offers.groupby("provider"):
        dated = [[figure_date(offer, model) for model in PricingModel if offer.price(model) is not None]
                 for offer in offers if offer.provider == provider]
        days = [date.day for dates in dated for date in dates if date.day is not None]
        stale = sum(1 for dates in dated if any(date.stale(today) for date in dates))
        rows.append({
            "provider": provider, "offers": len(group), "gpu_models": group.gpu.nunique(),
            "sources": _dated_sources(group), "age_days": (today - min(days)).days if days else "unknown",
            "verified": f"{group.verified.mean():.0%}", "flagged": int((group["flags"] != "").sum()), "stale": stale,
            "billing": billing_of(group.billing_granularity_s, assumed=provider not in billing_documented),
            **defects_caught(zip(group["flags"], group["notes"])),
        })
    return pd.DataFrame(rows)


def _dated_sources(group: pd.DataFrame) -> str:
    """Each source of a provider's prices with its newest date (`TC-PRICE-20210927 2021-09-27,seed-000`: a source
    that is no price list stands alone; `skypilot-aws undated`: the source gives no date, and the age counts from
    the import), so a reader sees which figures are how old without opening SOURCES.md."""
    newest: dict[str, str] = {}
    for source, as_of, imported in [*zip(group.source, group.as_of, group.imported),
                                    *zip(group.reserved_source, group.reserved_as_of, group.reserved_as_of)]:
        if source:
            newest[source] = max(newest.get(source, ""), as_of or (UNDATED if imported else ""))
    return ",".join(f"{source} {said}".rstrip() for source, said in sorted(newest.items()))


UNDATED = "undated"
UNDATED_FOOTNOTE = (f"{UNDATED}: the source gives no date for its prices; their age counts from their import "
                    "(catalogs/SOURCES.md)")


# `catalog status`: the defects the import's price sanity rules caught (`sources/sanity.py`), one column per rule.
CAUGHT_COLUMNS = ("corrected", "a", "b", "b_spot", "c", "d", "e", "resale")


def defects_caught(flags_and_notes: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Rows per rule: `corrected` (a value corrected on a named source), (b) on-demand replaced by the provider's
    billing catalog, `b_spot` a spot price it contradicts, and the flags of rules (a), (c), (d), (e) and resale
    (`facts.SANITY_RULE`); (c) also counts the Flex-start figures (b) replaced."""
    counts = dict.fromkeys(CAUGHT_COLUMNS, 0)
    for flags, notes in flags_and_notes:
        rules = {SANITY_RULE[flag.flag] for flag in parse_flags(flags) if flag.flag in SANITY_RULE}
        for label in parse_labels(notes):
            if isinstance(label, Corrected):
                rules.add("corrected")
            elif isinstance(label, Replaced):  # a replaced Flex-start figure was caught by (c) as well
                rules.update(("b", "c") if label.flex_start else ("b",))
        for rule in rules:
            counts[rule] += 1
    return counts


def caught_table(frame: pd.DataFrame) -> list[list[str]]:
    """The providers with a defect caught, as rows under `CAUGHT_COLUMNS` (a table of their own: the status
    table is 100 columns already)."""
    return [[str(row.provider), *(str(getattr(row, c)) for c in CAUGHT_COLUMNS)]
            for row in frame.itertuples(index=False) if any(getattr(row, c) for c in CAUGHT_COLUMNS)]


def billing_of(granularities: Iterable[float], *, assumed: bool) -> str:
    """How the provider's offers are billed, and whether that is the provider's word or our assumption: the
    price lists of all but the four large clouds do not say (catalogs/SOURCES.md, `billing-granularity`)."""
    names = {1: "per second", 60: "per minute", 3600: "per hour"}
    billed = "/".join(names.get(int(g), f"per {int(g)} s") for g in sorted(set(granularities)))
    return f"{billed}, assumed" if assumed else billed


def billing_footnote(frame: pd.DataFrame) -> str:
    """The `billing` column of `provider_status` as one line under the table (the table is 100 columns already)."""
    groups: dict[str, list[str]] = {}
    for provider, billing in zip(frame.provider, frame.billing):
        groups.setdefault(billing, []).append(provider)
    ordered = sorted(groups.items(), key=lambda group: group[0].endswith("assumed"))
    said = [f"{billing.replace(', assumed', ', assumed (the source does not say; the conservative choice)')}: "
            f"{', '.join(names)}" for billing, names in ordered]
    return "billing " + "; ".join(said)
