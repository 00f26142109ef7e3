"""The comparison a buyer acts on: one row per provider × instance type, pricing models side by side. Pure.

A `Quote` lists every way to buy a job (offer × pricing model, cheapest region each). `compare` regroups
those options:

- one row per provider × instance type, with the cheapest option of each pricing model as its cells;
- fewest hosts wins a tie: a row of the same provider and GPU that needs more hosts for the same GPUs at the
  same per-GPU price in every pricing model it offers is folded into the row with fewer hosts ("also as 8×
  a2-highgpu-1g"); a dearer one keeps its own row;
- verified first: rows without a verified, current price (seed-article list prices, prices older than the
  staleness limit) go to a section of their own unless the user asked for them (`include-unverified`, or a
  `provider=` naming them), or unless nothing verified is left;
- ranked by the price a buyer can count on (`Ranking`): without `spot` asked, a row's figure is its cheapest
  way to buy that cannot be taken away during the job (on-demand, a term, monthly; a marketplace ask with
  them, labelled), and a spot price stays in its column; with `spot` asked, the expected cost of the job on
  spot (its total × (1 + the interruption overhead `pricing.spot_risk` gives it)). N GPUs in one host rank
  ahead of splits over hosts, and a row with no such price (spot only) after those that have one;
- rows sorted by that figure (or `sort=price|per-gpu|provider`).

`refine` applies the filters and the sort to the flat list (`list`, `--format json`), with the same
verified-first rule; `group_key` names the comparison row each option lands in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import cached_property
from typing import Any

from enum import StrEnum

from ..facts import AlsoAs, Fact, MemoryFilter, PriceCap, PricingModel, ReservedUnknown
from .query import Query
from .quote import Quote, QuoteOption

SORTS = ("total", "price", "per-gpu", "provider")
COLUMNS = tuple(PricingModel)
_TIE = Decimal("0.005")  # prices within half a percent are one price (rounding of host + GPU sums)


class Ranking(StrEnum):
    """What a comparison's rows rank by (its header says it in words)."""

    COUNT_ON = "count-on"  # the cheapest price that cannot be taken away during the job
    EXPECTED_SPOT = "expected-spot"  # spot asked: the job's expected cost on spot


def ranking_of(request: Query) -> Ranking:
    return Ranking.EXPECTED_SPOT if PricingModel.SPOT in request.pricing_models else Ranking.COUNT_ON


def figure(option: QuoteOption) -> Decimal:
    """What an option ranks by: its whole total; on spot, the expected total with its interruption overhead."""
    if option.pricing_model == PricingModel.SPOT and option.spot_overhead is not None:
        return option.whole * (1 + Decimal(str(option.spot_overhead)))
    return option.whole


def counts_on(option: QuoteOption, ranking: Ranking) -> bool:
    """Whether the option's price is one the ranking counts on: not interruptible (spot ranking: spot)."""
    return (option.pricing_model == PricingModel.SPOT) == (ranking == Ranking.EXPECTED_SPOT)


def job_hourly(option: QuoteOption) -> Decimal:
    """What the whole job costs per hour at this option's rate (all instances)."""
    return option.hourly * option.instances


def per_gpu_rate(option: QuoteOption) -> Decimal:
    """The list price of one GPU-hour on this instance type (idle GPUs do not lower it)."""
    return option.hourly / option.gpu_count


def _sort_key(sort: str, option: QuoteOption) -> tuple[Any, ...]:
    if sort == "price":
        return (job_hourly(option), option.total)
    if sort == "per-gpu":
        return (per_gpu_rate(option), option.total)
    if sort == "provider":
        return (option.provider, option.whole)
    # the whole job; unknown parts after; one host before a split
    return (not option.parts_known, option.instances > 1, figure(option), option.instances)


def asked_for_untrusted(quote: Quote, include_unverified: bool) -> set[str]:
    """Providers whose unverified, stale or derived prices the user asked to see ranked: all of them with
    `include-unverified` or when nothing trusted is left, else those named with `provider=`."""
    providers = {o.provider for o in quote.options}
    if include_unverified or not any(o.trusted for o in quote.options):
        return providers
    return set(quote.request.providers) & providers


