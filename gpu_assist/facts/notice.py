"""What is said once under a quote (`Quote.notices`): what the parser assumed, what a filter left out, amounts
restated in another currency. Pure.
"""

from __future__ import annotations

from decimal import Decimal

from .catalog import PricingModel
from .fact import Fact
from .option import FxRate


class Assumption(Fact):
    """What the request parser assumed (its words: `request.NO_DURATION`)."""

    text: str


class ReservedUnknown(Fact):
    """No source in the catalogs gives a reserved price of `model` for the offers asked about."""

    model: PricingModel


class FlaggedLeftOut(Fact):
    """`prices` prices with known data defects were left out."""

    prices: int


class OneHostListings(Fact):
    """`listings` marketplace listings were left out: each is one host, fewer GPUs than asked for."""

    listings: int


class UnverifiedShown(Fact):
    """`unverified` of the `options` shown are unverified list prices."""

    unverified: int
    options: int


class MemoryFilter(Fact):
    """`min-gpu-memory=` left out `removed` options; `largest` (GiB) when it left none."""

    min_gib: float
    removed: int
    gpu: str
    largest: float | None


class PriceCap(Fact):
    """`max-price=` (per job-hour) left out `removed` options; `cheapest` job-hour when it left none."""

    max_price: Decimal
    currency: str
    removed: int
    cheapest: Decimal | None


class Restated(Fact):
    """An amount given in one currency, converted into another at `rate` (the currency that is not USD)."""

    amount: Decimal
    written_in: str
    converted: Decimal
    currency: str
    rate: FxRate


class InputConverted(Fact):
    """An amount of a TCO's input (`key`: hardware, power, …) given in another currency than the answer's."""

    key: str
    restated: Restated


class PriceCapConverted(Fact):
    """The `max-price=` the user gave in another currency, and what it is in the quote's."""

    restated: Restated
