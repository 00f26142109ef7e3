"""Why a commitment was or was not planned from recorded use (`team/commitments.py`). Pure."""

from __future__ import annotations

from decimal import Decimal

from .catalog import PricingModel
from .fact import Fact


class CommitUnsteady(Fact):
    """The history's lowest month used fewer hours than one committed instance needs to break even."""

    lowest_hours: Decimal
    needed_hours: Decimal
    model: PricingModel


class CommitHistoryShort(Fact):
    """The history has `months` whole months where `wanted` were asked for (or a 3-year term needs)."""

    months: int
    wanted: int


class CommitNoPrice(Fact):
    """The catalog has no verified price of this term for the instance type in its region."""

    model: PricingModel


class CommitNoHistory(Fact):
    """No launch recorded in the whole months before this one."""

    months: int
