"""Actual AWS cost of gpu-assist's launches from Cost Explorer, by the cost tag gpu-assist puts on them.

Cost Explorer reports a tag's cost only once the tag is activated as a cost allocation tag, and a day or so
late; its figures are shown beside gpu-assist's own (approved price × hours), never instead of them.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TypedDict

from ..team.periods import Period
from .sdk.aws import BotoClient, explain
from .tags import REQUEST_TAG

METRIC = "UnblendedCost"


class ActualCost(TypedDict):
    """What Cost Explorer billed in a period, by the value of one cost allocation tag."""

    by_tag: dict[str, Decimal]  # tag value ("(untagged)" for none) → cost
    total: Decimal
    currency: str
    estimated: bool  # the period is not closed yet
    tag: str
    note: str  # why there is nothing, when there is nothing


def actual_cost(ce: BotoClient, period: Period, *, tag_key: str = REQUEST_TAG) -> ActualCost:
    """The period's cost by `tag_key`'s value, from Cost Explorer's monthly figures."""
    start = period.start.date()
    end = max(period.end.date() + dt.timedelta(days=1 if period.end.time() != dt.time() else 0),
              start + dt.timedelta(days=1))
    by_tag: dict[str, Decimal] = {}
    unit, estimated, token = "", False, None
    try:
        while True:
            kwargs: dict[str, object] = {
                "TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()}, "Granularity": "MONTHLY",
                "Metrics": [METRIC], "GroupBy": [{"Type": "TAG", "Key": tag_key}]}
            if token:
                kwargs["NextPageToken"] = token
            page = ce.get_cost_and_usage(**kwargs)
            for result in page.get("ResultsByTime", []):
                estimated = estimated or bool(result.get("Estimated"))
                for group in result.get("Groups", []):
                    value = group["Keys"][0].split("$", 1)[-1] or "(untagged)"  # keys read "tag-key$value"
                    metric = group["Metrics"][METRIC]
                    unit = unit or metric.get("Unit", "")
                    by_tag[value] = by_tag.get(value, Decimal(0)) + Decimal(metric["Amount"])
            token = page.get("NextPageToken")
            if not token:
                break
    except Exception as error:  # noqa: BLE001 - botocore's errors become one message for the user
        if type(error).__module__.startswith("botocore"):
            raise explain(error, "reading Cost Explorer") from None
        raise
    note = "" if by_tag else f"Cost Explorer has no cost for tag {tag_key} in this period (is it an activated " \
                              "cost allocation tag?)"
    return ActualCost(by_tag=by_tag, total=sum(by_tag.values(), Decimal(0)), currency=unit or "USD",
                      estimated=estimated, tag=tag_key, note=note)
