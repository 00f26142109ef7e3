"""What to price: `Query`, the request every face builds (from words through `query_parser`, from a button or a
stored command through its fields), and the units and bounds its values keep. A module apart from the parser so
that what only reads a request (the quote, the renderers, the lifecycle) does not load the grammar's tables."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, TypeVar

from ..facts import PricingModel

T = TypeVar("T")

PRICING_MODELS = tuple(PricingModel)
CURRENCIES = ("USD", "CNY")

HOUR_S = 3600
HOURS_PER_MONTH = 730  # 8760 / 12, as the clouds' monthly estimates use
MONTH_S = HOURS_PER_MONTH * HOUR_S
MAX_GPUS = 100_000
YEAR_S = 8760 * HOUR_S
MIN_DURATION_S, MAX_DURATION_S = 60, 5 * YEAR_S  # every duration the grammar takes: 1 minute to 5 years


def is_duration_s(value: object) -> bool:
    """Whether `value` is a duration the grammar could have read: whole seconds within its bounds. What a button,
    a stored command or a form carries back is checked by this, so no face keeps bounds of its own."""
    return type(value) is int and MIN_DURATION_S <= value <= MAX_DURATION_S


@dataclass(frozen=True)
class Query:
    """What to price: `count` GPUs of one kind for `duration_s`, with optional filters."""

    gpu: str
    count: int = 1
    duration_s: int = HOUR_S
    pricing_models: tuple[PricingModel, ...] = ()
    regions: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    currency: str | None = None
    assumptions: tuple[str, ...] = field(default=(), compare=False)
    duration_given: bool = field(default=True, compare=False)  # False: `duration_s` is the 1 hour assumed
    variants: tuple[str, ...] = ()  # the GPU's other memory sizes, priced where its own is not offered

    @property
    def gpus(self) -> tuple[str, ...]:
        """Every GPU this request accepts: its own, then its other memory sizes when no size was named."""
        return (self.gpu, *self.variants)

    def describe(self) -> str:
        return f"{self.count}x{self.gpu} for {format_duration(self.duration_s)}"

    def narrowed(self, *, pricing_models: Iterable[PricingModel] = (), regions: Iterable[str] = (),
                 providers: Iterable[str] = (), currency: str | None = None) -> Query:
        """This request with filters given apart from its words (a CLI flag, a widget), as if they followed them:
        lists grow (duplicates dropped), a currency replaces the request's own."""
        return replace(self, pricing_models=_unique(self.pricing_models, pricing_models),
                       regions=_unique(self.regions, regions), providers=_unique(self.providers, providers),
                       currency=currency or self.currency)


def _unique(first: Iterable[T], more: Iterable[T]) -> tuple[T, ...]:
    return tuple(dict.fromkeys([*first, *more]))


def format_duration(seconds: int) -> str:
    """Hours where exact (72h, 168h), else minutes (90m), else seconds."""
    for unit, size in (("h", HOUR_S), ("m", 60)):
        if seconds % size == 0 and seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
