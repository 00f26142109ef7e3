"""A quote command's answer: every option priced, then filtered, sorted and laid out as the command asks. Apart
from `execute.py` so that the CLI's quote, the answer asked most, loads none of the other verbs' cores."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from decimal import Decimal

from ..catalog import Catalog, default_catalog_dir
from ..catalog.fabric import plan_data_for
from ..catalog.fx import rate_places
from ..facts import PriceCapConverted, PricingModel
from ..pricing.compare import Comparison, compare, in_rank_order, refine
from ..pricing.quote import Quote, quote
from .objects import QuoteCommand


def quote_view(command: QuoteCommand, catalog: Catalog, *, today: dt.date, currency: str) -> Quote | Comparison:
    """The quote a command asks for: every option priced, filtered and sorted (`refine`), then either the
    comparison (`top` rows) or the flat list (`top` options)."""
    priced = quote(command.request, catalog, today=today, currency=currency, all_regions=command.all_regions,
                   include_flagged=command.include_flagged, verified_only=command.verified_only,
                   include_unverified=command.include_unverified, job_data=command.job_data,
                   spot_rates=spot_rates(catalog) if PricingModel.SPOT in command.request.pricing_models else None)
    max_price = command.max_price
    if max_price is not None and command.max_price_currency not in (None, priced.currency):
        # Filtered at the figure the notice shows (`format_rate`'s places), so what it says is what it did.
        exact, restated = catalog.fx.restate(max_price, command.max_price_currency, priced.currency,
                                             example="quote 8xA100 72h max-price=30")
        max_price = exact.quantize(Decimal(1).scaleb(-rate_places(exact))).normalize()
        priced = replace(priced, notices=(*priced.notices, PriceCapConverted(restated)))
    refined = refine(priced, sort=command.sort, max_price=max_price,
                     min_gpu_memory_gib=command.min_gpu_memory_gib, include_unverified=command.include_unverified)
    if command.view == "list" and command.sort == "total":
        refined = in_rank_order(refined, compare(refined, sort=command.sort,
                                                 include_unverified=command.include_unverified))
    if command.view == "list":
        return replace(refined, options=refined.options[:command.top]) if command.top else refined
    return compare(refined, top=command.top, sort=command.sort, include_unverified=command.include_unverified)


def spot_rates(catalog: Catalog) -> dict[tuple[str, str], float]:
    """Interruptions per instance-hour of each AWS (region, instance type) the Spot Advisor bands: what a quote
    asked for spot ranks by (its expected cost), read only when spot is asked for."""
    bands = plan_data_for(catalog.directory, default_catalog_dir()).bands
    return {key: band.rate_per_h for key, band in bands.items()}
