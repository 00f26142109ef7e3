"""The words of what is said once under a quote (its notices) and of why a quote is empty. Registered on
`note_words.words` when imported (`render/notes.py` imports every such module)."""

from __future__ import annotations

from .. import facts as f
from ..plural import plural
from .money import format_rate
from .note_words import words


def _listed(values: tuple[str, ...]) -> str:
    """At most six names, then how many more."""
    return ", ".join(values[:6]) + (f" and {len(values) - 6} more" if len(values) > 6 else "")


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
