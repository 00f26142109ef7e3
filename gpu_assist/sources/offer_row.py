"""One offer row as a price source yields it: typed values, one field per column of `catalog.OFFER_COLUMNS`.

Prices are `Decimal` (None where the source gives none), counts and sizes `Decimal` as written (a fraction of a
GPU is `0.125`; `80.0` GiB stays `80.0`, so a catalog's bytes do not depend on a float's repr), dates `date`,
`verified` a bool, `flags` typed `ScopedFlag`s and `notes` the catalog labels (`facts.parse_labels`). Only the
catalog writer turns a row into CSV text (`csv_fields`), and `from_csv_fields` reads one back (an existing file,
a test's dict): the round trip gives back the same text, so the bundled catalogs do not change.
"""

from __future__ import annotations

import csv
import datetime as dt
from dataclasses import dataclass, fields, replace
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path

from ..errors import CatalogError
from ..facts import CatalogLabel, ScopedFlag, parse_flags, parse_labels


@dataclass(frozen=True, slots=True, kw_only=True)
class OfferRow:
    """An offer row (`catalog.OFFER_COLUMNS`, in order); blank columns have their defaults."""

    provider: str
    region: str
    zone: str = ""
    instance_type: str
    gpu: str
    gpu_count: Decimal  # GPUs per instance; below 1 for a fraction of a GPU
    gpu_memory_gib: Decimal | None
    vcpus: Decimal | None = None
    memory_gib: Decimal | None = None
    interconnect: str = "unknown"
    currency: str
    on_demand_hourly: Decimal | None = None
    spot_hourly: Decimal | None = None
    reserved_1y_hourly: Decimal | None = None
    reserved_3y_hourly: Decimal | None = None
    monthly: Decimal | None = None
    billing_granularity_s: int
    source: str
    as_of: dt.date | None
    verified: bool
    flags: tuple[ScopedFlag, ...] = ()
    source_detail: str = ""
    country: str = ""
    continent: str = ""
    notes: tuple[CatalogLabel, ...] = ()
    reserved_source: str = ""
    reserved_as_of: dt.date | None = None
    imported: dt.date | None = None

    @classmethod
    def from_csv_fields(cls, row: dict[str, str]) -> OfferRow:
        """A row from its CSV text (a missing column is blank): what a source assembled or a test's dict holds.
        A key that names no column is refused: a misspelt one would otherwise be a blank cell."""
        unknown = sorted(set(row) - set(_COLUMNS))
        if unknown:
            raise ValueError(f"not offer columns: {', '.join(unknown)}")
        values: dict[str, object] = {}
        for name in _COLUMNS:
            text = row.get(name, "")
            kind = _KINDS.get(name)
            values[name] = text if kind is None else _READ[kind](text)
        return cls(**values)  # type: ignore[arg-type]  # each value read as its field's kind above

    def csv_fields(self) -> dict[str, str]:
        """The row as the catalog file writes it: column → text ("" where blank)."""
        return {name: _write(getattr(self, name)) for name in _COLUMNS}


def read_rows(path: Path) -> list[OfferRow]:
    """A catalog file's rows, typed (a column the catalog does not know is left out, as the loader does); a value
    that is not of its column's type is a CatalogError naming the file and line, so a refresh that keeps those rows
    stops with one line and leaves the file as it was."""
    rows = []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        for fields in reader:
            try:
                rows.append(OfferRow.from_csv_fields({c: text for c, text in fields.items() if c in _COLUMNS}))
            except (ArithmeticError, ValueError) as error:  # decimal.InvalidOperation is an ArithmeticError
                raise CatalogError(f"{path}:{reader.line_num}: a value is not of its column's type "
                                   f"({type(error).__name__}); previous file kept",
                                   hint="fix or remove the row, or refresh the whole provider") from None
    return rows


def _decimal(text: str) -> Decimal | None:
    return Decimal(text) if text.strip() else None


def _date(text: str) -> dt.date | None:
    return dt.date.fromisoformat(text) if text else None


def _int(text: str) -> int:
    return int(Decimal(text))


_READ = {"decimal": _decimal, "date": _date, "int": _int, "bool": lambda text: text == "yes",
         "flags": parse_flags, "notes": parse_labels}
_KINDS = {"gpu_count": "decimal", "gpu_memory_gib": "decimal", "vcpus": "decimal", "memory_gib": "decimal",
          "on_demand_hourly": "decimal", "spot_hourly": "decimal", "reserved_1y_hourly": "decimal",
          "reserved_3y_hourly": "decimal", "monthly": "decimal", "billing_granularity_s": "int", "as_of": "date",
          "verified": "bool", "flags": "flags", "notes": "notes", "reserved_as_of": "date",
          "imported": "date"}
_COLUMNS = tuple(f.name for f in fields(OfferRow))


def with_flag(row: OfferRow, flag: ScopedFlag) -> OfferRow:
    """The row with `flag` after its others (once)."""
    return row if flag in row.flags else replace(row, flags=(*row.flags, flag))


def sorted_flags(flags: Iterable[ScopedFlag]) -> tuple[ScopedFlag, ...]:
    """Each flag once, in the order of their text."""
    return tuple(sorted(set(flags), key=_entry))


def with_label(row: OfferRow, entry: str) -> OfferRow:
    """The row with one more label (`scope:text`, or a stated label's `entry`) after its others."""
    return replace(row, notes=(*row.notes, *parse_labels(entry)))


def csv_text(value: object) -> str:
    """A field's text in the catalog file ("" for None, `yes`/`no`, a Decimal as written, a date in ISO)."""
    return _write(value)


def _write(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, tuple):
        return ";".join(_entry(item) for item in value)
    return str(value)  # str, int, date (ISO)


def _entry(item: ScopedFlag | CatalogLabel) -> str:
    return f"{item.scope}:{item.flag.value}" if isinstance(item, ScopedFlag) else f"{item.scope}:{item.text}"
