"""The words of the facts only plans state (`plan.plans`), registered on `notes.words` like every fact's: a
module that renders plans in any medium (`plans`, `plan_lines`, `frames`) imports this one."""

from __future__ import annotations

from decimal import Decimal

from ..plan.plans import DatasetAssumed, NoRate, OtherPackings
from ..pricing.amounts import format_count
from .comparison import format_total
from .money import format_money
from .notes import words


def cost(hourly: Decimal, total: Decimal | None, currency: str) -> str:
    """A plan's total, or its rate when the job has no length."""
    return format_money(hourly, currency) + "/h" if total is None else format_total(total, currency)


@words.register(NoRate)
def _no_rate(fact: NoRate) -> str:
    if fact.others:
        return f"no {fact.precision} rate in gpus.csv, only {', '.join(fact.others)}: ask for {fact.others[0]}"
    return f"no dense {fact.precision} rate in gpus.csv"


@words.register(OtherPackings)
def _other_packings(fact: OtherPackings) -> str:
    return "also as " + ", ".join(f"{instances:,}× {instance_type} ({where}, {cost(hourly, total, currency)})"
                                  for instances, instance_type, where, hourly, total, currency in fact.packings)


@words.register(DatasetAssumed)
def _dataset_assumed(fact: DatasetAssumed) -> str:
    return f"no tokens= given: {format_count(fact.tokens)} tokens assumed, one epoch of a general instruction mix " \
           f"the size of {fact.dataset} ({format_count(fact.samples)} samples, {fact.source}); tokens=… sets yours"
