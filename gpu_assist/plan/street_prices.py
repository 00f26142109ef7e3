"""What one GPU sells for, new, as published: the yardstick `tco` holds a price per GPU against, so that a server's
price typed as a GPU's (`tco 8xH100 hardware=300k`, eight times too much) is asked about rather than believed.

Each figure is the top of the range its source gives (a check that a price is far too high must not fire on a
price a buyer can really pay), with the source's address and the date it gives; every one was read on
2026-12-06. No vendor publishes a list price for its data-centre GPUs: these are press and analyst figures, a
yardstick and never a quote. A GPU no source prices is left out, and its prices are taken as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import urlsplit


@dataclass(frozen=True)
class StreetPrice:
    """One GPU's price, new, in US dollars, as `source` published it on `as_of` (`said`: its words)."""

    gpu: str
    usd: Decimal
    source: str
    said: str
    as_of: str

    @property
    def publisher(self) -> str:
        """The source's site, as an error names it (`aiinframap.com`); the address is in the table."""
        return urlsplit(self.source).netloc.removeprefix("www.")


# How far above its street price a price per GPU may be before `tco` asks whether it was a server's.
PLAUSIBLE_FACTOR = 2

STREET_PRICES = {price.gpu: price for price in (
    StreetPrice("A100", Decimal(20_000), "https://ddags.com/nvidias-massive-a100-gpu-isnt-for-you-upscaled-mini/",
                "expected to cost around $20,000 at its launch", "2020-05"),
    StreetPrice("A100-80GB", Decimal(15_000), "https://www.aitooldiscovery.com/ai-infra/nvidia-a100-specs-price",
                "new A100 80GB units cost $8,000-$15,000 in 2026", "2026-03-20"),
    StreetPrice("H100", Decimal(30_000), "https://www.aiinframap.com/tools/chips/h100-vs-h200-vs-b200-tco",
                "mid-2026 typical street price: H100 about $30,000 per GPU", "2026-06"),
    StreetPrice("H200", Decimal(35_000), "https://www.aiinframap.com/tools/chips/h100-vs-h200-vs-b200-tco",
                "mid-2026 typical street price: H200 about $35,000 per GPU", "2026-06"),
    StreetPrice("B200", Decimal(40_000),
                "https://briefbriefing.com/2024/10/03/nvidia-ceo-jensen-huang-says-demand-for-next-generation-"
                "blackwell-ai-chip-is-insane", "Blackwell expected to cost $30,000-$40,000 per unit (CNBC)",
                "2024-10-03"),
    StreetPrice("RTX4090", Decimal(1_599),
                "https://www.pcgamer.com/nvidia-geforce-rtx-4090-release-date-price-specs-performance/",
                "RTX 4090 price: $1,599", "2022-09-21"),
)}