def refine(quote: Quote, *, sort: str = "total", max_price: Decimal | None = None,
           min_gpu_memory_gib: float | None = None, include_unverified: bool = False) -> Quote:
    """The quote's options filtered (`max-price=` per job-hour, `min-gpu-memory=` GiB) and sorted, trusted
    prices first unless asked for; each filter that removes options says so in the notices, and the one that
    removes the last of them is the quote's `empty_reason`, which every face shows (the CLI's JSON on stderr)."""
    options, notices = list(quote.options), list(quote.notices)
    emptied_by: Fact | None = None
    if min_gpu_memory_gib is not None:
        kept = [o for o in options if o.gpu_memory_gib >= min_gpu_memory_gib]
        if len(kept) < len(options):
            largest = None if kept else max((o.gpu_memory_gib for o in options), default=0)
            emptied_by = MemoryFilter(min_gpu_memory_gib, len(options) - len(kept), quote.request.gpu, largest)
        options = kept
    if max_price is not None:
        kept = [o for o in options if job_hourly(o) <= max_price]
        if len(kept) < len(options):
            cheapest = None if kept else min((job_hourly(o) for o in options), default=None)
            notices += [emptied_by] if emptied_by else []
            emptied_by = PriceCap(max_price, quote.currency, len(options) - len(kept), cheapest)
        options = kept
    if options and emptied_by:
        notices.append(emptied_by)
    ranked, ranking = asked_for_untrusted(quote, include_unverified), ranking_of(quote.request)
    options.sort(key=lambda o: (not (o.trusted or o.provider in ranked),
                                sort == "total" and not counts_on(o, ranking), _sort_key(sort, o)))
    return replace(quote, options=tuple(options), notices=tuple(notices),
                   empty_reason=quote.empty_reason or (None if options else emptied_by))


@dataclass(frozen=True)
class ComparisonRow:
    """One provider × instance type: the cheapest option of each pricing model, and what to know about it."""

    key: str  # "aws/p4d.24xlarge": the grouping key `--format json` gives each option
    provider: str
    instance_type: str
    instances: int
    gpu: str
    gpu_count: int  # per instance
    gpu_memory_gib: float
    cells: tuple[tuple[str, QuoteOption], ...]  # (pricing model, its cheapest option), in COLUMNS order
    folded: tuple[str, ...] = ()  # "8× a2-highgpu-1g": the same purchase over more hosts
    ranked: bool = True  # in the main table (False: the unverified/stale section)
    ranking: Ranking = Ranking.COUNT_ON

    def cell(self, model: str) -> QuoteOption | None:
        return next((option for cell_model, option in self.cells if cell_model == model), None)

    @cached_property
    def best(self) -> QuoteOption:
        """The cell the row ranks by: trusted prices first, then those the ranking counts on (`counts_on`), then
        the lowest `figure` (kept once known: sorting and folding ask it again)."""
        return min((o for _, o in self.cells),
                   key=lambda o: (not o.trusted, not counts_on(o, self.ranking), not o.parts_known, figure(o)))

    @property
    def counted_on(self) -> bool:
        """Whether the row has a price its ranking counts on (a spot-only row has none unless spot is asked)."""
        return counts_on(self.best, self.ranking)

    @property
    def trusted(self) -> bool:
        return any(o.trusted for _, o in self.cells)

    @property
    def notes(self) -> tuple[Fact, ...]:
        """What the reader must know about the offer itself (a pricing model's notes are the legend's)."""
        notes: list[Fact] = [n for _, o in self.cells for n in o.notes if not n.of_model]
        if self.folded:
            notes.append(AlsoAs(self.folded))
        return tuple(dict.fromkeys(notes))


@dataclass(frozen=True)
class Comparison:
    """A quote as a comparison table: ranked rows, the unverified/stale section, and what was left out."""

    quote: Quote
    rows: tuple[ComparisonRow, ...]
    untrusted: tuple[ComparisonRow, ...]
    more: int  # rows beyond `top`
    sort: str = "total"
    moved: tuple[tuple[str, str], ...] = ()  # (folded row's key, the key of the row that shows it)
    ranking: Ranking = Ranking.COUNT_ON

    def __repr__(self) -> str:
        return f"Comparison({self.quote.request.describe()}: {len(self.rows)} rows, {len(self.untrusted)} unverified)"

    @property
    def request(self) -> Query:
        return self.quote.request

    @property
    def currency(self) -> str:
        return self.quote.currency

    @property
    def columns(self) -> tuple[str, ...]:
        """On-demand, spot and both reserved terms always; monthly where some row has it."""
        models = set(self.quote.request.pricing_models or COLUMNS)
        monthly = PricingModel.MONTHLY
        shown = [m for m in COLUMNS if m in models and m != monthly]
        if monthly in models and any(r.cell(monthly) for r in self.rows + self.untrusted):
            shown.append(monthly)
        return tuple(shown)

    @property
    def notices(self) -> tuple[Fact, ...]:
        """The quote's notices, less those the table's "unknown" cells explain."""
        return tuple(n for n in self.quote.notices if not isinstance(n, ReservedUnknown))

    def rank_of(self, key: str) -> int | None:
        """The text's row number of the row `key` names (a folded row's: the row showing it); None unranked."""
        key = dict(self.moved).get(key, key)
        return next((n for n, row in enumerate(self.rows, 1) if row.key == key), None)

    def group_of(self, option: QuoteOption) -> str:
        """The key of the row that shows `option` (a folded row's options belong to the row it folded into)."""
        key = _row_key(option)
        return dict(self.moved).get(key, key)


