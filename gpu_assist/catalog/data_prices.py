"""Storage and data-transfer prices (`catalogs/data_prices.csv`): what a job's disks and data cost besides its
GPUs, so a total can be the whole bill. Pure Python; the catalog loader reads the file once with the offers.

One row per provider, region pattern, item and tier:

| column | meaning |
|---|---|
| provider | `regions.PROVIDERS` |
| region | the provider's region, a pattern (`us-*`), or `*` for every region; the most specific match wins |
| item | `block`, `object` (per unit-month); `ingress`, `egress-internet`, `egress-inter-region`, `same-region` |
| unit | `GB` or `GiB`, as the source prices it |
| price | per unit (-month for storage), in `currency`; 0 for what the source says is free |
| up_to | a transfer tier's ceiling in units per month (the tiers of one item add up in order); blank: no ceiling |
| source, as_of, verified | the source's key in `catalogs/SOURCES.md`, the date it was read, yes/no |

What no row gives is unknown, never a guess: the part is said to be unknown and the option ranks after those
whose parts are known.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fnmatch import fnmatchcase
from pathlib import Path

from ..errors import CatalogError
from .providers import PROVIDERS

FILE_NAME = "data_prices.csv"
COLUMNS = ("provider", "region", "item", "unit", "price", "currency", "up_to", "source", "as_of", "verified")
ITEMS = ("block", "object", "ingress", "egress-internet", "egress-inter-region", "same-region")
UNITS = ("GB", "GiB")


@dataclass(frozen=True)
class DataPrice:
    """One row: a price per unit (per unit-month for storage), for units up to `up_to` in a month."""

    provider: str
    region: str
    item: str
    unit: str
    price: Decimal
    currency: str
    up_to: Decimal | None
    source: str
    as_of: str
    verified: bool


@dataclass(frozen=True)
class DataPrices:
    """Every row, and the lookup the core prices a job's data by."""

    rows: tuple[DataPrice, ...] = ()

    def tiers(self, provider: str, region: str, item: str) -> tuple[DataPrice, ...]:
        """The rows of `item` for `provider`'s `region` from the most specific matching region pattern (a name
        over a pattern over `*`), tiers in order; () when no source gives it."""
        matching = [row for row in self.rows if row.provider == provider and row.item == item
                    and fnmatchcase(region, row.region)]
        if not matching:
            return ()
        best = max(matching, key=lambda row: _specificity(row.region))
        return tuple(row for row in matching if row.region == best.region)


def _specificity(pattern: str) -> tuple[bool, int]:
    return ("*" not in pattern, len(pattern.replace("*", "")))


def read_data_prices(path: Path) -> DataPrices:
    """The rows of `path`, checked; CatalogError naming the file and line of the first defect."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CatalogError(f"{path}: {error}") from None
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise CatalogError(f"{path}: columns must be {','.join(COLUMNS)}")
    rows = []
    for row in reader:
        line = reader.line_num
        try:
            rows.append(_row(row))
        except (InvalidOperation, ValueError) as error:
            raise CatalogError(f"{path}:{line}: {error}") from None
    return DataPrices(tuple(rows))


def _row(row: dict[str, str]) -> DataPrice:
    if row["provider"] not in PROVIDERS:
        raise ValueError(f"unknown provider '{row['provider']}'")
    if row["item"] not in ITEMS:
        raise ValueError(f"unknown item '{row['item']}' (known: {', '.join(ITEMS)})")
    if row["unit"] not in UNITS:
        raise ValueError(f"unit must be GB or GiB, not '{row['unit']}'")
    price = Decimal(row["price"])
    up_to = Decimal(row["up_to"]) if row["up_to"] else None
    if not price.is_finite() or price < 0 or (up_to is not None and up_to <= 0):
        raise ValueError("price must be 0 or more, up_to more than 0")
    if not row["source"] or row["verified"] not in ("yes", "no"):
        raise ValueError("every row needs a source and verified yes or no")
    dt.date.fromisoformat(row["as_of"])
    return DataPrice(row["provider"], row["region"] or "*", row["item"], row["unit"], price, row["currency"], up_to,
                     row["source"], row["as_of"], row["verified"] == "yes")


def replace_rows(path: Path, rows: list[dict[str, str]]) -> int:
    """Write `rows` into the data prices file at `path` in place of the rows of the same provider, region and
    item (a refresh's), atomically (a temporary file, then a rename); the file is made when missing. Each new row
    is checked as the loader checks it first. Returns how many rows were written."""
    for row in rows:
        _row(row)
    kept: list[dict[str, str]] = []
    if path.exists():
        with path.open(newline="", encoding="utf-8") as handle:
            kept = list(csv.DictReader(handle))
    replaced = {(row["provider"], row["region"], row["item"]) for row in rows}
    merged = [row for row in kept if (row["provider"], row["region"], row["item"]) not in replaced] + rows
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({column: row.get(column, "") for column in COLUMNS} for row in merged)
    temporary.replace(path)
    return len(rows)

