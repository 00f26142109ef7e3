"""The words of the catalogs' own facts (flags and labels) and of an option's notes. Registered on
`note_words.words` when imported (`render/notes.py` imports every such module)."""

from __future__ import annotations

from .. import facts as f
from ..catalog.ages import StaleFigure, UndatedFigure
from ..catalog.providers import BY_NAME, display_name
from ..catalog.regions import PLACEHOLDER_REGIONS
from ..pricing.price_table import HOURS_PER_YEAR
from ..pricing.query import HOUR_S, format_duration
from ..pricing.quote import QuoteOption
from .money import format_money, format_rate, restate_money
from .note_words import words

_BILLING = {60: "per-minute", HOUR_S: "per-hour", 24 * HOUR_S: "per-day"}  # granularities, as a bill names them


def where(option: QuoteOption) -> str:
    """Where an option's price is for, as a buyer can use it: "any of 17 regions" where the price is the same in
    every region its source lists; "region not given" for a placeholder; an AWS zone ID (`use2-az1`, the same
    zone in every account, whose name differs by account) after its region; else the zone or the region."""
    if option.region in PLACEHOLDER_REGIONS:
        return "region not given"
    if option.regions > 1:
        return f"any of {option.regions} regions"
    if option.zone and option.provider == "aws":
        return f"{option.region} ({option.zone})"
    return option.zone or option.region


# --- the catalogs' own facts -------------------------------------------------------------------------------------

@words.register(f.ScopedFlag)
def _scoped_flag(fact: f.ScopedFlag) -> str:
    return f"{fact.scope}:{fact.flag.value}"


@words.register(f.CatalogLabel)
def _label(fact: f.CatalogLabel) -> str:
    return fact.text


@words.register(f.ContradictedBy)
def _contradicted_by(fact: f.ContradictedBy) -> str:
    return f"article claim, contradicted by {fact.source}"


@words.register(f.Derived)
def _derived(fact: f.Derived) -> str:
    return f"derived {fact.scope} (the source sets {fact.scope} = {fact.share} × on-demand, not a market price)"


@words.register(f.Corrected)
def _corrected(fact: f.Corrected) -> str:
    return f"corrected: {fact.column.replace('_', ' ')} {fact.was} → {fact.now} (the source's figure is wrong; " \
           f"per {fact.on})"


@words.register(f.Replaced)
def _replaced(fact: f.Replaced) -> str:
    what = ("a Dynamic Workload Scheduler (Flex-start) GPU rate on an on-demand host: queued up to 2 h, at most "
            "7 days, preemptible quota" if fact.flex_start else "differs by more than 10 %")
    return f"on-demand from the provider's billing catalog ({fact.by}, {fact.by_as_of}); {fact.was_source}'s " \
           f"${fact.figure}/h is {what}, not on-demand"


@words.register(f.SpotOutlier)
def _spot_outlier(fact: f.SpotOutlier) -> str:
    return f"spot outlier: below half the median of {fact.zones} zones' spot prices (median ${fact.median}/h)"


@words.register(f.LocalZone)
def _local_zone(fact: f.LocalZone) -> str:
    return f"{'AWS Wavelength zone' if fact.wavelength else 'AWS Local Zone'} {fact.zone}: a metro edge site, " \
           "not one of the region's availability zones"


@words.register(f.Labelled)
def _labelled(fact: f.Labelled) -> str:
    conversion = fact.conversion
    return restate_money(words(fact.label), conversion.written_in, conversion.currency, conversion.apply)


@words.register(f.FxRate)
def _fx_rate(fact: f.FxRate) -> str:
    label = "" if fact.verified else ", unverified"
    return f"{fact.per_usd.normalize():f} {fact.currency}/USD ({fact.source} {fact.as_of}{label})"


# --- an option's notes -------------------------------------------------------------------------------------------

@words.register(f.Stale)
def _stale(fact: f.Stale) -> str:
    which = "reserved price" if fact.reserved else "price"
    return f"stale: {which} as of {fact.as_of} ({fact.days} days old)"


@words.register(StaleFigure)
def _stale_figure(fact: StaleFigure) -> str:
    which = "reserved price" if fact.reserved else "price"
    dated = f"as of {fact.as_of}" if fact.observed else f"undated, imported {fact.as_of}"
    return f"stale: {which} {dated} ({fact.days} days old; limit {fact.limit_days})"


@words.register(UndatedFigure)
def _undated_figure(fact: UndatedFigure) -> str:
    return f"price date unknown (imported {fact.imported})"


# The whole bill: the parts of a job's disks and data.
@words.register(f.PartsUnknown)
def _parts_unknown(fact: f.PartsUnknown) -> str:
    items = ", ".join(item.value for item in fact.items)
    return f"{items}: no source gives {fact.provider}'s price here: left out of the total"


