"""DataFrames for notebook users: the core's records as columns pandas computes with.

The core keeps money and billed hours as exact `Decimal`s (JSON and the faces print them exactly). In a
DataFrame a column of Decimals is an `object` column: sums are slow, plots and `describe()` refuse it. So
here such a column becomes float64, NaN where a value is missing; the exact figures stay in the objects.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import pandas as pd


def records_frame(records: Iterable[dict[str, Any]], columns: list[str] | None = None) -> pd.DataFrame:
    """`records` as a pandas DataFrame, every column of Decimals (and Nones) as float64."""
    frame = pd.DataFrame(list(records), columns=columns)
    for name in frame.columns:
        values = frame[name]
        if values.dtype == object and values.map(lambda v: isinstance(v, Decimal)).any() and \
                values.map(lambda v: v is None or isinstance(v, Decimal)).all():
            frame[name] = [math.nan if v is None else float(v) for v in values]
    return frame
