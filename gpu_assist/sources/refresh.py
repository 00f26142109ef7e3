"""Price sources: how rows get into `catalogs/`, and how a better source replaces a worse one.

A `PriceSource` yields typed offer rows (`OfferRow`, a field per column of `catalog.OFFER_COLUMNS`) for one
provider; only the writer here turns them into CSV text. `refresh()` writes them to `<catalog>/<provider>.csv`
only after they pass the same checks the loader applies, through a temporary file and an atomic rename, so a
source that fails half-way leaves the previous file in use.

Shipped sources: `SkyPilotSource` (AWS, GCP, Azure, Lambda from SkyPilot's public catalog CSVs).
To replace the unverified Alibaba/Tencent/Huawei rows with verified ones, implement `PriceSource`
over that cloud's price-inquiry API (docs/data-sources.md, "Price sources") and call `refresh()`.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Protocol

from ..catalog.files import check_offers, parse_offers
from ..catalog.fx import load_fx
from ..catalog.gpus import load_gpus
from ..catalog.offers import KEY_COLUMNS, OFFER_COLUMNS
from ..errors import CatalogError
from .offer_row import OfferRow, read_rows

# A row's CSV fields as text (column → text, "" where blank): what `OfferRow.from_csv_fields` reads and
# `fields_to_csv` writes as it is.
RowFields = dict[str, str]


class PriceSource(Protocol):
    """Anything that can produce a provider's offer rows."""

    provider: str
    source: str  # key of this source in catalogs/SOURCES.md

    def rows(self) -> Iterable[OfferRow]:
        """Offer rows, typed (`OfferRow.from_csv_fields` makes one from a source's CSV fields)."""


class CountingSource(PriceSource, Protocol):
    """A source that counts what it skipped and why (`RefreshReport.skipped`)."""

    @property
    def skipped(self) -> Mapping[str, int]: ...


@dataclass
class RefreshReport:
    provider: str
    path: Path
    rows_written: int
    skipped: dict[str, int] = field(default_factory=dict)
    flagged: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        parts = [f"{self.provider}: {self.rows_written} offers → {self.path}"]
        if self.flagged:
            parts.append("flagged " + ", ".join(f"{k} {v}" for k, v in sorted(self.flagged.items())))
        if self.skipped:
            parts.append("skipped " + ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items())))
        return "; ".join(parts)


def rows_to_csv(rows: Iterable[OfferRow]) -> str:
    """The catalog file's text: the header, then the rows by GPU, instance type, region and zone."""
    return fields_to_csv(row.csv_fields() for row in rows)


def fields_to_csv(rows: Iterable[RowFields]) -> str:
    """`rows_to_csv` over rows' CSV fields as they are (a missing column is blank; a test writes any text)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(OFFER_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in sorted(rows, key=lambda r: tuple(r.get(c, "") for c in ("gpu", "instance_type", "region", "zone"))):
        writer.writerow({c: row.get(c, "") for c in OFFER_COLUMNS})
    return buffer.getvalue()


def write_offers_atomically(rows: list[OfferRow], path: Path, catalog_dir: Path) -> None:
    """Check `rows` as the loader would, then replace `path` in one rename; on any defect, leave it."""
    text = rows_to_csv(rows)
    gpus = load_gpus(catalog_dir / "gpus.csv")
    fx = load_fx(catalog_dir / "fx.csv")
    defects = check_offers(parse_offers(text, path), gpus, set(fx.per_usd))
    if defects:
        raise CatalogError(f"new rows for {path.name} do not validate, previous file kept: "
                           + "; ".join(str(d) for d in defects[:3]))
    handle, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as temp:
            temp.write(text)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def refresh(source: PriceSource, catalog_dir: Path) -> RefreshReport:
    """Fetch all rows of `source`, deduplicate exact repeats, and write them atomically.

    A source with `in_scope(row)` refreshes part of a provider (some regions or families): existing rows
    outside that scope are kept.
    """
    rows = list(source.rows())
    path = Path(catalog_dir) / f"{source.provider}.csv"
    in_scope = getattr(source, "in_scope", None)
    if in_scope is not None and path.exists():
        rows = [row for row in read_rows(path) if not in_scope(row)] + rows
    unique: dict[tuple[str, ...], OfferRow] = {}
    duplicates = 0
    for row in rows:
        fields = row.csv_fields()
        key = tuple(fields[c] for c in KEY_COLUMNS)
        if key in unique:
            duplicates += 1
            continue
        unique[key] = row
    write_offers_atomically(list(unique.values()), path, Path(catalog_dir))
    report = RefreshReport(source.provider, path, len(unique), dict(getattr(source, "skipped", {})))
    if duplicates:
        report.skipped["exact duplicate"] = report.skipped.get("exact duplicate", 0) + duplicates
    for row in unique.values():
        for flag in row.flags:
            name = f"{flag.scope}:{flag.flag.value}"
            report.flagged[name] = report.flagged.get(name, 0) + 1
    return report
