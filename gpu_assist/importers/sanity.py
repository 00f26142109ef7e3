"""Price sanity at import (issue #31): upstream catalog defects caught as typed flags and labels before they rank.

Each rule is a predicate over prices (so a test can ask it of any row); the importers flag the rows it holds for.
A flagged price is left out of quotes unless asked for (`include-flagged`):

- (a) `below_parts`: a GCP whole-instance on-demand price below the least its parts are listed at: the host's
  price plus its GPUs at the GPU's lowest on-demand per-GPU rate over the regions (Flex-start rates left out),
  and no less than the GPUs' own spot price → `on_demand:below-parts-price`;
- (c) `flex_start_rate`: a GCP GPU part priced at a Dynamic Workload Scheduler (Flex-start) rate, which the
  Billing API lists as "OnDemand" and SkyPilot's fetcher may take first (SOURCES-plans.txt part B) →
  `on_demand:flex-start-price`; (b), the provider's billing catalog winning over it, is `committed.py`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

# Flex-start (DWS) GPU rates per GPU-hour, as SkyPilot rounds them (5 decimals), each from a published SKU
# (SOURCES-plans.txt S-GCP-DWS-ZENN and S-DWS-SKU-CORROB): H100 341A-49A5-0C07 4.200761 (us-central1, also Seoul
# $4.20), H100 Mega $4.42 (Seoul: 4.42394 in 7 catalog regions), A100 1.61365 and A100 80GB 1.846198 (us-central1).
FLEX_START_RATES = {"H100": Decimal("4.20076"), "H100-MEGA": Decimal("4.42394"), "A100": Decimal("1.61365"),
                    "A100-80GB": Decimal("1.8462")}
# Elsewhere the Flex-start rate is a fixed share of the region's on-demand rate (part B: A100 exactly 0.550,
# A100 80GB exactly 0.470 of another region's list rate of the same GPU).
FLEX_START_SHARES = {"A100": Decimal("0.55"), "A100-80GB": Decimal("0.47")}
_SAME = Decimal("0.00001")


# --- the rules as predicates -------------------------------------------------------------------------------------

def flex_start_rate(gpu: str, per_gpu: Decimal, list_rates: Iterable[Decimal]) -> bool:
    """(c) Whether a GCP GPU part's per-GPU rate is a known Flex-start rate, or the GPU's fixed Flex-start share
    of one of its on-demand `list_rates` (other regions' rates of the same GPU)."""
    known = FLEX_START_RATES.get(gpu)
    if known is not None and abs(per_gpu - known) <= _SAME:
        return True
    share = FLEX_START_SHARES.get(gpu)
    return share is not None and any(abs(per_gpu - (rate * share).quantize(_SAME)) <= _SAME for rate in list_rates)


def below_parts(on_demand: Decimal, parts: Decimal) -> bool:
    """(a) Whether a whole instance costs less than the least its parts are listed at."""
    return on_demand < parts