def _row_key(option: QuoteOption) -> str:
    return f"{option.provider}/{option.instance_type}"


def _rows(options: Iterable[QuoteOption], ranked_providers: set[str], ranking: Ranking) -> list[ComparisonRow]:
    """One row per provider × instance type; ranked when it has a trusted price or its provider was asked for."""
    by_key: dict[tuple[str, str, int], dict[str, QuoteOption]] = {}
    for option in options:
        cells = by_key.setdefault((option.provider, option.instance_type, option.gpu_count), {})
        current = cells.get(option.pricing_model)
        if current is None or _cell_rank(current) > _cell_rank(option):
            cells[option.pricing_model] = option
    rows = []
    for (provider, instance_type, gpu_count), cells in by_key.items():
        first = next(iter(cells.values()))
        rows.append(ComparisonRow(
            key=f"{provider}/{instance_type}", provider=provider, instance_type=instance_type,
            instances=first.instances, gpu=first.gpu, gpu_count=gpu_count, gpu_memory_gib=first.gpu_memory_gib,
            cells=tuple((m, cells[m]) for m in COLUMNS if m in cells),
            ranked=provider in ranked_providers or any(o.trusted for o in cells.values()), ranking=ranking))
    return rows


def _cell_rank(option: QuoteOption) -> tuple[bool, bool, Decimal]:
    """Which option of a pricing model a row shows: trusted, then with every part known, then the cheapest whole."""
    return (not option.trusted, not option.parts_known, option.whole)


def _same_purchase(many: ComparisonRow, few: ComparisonRow) -> bool:
    """`many` buys the same GPUs as `few` over more hosts at the same per-GPU price (within `_TIE`) in every
    model it offers: what "also as 8× …" says. A dearer one is a choice of its own (a row), never folded: with
    the same GPUs and hours, the job's totals differ exactly as the per-GPU prices do."""
    if many.provider != few.provider or many.gpu != few.gpu or many.instances <= few.instances:
        return False
    if many.instances * many.gpu_count != few.instances * few.gpu_count:
        return False
    for model, option in many.cells:
        other = few.cell(model)
        if other is None or abs(other.total - option.total) > option.total * _TIE:
            return False
    return True


def _fold(rows: list[ComparisonRow]) -> tuple[list[ComparisonRow], dict[str, str]]:
    """Fewest hosts wins a tie; returns the rows left and where each folded row went."""
    rows = sorted(rows, key=lambda r: (r.instances, r.best.total))
    kept: list[ComparisonRow] = []
    moved: dict[str, str] = {}
    for row in rows:
        host = next((k for k in kept if _same_purchase(row, k)), None)
        if host is None:
            kept.append(row)
            continue
        index = kept.index(host)
        kept[index] = replace(host, folded=(*host.folded, f"{row.instances}× {row.instance_type}"))
        moved[row.key] = host.key
    return kept, moved


def compare(quote: Quote, *, top: int | None = None, sort: str = "total",
            include_unverified: bool = False) -> Comparison:
    """Group `quote` (all its options, see `refine`) into comparison rows, ranked, `top` rows at most."""
    ranking = ranking_of(quote.request)
    rows, moved = _fold(_rows(quote.options, asked_for_untrusted(quote, include_unverified), ranking))
    rows.sort(key=lambda r: (sort == "total" and not r.counted_on, _sort_key(sort, r.best), r.instances, r.provider,
                             r.instance_type))
    main = [r for r in rows if r.ranked]
    shown = main if top is None else main[:top]
    return Comparison(quote=quote, rows=tuple(shown), untrusted=tuple(r for r in rows if not r.ranked),
                      more=len(main) - len(shown), sort=sort, moved=tuple(moved.items()), ranking=ranking)


def in_rank_order(quote: Quote, comparison: Comparison) -> Quote:
    """`quote`'s options in the order of the comparison rows that show them (the flat list and JSON carry the
    text's order); options of unranked rows after, each keeping its place among its own."""
    ranks = {option: comparison.rank_of(comparison.group_of(option)) for option in quote.options}
    ordered = sorted(quote.options, key=lambda o: (ranks[o] is None, ranks[o] or 0))
    return replace(quote, options=tuple(ordered))