@words.register(f.NoCharge)
def _no_charge(fact: f.NoCharge) -> str:
    return f"{fact.what.value}: {fact.provider} states no charge ({fact.source}): adds 0"


@words.register(f.PartCost)
def _part_cost(fact: f.PartCost) -> str:
    """One charge's arithmetic: `disk 4000 GB × $0.08/GB-month × 0.0986 months = $31.56 (aws-ebs-gp3 2026-12-05)`."""
    where = f"{fact.provider}:{fact.region}"
    if fact.amount is None:
        return f"{fact.what.value} {_size(fact.quantity)} {fact.unit}: {fact.item} at {where}: unknown (no source)"
    steps = " + ".join(f"{_size(units)} {fact.unit} × {format_rate(rate, fact.price_currency)}" for units, rate
                       in fact.tiers)
    per = f"/{fact.unit}-month × {fact.months:.4f} months" if fact.months is not None else f"/{fact.unit}"
    label = "" if fact.verified else ", unverified"
    return (f"{fact.what.value}: {fact.item} at {where}: {steps}{per} = "
            f"{format_money(fact.amount, fact.currency)} ({fact.source} {fact.as_of}{label})")


def _size(amount: object) -> str:
    return f"{amount:,.2f}".rstrip("0").rstrip(".")


@words.register(f.Unverified)
def _unverified(fact: f.Unverified) -> str:
    return f"unverified list price ({fact.source})"


# Launching on another cloud than AWS: the clouds' names and refresh verbs are the provider registry's.
@words.register(f.StaleLaunchPrice)
def _stale_launch_price(fact: f.StaleLaunchPrice) -> str:
    cloud = display_name(fact.provider)
    verb = BY_NAME[fact.provider].refresh if fact.provider in BY_NAME else None
    refresh = f"catalog refresh {verb}" if verb else "a refresh of the catalog"
    return f"price from {cloud}'s stale {fact.as_of or 'undated'} list; refresh first: {refresh}"


@words.register(f.LaunchCloud)
def _launch_cloud(fact: f.LaunchCloud) -> str:
    cloud = display_name(fact.provider)
    return f"{cloud}, account {fact.account}" if fact.account else f"{cloud}, account not named in the policy"


@words.register(f.PricedFrom)
def _priced_from(fact: f.PricedFrom) -> str:
    per = "month" if fact.model == f.PricingModel.MONTHLY else "h"
    return f"list price {format_rate(fact.price, fact.currency)}/{per} ({fact.source}, {fact.as_of})"


@words.register(f.Converted)
def _converted(fact: f.Converted) -> str:
    return f"converted from {fact.written_in} at {words(fact.rate)}"


@words.register(f.IdleGpus)
def _idle(fact: f.IdleGpus) -> str:
    return f"{fact.idle} of {fact.gpus} GPUs idle"


@words.register(f.OtherSize)
def _other_size(fact: f.OtherSize) -> str:
    return f"{fact.gpu} ({fact.memory_gib:g} GB a GPU): no {fact.asked} of its own size is offered here"


@words.register(f.MultiHost)
def _multi_host(fact: f.MultiHost) -> str:
    return f"spans {fact.hosts} hosts (network, not NVLink, between them)"


@words.register(f.BilledLonger)
def _billed_longer(fact: f.BilledLonger) -> str:
    per = _BILLING.get(fact.granularity_s, f"per-{fact.granularity_s}-second")
    return f"billed {format_duration(fact.billed_s)}: {per} billing"


@words.register(f.ReservedTerm)
def _reserved_term(fact: f.ReservedTerm) -> str:
    years, terms = fact.years, fact.terms
    if fact.job_s is None:
        return f"commits to a {years}-year term ({HOURS_PER_YEAR * years} h)"
    bought = f"a {years}-year term" if terms == 1 else f"{terms} consecutive {years}-year terms"
    return f"commits to {bought} ({HOURS_PER_YEAR * years * terms} h) for a {fact.job_s / HOUR_S:g} h job"


@words.register(f.BreakEven)
def _break_even(fact: f.BreakEven) -> str:
    return f"breaks even vs on-demand at {fact.hours_per_month:.0f} h/month of use"


@words.register(f.Flagged)
def _flagged(fact: f.Flagged) -> str:
    return f"catalog flags: {';'.join(words(flag) for flag in fact.flags)} (included on request)"


@words.register(f.AlsoAs)
def _also_as(fact: f.AlsoAs) -> str:
    return "also as " + ", ".join(fact.folded) + " (same per-GPU price, more hosts)"
