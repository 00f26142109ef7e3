"""What the price sources over a cloud's own API, with the team's own keys, share (Tencent's CVM, Alibaba's ECS,
Huawei's ECS and BSS): the regions asked, the day the prices are observed, the backoff's pause and tries, progress
per region, what was skipped and why, and which earlier rows a refresh replaces (`in_scope`)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable

from .offer_row import OfferRow


class AccountApiSource:
    """A price source over one cloud's API for some regions; a subclass names its `provider`, its `source` key in
    SOURCES.md, and makes the rows."""

    provider: str
    source: str

    def __init__(self, regions: Iterable[str], *, today: dt.date, sleep: Callable[[float], None] = time.sleep,
                 progress: Callable[[str, int, int], None] | None = None, retries: int = 4):
        self.regions = list(regions)
        self.today = today
        self.sleep = sleep
        self.progress = progress or (lambda _region, _done, _total: None)
        self.retries = retries
        self.skipped: dict[str, int] = {}

    def in_scope(self, row: OfferRow) -> bool:
        """This refresh replaces its own earlier rows in the regions it asks; the published lists' and the
        articles' rows (region `cn`) stay."""
        return row.source == self.source and row.region in self.regions

    def _skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
