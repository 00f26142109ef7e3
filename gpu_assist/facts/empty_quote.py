"""Why a quote has no options (`Quote.empty_reason`): the first filter that left nothing, or the pricing models
without a usable price and what the catalogs offer instead. Pure.
"""

from __future__ import annotations

from decimal import Decimal

from .catalog import PricingModel
from .fact import Fact


class Scope(Fact):
    """What a quote asked about: a GPU, from providers, in regions (each empty when not narrowed)."""

    gpu: str
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()


class NoOffers(Fact):
    """The catalogs have no offer of the GPU at all."""

    gpu: str


class NoProviderOffers(Fact):
    """None of the providers asked for offers the GPU; `offered_by` do."""

    scope: Scope
    offered_by: tuple[str, ...]


class NoRegionOffers(Fact):
    """None of the offers lies in the regions asked for; `offered_in` are the regions they are in."""

    scope: Scope
    offered_in: tuple[str, ...]


class AllUnverified(Fact):
    """`verified-only` left nothing: every offer in scope is an unverified list price."""

    scope: Scope


class AllFlagged(Fact):
    """Every price of `models` in scope has a known data defect."""

    scope: Scope
    models: tuple[PricingModel, ...]


class Cheapest(Fact):
    """The cheapest GPU-hour of a pricing model (monthly: per 730 h)."""

    model: PricingModel
    per_gpu_hour: Decimal
    currency: str


class NoPrices(Fact):
    """No offer in scope has a price in `models`; `instead` what the other models offer."""

    scope: Scope
    models: tuple[PricingModel, ...]
    instead: tuple[Cheapest, ...]
