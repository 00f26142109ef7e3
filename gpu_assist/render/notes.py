"""The words of the core's facts (`gpu_assist.facts`): one function per fact type, for every medium.

Text, Slack, JSON, CSV, Markdown and the notebook's frames show a note in the same words, so one function per
type serves them all (`words`); a medium that needs other words registers its own generic over the same types.
A fact type without a function here is a `TypeError` at its first render; `tests/unit/test_facts.py` checks that
every fact type has one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import singledispatch

from .. import facts as f
from ..catalog.ages import StaleFigure, UndatedFigure
from ..catalog.providers import BY_NAME, display_name
from ..plural import plural
from ..catalog.regions import PLACEHOLDER_REGIONS
from ..pricing.price_table import HOURS_PER_YEAR
from ..pricing.query import HOUR_S, format_duration
from ..pricing.quote import QuoteOption
from .money import format_money, format_rate, restate_money

# The Spot Advisor's interruption bands as its page words them (a band is a number in `facts.FleetSpotRisk`).
_BAND_WORDS = {0: "<5 %", 1: "5-10 %", 2: "10-15 %", 3: "15-20 %", 4: ">20 %"}
_BILLING = {60: "per-minute", HOUR_S: "per-hour", 24 * HOUR_S: "per-day"}  # granularities, as a bill names them


@singledispatch
def words(fact: object) -> str:
    """The sentence a reader sees for `fact`."""
    raise TypeError(f"no words for {type(fact).__name__}")


def _listed(values: tuple[str, ...]) -> str:
    """At most six names, then how many more."""
    return ", ".join(values[:6]) + (f" and {len(values) - 6} more" if len(values) > 6 else "")


# Facts without fields: always the same words.
_CONSTANT = {
    f.DateUnknown: "price date unknown",
    f.PcieOnly: "GPUs linked over PCIe only (no NVLink)",
    f.SpotInterruption: "spot: may be interrupted; checkpoint your job",
    f.MonthlyBilling: "monthly subscription: billed per whole month (730 h)",
    f.Fastest: "the fastest plan",
    f.OwnHardware: "own hardware: marginal cost 0 (power and operations not counted; see `tco`)",
    f.Hybrid: "hybrid: develop here, burst to the cloud plans below for deadlines",
}
for _type in _CONSTANT:
    words.register(_type, lambda fact: _CONSTANT[type(fact)])


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


# --- a quote's notices -------------------------------------------------------------------------------------------

@words.register(f.Assumption)
def _assumption(fact: f.Assumption) -> str:
    return fact.text


@words.register(f.ReservedUnknown)
def _reserved_unknown(fact: f.ReservedUnknown) -> str:
    return f"{fact.model}: reserved price unknown (no source in the catalogs gives one)"


@words.register(f.FlaggedLeftOut)
def _flagged_left_out(fact: f.FlaggedLeftOut) -> str:
    return f"{plural(fact.prices, 'price')} with known data defects left out (include-flagged shows them)"


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


@words.register(f.ResoldBelow)
def _resold_below(fact: f.ResoldBelow) -> str:
    return f"resold below its source: under {fact.share:.0%} of {fact.upstream}'s own " \
        f"${fact.per_gpu:.2f}/GPU-h for this GPU (no public source confirms the resale)"


@words.register(f.OneHostListings)
def _one_host_listings(fact: f.OneHostListings) -> str:
    return f"{plural(fact.listings, 'marketplace listing')} with fewer GPUs than asked for left out (a listing " \
        "is one host: the source gives no count of machines)"


@words.register(f.UnverifiedShown)
def _unverified_shown(fact: f.UnverifiedShown) -> str:
    return f"{fact.unverified} of {plural(fact.options, 'option')} " \
        + ("is an unverified list price" if fact.unverified == 1 else "are unverified list prices")


@words.register(f.MemoryFilter)
def _memory_filter(fact: f.MemoryFilter) -> str:
    return f"min-gpu-memory={fact.min_gib:g} left out {fact.removed} options" \
        + ("" if fact.largest is None else f" (every {fact.gpu} offer has {fact.largest:g} GB or less)")


@words.register(f.PriceCap)
def _price_cap(fact: f.PriceCap) -> str:
    return f"max-price={fact.max_price:f} {fact.currency}/h left out {fact.removed} options" \
        + ("" if fact.cheapest is None else f" (the cheapest costs {fact.cheapest:,.2f} {fact.currency}/h)")


@words.register(f.Restated)
def _restated(fact: f.Restated) -> str:
    return f"{format_rate(fact.amount, fact.written_in)} = {format_rate(fact.converted, fact.currency)} at " \
        + words(fact.rate)


@words.register(f.InputConverted)
def _input_converted(fact: f.InputConverted) -> str:
    return f"{fact.key} {words(fact.restated)}"


@words.register(f.PriceCapConverted)
def _price_cap_converted(fact: f.PriceCapConverted) -> str:
    return f"max-price {words(fact.restated)}"


# --- why a quote is empty ----------------------------------------------------------------------------------------

@words.register(f.Scope)
def _scope(scope: f.Scope) -> str:
    """`H100 from aws, gcp in eu`: what was asked about."""
    return _offers(scope, "")


def _offers(scope: f.Scope, noun: str) -> str:
    """`A100 offers from aws in eu` (with `noun` " offers"): the GPU, the noun, then where from."""
    source = f" from {_listed(scope.providers)}" if scope.providers else ""
    where = f" in {_listed(scope.regions)}" if scope.regions else ""
    return f"{scope.gpu}{noun}{source}{where}"


@words.register(f.NoOffers)
def _no_offers(fact: f.NoOffers) -> str:
    return f"no offers of {fact.gpu} in the catalogs"


@words.register(f.NoProviderOffers)
def _no_provider_offers(fact: f.NoProviderOffers) -> str:
    return f"no {_offers(fact.scope, ' offers')}; {fact.scope.gpu} is offered by {_listed(fact.offered_by)}"


@words.register(f.NoRegionOffers)
def _no_region_offers(fact: f.NoRegionOffers) -> str:
    return f"no {_offers(fact.scope, ' offers')}; offered in {_listed(fact.offered_in)}"


@words.register(f.AllUnverified)
def _all_unverified(fact: f.AllUnverified) -> str:
    return f"every {_offers(fact.scope, ' offer')} is an unverified list price (drop verified-only to see them)"


@words.register(f.AllFlagged)
def _all_flagged(fact: f.AllFlagged) -> str:
    return f"every {' or '.join(fact.models)} price for {_scope(fact.scope)} has a known data defect " \
        "(include-flagged shows them)"


@words.register(f.Cheapest)
def _cheapest(fact: f.Cheapest) -> str:
    return f"{fact.model} from {format_rate(fact.per_gpu_hour, fact.currency)}/GPU-h"


@words.register(f.NoPrices)
def _no_prices(fact: f.NoPrices) -> str:
    missing = f"no {' or '.join(fact.models)} prices for {_scope(fact.scope)} in the catalogs"
    return f"{missing}; {', '.join(words(c) for c in fact.instead)}" if fact.instead else missing


# --- a plan's reasons --------------------------------------------------------------------------------------------

@words.register(f.Checkpointing)
def _checkpointing(fact: f.Checkpointing) -> str:
    return f"checkpoint every {fact.interval_min:g} min: +{fact.overhead:.0%} expected time for writes and lost work"


@words.register(f.MixedFleet)
def _mixed_fleet(fact: f.MixedFleet) -> str:
    return f"{fact.spot:,} spot + {fact.on_demand:,} on-demand instances: the on-demand part keeps the job alive " \
        "through interruptions"


# Interconnect, fleet-scale spot risk, capacity and quota: what a plan can run on, and get.
def _gbps(gbps: float | None) -> str:
    return "bandwidth not stated" if gbps is None else f"{gbps:,.4g} Gbps"


@words.register(f.Fabric)
def _fabric(fact: f.Fabric) -> str:
    network = f"{fact.fabric}, {_gbps(fact.gbps)}" if fact.fabric else "a network no source states"
    if fact.hosts <= 1:
        return f"one {fact.instance_type} host; network to others: {network}"
    if fact.scaling is None:  # serving replicas, each inside its host
        return f"{network} between {fact.hosts:,} {fact.instance_type} hosts, each serving on its own"
    scaled = fact.scaling
    basis = {"network": "from the network", "override": "yours", "assumed": "assumed: bandwidth unknown"}.get(
        scaled.basis, scaled.basis)
    return f"{network} between {fact.hosts:,} {fact.instance_type} hosts: scaling {scaled.efficiency:.0%} ({basis})"


@words.register(f.Scaling)
def _scaling(fact: f.Scaling) -> str:
    return f"scaling {fact.efficiency:.0%} over {plural(fact.hosts, 'host')} ({fact.basis})"


@words.register(f.NoFabric)
def _no_fabric(fact: f.NoFabric) -> str:
    network = f"{fact.fabric}, {_gbps(fact.gbps)}" if fact.fabric else "a network no source states"
    return f"needs {fact.hosts:,} hosts linked by {network}: sharded training over more than 2 hosts needs EFA, " \
        "InfiniBand, RoCE or GPUDirect at ≥ 100 Gbps"


def _rate_source(fact: f.FleetSpotRisk) -> str:
    if fact.band is None:
        return "default rate, no Spot Advisor band"
    return f"Spot Advisor {fact.region} {_BAND_WORDS[fact.band]}/month, {fact.as_of}"


@words.register(f.FleetSpotRisk)
def _fleet_spot_risk(fact: f.FleetSpotRisk) -> str:
    chance = "" if fact.chance is None else \
        f"; {'over 99%' if fact.chance > 0.99 else format(fact.chance, '.0%')} chance to finish by the deadline"
    rate = f"{fact.rate_per_h:.2g}" if fact.rate_per_h >= 0.01 else f"{fact.rate_per_h:.6f}".rstrip("0")
    return f"spot, {fact.instances:,} instance{'s' if fact.instances != 1 else ''} × {rate} " \
        f"interruptions/h ({_rate_source(fact)}), checkpoint every {fact.interval_min:g} min: " \
        f"+{fact.overhead:.0%} expected time{chance}"


@words.register(f.SpotOverheadHigh)
def _spot_overhead_high(fact: f.SpotOverheadHigh) -> str:
    return f"spot overhead +{fact.overhead:.0%} > {fact.limit:.0%}: ranked behind plans that are not interrupted " \
        "as often"


@words.register(f.MarketplaceHosts)
def _marketplace_hosts(fact: f.MarketplaceHosts) -> str:
    return f"needs {fact.instances:,} hosts but the marketplace listing is {plural(fact.listed, 'machine')}"


@words.register(f.QuotaNeeded)
def _quota_needed(fact: f.QuotaNeeded) -> str:
    known = "quota unknown (no AWS credentials checked)" if fact.granted is None else \
        f"the account has {fact.granted:,}"
    return f"needs {fact.vcpus:,} vCPUs of quota {fact.code} ({fact.name}); {known}"


@words.register(f.CapacityBlock)
def _capacity_block(fact: f.CapacityBlock) -> str:
    blocks = math.ceil(fact.instances / fact.per_block)
    split = "one block" if blocks == 1 else f"{blocks} blocks of ≤ {fact.per_block}"
    return f"AWS Capacity Block: {plural(fact.instances, 'instance')} reserved for {plural(fact.days, 'day')} " \
        f"({split}, each in one zone), " \
        f"price as published {fact.as_of} ({fact.source}); AWS reprices blocks by supply and demand"


@words.register(f.Folded)
def _folded(fact: f.Folded) -> str:
    return "also as " + ", ".join(fact.splits) + " (same GPUs, price and time)"


@words.register(f.OwnTooSmall)
def _own_too_small(fact: f.OwnTooSmall) -> str:
    return f"{fact.count}×{fact.gpu} hold {fact.usable_gb:,.0f} GB usable < {fact.needed_gb:,.0f} GB needed"


@words.register(f.OverDeadline)
def _over_deadline(fact: f.OverDeadline) -> str:
    return f"takes {fact.hours:,.0f} h > deadline {fact.deadline_h:g} h"


@words.register(f.OverBudget)
def _over_budget(fact: f.OverBudget) -> str:
    return f"costs {fact.total:,.0f} {fact.currency} > budget {fact.budget:,.0f} {fact.currency}"


def _instance_cap(instances: int, max_instances: int) -> str:
    """The cap an offer needing `instances` instances is refused under, and the word that lifts it."""
    return f"max_instances is {max_instances:,} (max_instances={instances} lifts it)"


@words.register(f.TooManyToHold)
def _too_many_to_hold(fact: f.TooManyToHold) -> str:
    return f"needs {fact.instances:,} instances of {fact.host_gpus}×{fact.gpu} ({fact.gpus:,} GPUs) to hold " \
        f"{fact.needed_gb:,.0f} GB; {_instance_cap(fact.instances, fact.max_instances)}"


@words.register(f.TooManyToServe)
def _too_many_to_serve(fact: f.TooManyToServe) -> str:
    return f"needs {fact.instances:,} instances of {fact.host_gpus}×{fact.gpu} ({fact.gpus:,} GPUs) to serve " \
        f"{fact.users:,} users; {_instance_cap(fact.instances, fact.max_instances)}"


@words.register(f.GroupSpansHosts)
def _group_spans_hosts(fact: f.GroupSpansHosts) -> str:
    return f"a tensor-parallel group of {fact.tp:,} GPUs would span hosts of {fact.host_gpus}: choose a larger host"


@words.register(f.Refused)
def _refused(fact: f.Refused) -> str:
    return fact.text


def said(notes: Iterable[object]) -> list[str]:
    """The words of each fact, in order."""
    return [words(note) for note in notes]


# --- commitments ---------------------------------------------------------------------------------------------------

@words.register(f.CommitUnsteady)
def _commit_unsteady(fact: f.CommitUnsteady) -> str:
    return (f"use is not steady enough: the lowest month ran {fact.lowest_hours:,.0f} instance-hours, and one "
            f"{fact.model} instance needs {fact.needed_hours:,.0f} a month to break even")


@words.register(f.CommitHistoryShort)
def _commit_history_short(fact: f.CommitHistoryShort) -> str:
    if fact.wanted >= 12:
        return f"a 3-year term is recommended only after {fact.wanted} months of history; {fact.months} recorded"
    return f"only {plural(fact.months, 'whole month')} of recorded launches, of the {fact.wanted} asked for"


@words.register(f.CommitNoPrice)
def _commit_no_price(fact: f.CommitNoPrice) -> str:
    return f"no verified {fact.model} price in the catalog"


@words.register(f.CommitNoHistory)
def _commit_no_history(fact: f.CommitNoHistory) -> str:
    return f"no launches recorded in the last {plural(fact.months, 'whole month')}: nothing to plan from"
