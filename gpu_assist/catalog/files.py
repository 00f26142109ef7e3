"""The catalog's CSV files: reading them, and the checks the loader and `catalog validate` share. Pure Python.

Every defect is located (`path:line: message`) for a person to fix. The checks run over the text of each field
(as written), so a file that validates loads, and `offer_values` then turns a checked row into the typed values
of a stored offer (`offers`: money in integer micro-units, the catalog's six decimal places).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from ..errors import CatalogError
from ..facts import Corrected, Derived, Flag, Replaced, ScopedFlag, SourcesDisagree, parse_flags, parse_labels
from .fx import load_fx
from .gpus import GpuTable, load_gpus
from .offers import (
    FLAG_SCOPE,
    FLAG_SCOPES,
    INTERCONNECTS,
    KEY_COLUMNS,
    NUMBER_COLUMNS,
    OFFER_COLUMNS,
    OPTIONAL_COLUMNS,
    PRICE_COLUMN,
    PRICE_COLUMNS,
)
from .providers import PROVIDERS
from .regions import location

NON_OFFER_FILES = ("gpus.csv", "fx.csv", "data_prices.csv")  # data_prices: `data_prices.py`
DEFECTS_PER_CHECK = 50  # a whole column gone wrong is reported by its first rows, not by thousands of lines
_DECIMALS_RE = re.compile(r"^\d+(\.\d{1,6})?$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

Row = dict[str, str]


@dataclass(frozen=True)
class Defect:
    """One problem in a catalog file, located for a human to fix."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        """`path:line: message`; without the line for a whole file, without the path when the message
        already says where (the loaders' own errors)."""
        if not self.path:
            return self.message
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


@dataclass(frozen=True)
class OfferFile:
    """One offers file as text: its header and its rows with the line each starts on, optional columns filled."""

    path: Path
    columns: tuple[str, ...]
    rows: tuple[tuple[int, Row], ...]


def file_problem(path: Path) -> str | None:
    """Why `path` cannot be read as a catalog file, or None when it can. Checked before any read: a directory
    fails with an OSError, and a FIFO named like a CSV file would block the reader forever."""
    if path.is_file():
        return None
    if not path.exists():  # also a symlink to nothing
        return "not found"
    return "is a directory, not a CSV file" if path.is_dir() else "is not a regular file"


def require_file(path: Path) -> Path:
    """`path`, or a CatalogError that says why it cannot be read."""
    problem = file_problem(path)
    if problem:
        raise CatalogError(f"{path}: {problem}")
    return path


def offer_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.csv") if p.name not in NON_OFFER_FILES)


def read_offer_file(path: Path) -> OfferFile:
    """One offers file (see `parse_offers`); an unreadable file is a CatalogError naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CatalogError(f"{path}:1: cannot read as CSV ({str(error).splitlines()[0]})") from None
    return parse_offers(text, path)


def parse_offers(text: str, path: Path) -> OfferFile:
    """Offers in CSV text, as if read from `path`. A row with more or fewer fields than the header is refused
    with its line (a stray comma would otherwise shift every later column); blank lines are skipped."""
    reader = csv.reader(io.StringIO(text))
    records: list[tuple[int, list[str]]] = []
    while True:
        line = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            raise CatalogError(f"{path}:{line}: cannot read as CSV ({error})") from None
        if fields:
            records.append((line, fields))
    if not records:
        raise CatalogError(f"{path}:1: cannot read as CSV (No columns to parse from file)")
    (_, header), body = records[0], records[1:]
    for line, fields in body:
        if len(fields) != len(header):
            raise CatalogError(f"{path}:{line}: {len(fields)} fields where the header has {len(header)}")
    rows = [(line, _stated(dict(zip(header, fields)))) for line, fields in body]
    columns = (*header, *(c for c in OPTIONAL_COLUMNS if c not in header))
    return OfferFile(path, columns, tuple(with_optional_columns(rows, columns)))


# Catalogs refreshed before the importer stated `Derived` as a value say it in the one sentence it wrote: read here,
# once, into the stated form (`facts.StatedLabel`), so the core decides by the label's type alone.
_WORDED_DERIVED = re.compile(r"(\w+):derived \w+ \(the source sets \w+ = ([0-9.]+) × on-demand, not a market price\)")


def _stated(row: Row) -> Row:
    if "notes" in row:
        row["notes"] = _WORDED_DERIVED.sub(lambda found: Derived.entry(found[1], share=found[2]), row["notes"])
    return row


def with_optional_columns(rows: list[tuple[int, Row]], columns: tuple[str, ...]) -> list[tuple[int, Row]]:
    """Every optional column in every row: blank, except a blank location, which the region name gives."""
    locate = "provider" in columns and "region" in columns  # else check_offers reports the missing columns
    for _, row in rows:
        for column in OPTIONAL_COLUMNS:
            row.setdefault(column, "")
        if locate and not row["country"] and not row["continent"]:
            row["country"], row["continent"] = location(row["provider"], row["region"])
    return rows


def _date_problem(text: str) -> str | None:
    """Why `text` is not a date: not written YYYY-MM-DD, or no such day (2026-13-10)."""
    if not _DATE_RE.match(text):
        return "is not YYYY-MM-DD"
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return "is not a day of the calendar (YYYY-MM-DD)"
    return None


def _bad_number(row: Row, column: str) -> bool:
    value = row[column].strip()
    required = column in ("gpu_count", "billing_granularity_s")
    return not _DECIMALS_RE.match(value) and (value != "" or required)


def _bad_scopes(text: str) -> bool:
    return any(part.split(":")[0] not in FLAG_SCOPES for part in text.split(";") if part)


def _unknown_flags(text: str) -> list[str]:
    """The reasons of `flags` that are no `facts.Flag`: an offer record could not carry them."""
    known = set(Flag)
    return [reason for part in text.split(";") if part for reason in [part.partition(":")[2]] if reason not in known]


def _reserved_as_of_message(row: Row) -> str | None:
    if not row["reserved_source"] and not row["reserved_as_of"]:
        return None
    problem = _date_problem(row["reserved_as_of"])
    return problem and f"reserved_as_of '{row['reserved_as_of']}' {problem} (required with reserved_source)"


def _whole_seconds_message(row: Row) -> str | None:
    value = row["billing_granularity_s"].strip()
    if not _DECIMALS_RE.match(value) or (Decimal(value) >= 1 and Decimal(value) % 1 == 0):
        return None  # a malformed number is reported by the number check
    return f"billing_granularity_s '{value}' is not a whole number of seconds, at least 1"


def _rules(gpus: GpuTable, currencies: set[str]) -> list[Callable[[Row], str | None]]:
    """The checks of one row, in the order a row's defects are reported: each gives a message or None."""
    known = set(gpus.specs)

    def when(bad: Callable[[Row], bool], message: Callable[[Row], str]) -> Callable[[Row], str | None]:
        return lambda row: message(row) if bad(row) else None

    def number(column: str) -> Callable[[Row], str | None]:
        return when(lambda r: _bad_number(r, column),
                    lambda r: f"{column}: '{r[column]}' is not a non-negative number with at most 6 decimals")

    return [
        when(lambda r: r["provider"] not in PROVIDERS,
             lambda r: f"unknown provider '{r['provider']}' (known: {', '.join(PROVIDERS)})"),
        when(lambda r: r["instance_type"].strip() == "", lambda r: "empty instance_type"),
        when(lambda r: r["region"].strip() == "", lambda r: "empty region"),
        when(lambda r: r["gpu"] not in known,
             lambda r: f"unknown GPU '{r['gpu']}' ({gpus.suggest(r['gpu'])}; add it to gpus.csv)"),
        *(number(column) for column in NUMBER_COLUMNS),
        when(lambda r: bool(_DECIMALS_RE.match(r["gpu_count"])) and float(r["gpu_count"]) <= 0,
             lambda r: "gpu_count must be above 0"),
        _whole_seconds_message,
        when(lambda r: all(r[c].strip() == "" for c in PRICE_COLUMNS), lambda r: "no price in any pricing model"),
        when(lambda r: r["currency"] not in currencies, lambda r: f"currency '{r['currency']}' has no rate in fx.csv"),
        when(lambda r: r["interconnect"] not in INTERCONNECTS,
             lambda r: f"interconnect '{r['interconnect']}' (use nvlink, pcie, unknown)"),
        when(lambda r: r["verified"] not in ("yes", "no"),
             lambda r: f"verified must be yes or no, not '{r['verified']}'"),
        when(lambda r: r["source"].strip() == "", lambda r: "empty source"),
        when(lambda r: bool(_date_problem(r["as_of"])) and not (r["as_of"] == "" and (r["verified"] == "no"
                                                                                       or r["imported"])),
             lambda r: f"as_of '{r['as_of']}' {_date_problem(r['as_of'])} (blank only with an imported date, or for "
                       "verified=no)"),
        when(lambda r: bool(r["imported"] and _date_problem(r["imported"])),
             lambda r: f"imported '{r['imported']}' {_date_problem(r['imported'])} (blank: not recorded)"),
        when(lambda r: _bad_scopes(r["flags"]),
             lambda r: f"flags '{r['flags']}': each flag is scope:reason, scope one of {', '.join(FLAG_SCOPES)}"),
        when(lambda r: bool(_unknown_flags(r["flags"])),
             lambda r: f"flags '{r['flags']}': unknown defect '{_unknown_flags(r['flags'])[0]}' (known: "
                       f"{', '.join(Flag)}; a new kind of defect is a member of facts.Flag)"),
        when(lambda r: _bad_scopes(r["notes"]),
             lambda r: f"notes '{r['notes']}': each note is scope:text, scope one of {', '.join(FLAG_SCOPES)}"),
        _reserved_as_of_message,
        when(lambda r: r["reserved_source"] != "" and not (r["reserved_1y_hourly"].strip()
                                                          or r["reserved_3y_hourly"].strip()),
             lambda r: "reserved_source without a reserved price"),
    ]


def check_offers(offers: OfferFile, gpus: GpuTable, currencies: set[str]) -> list[Defect]:
    """Every defect in one offers file, in line order; at most `DEFECTS_PER_CHECK` per check."""
    path = str(offers.path)
    missing = [c for c in OFFER_COLUMNS if c not in offers.columns]
    if missing:
        return [Defect(path, 1, f"missing columns: {', '.join(missing)}")]
    rules = _rules(gpus, currencies)
    found = [0] * (len(rules) + 1)
    seen: set[tuple[str, ...]] = set()
    defects: list[Defect] = []
    for line, row in offers.rows:
        for number, rule in enumerate(rules):
            message = rule(row)
            if message and found[number] < DEFECTS_PER_CHECK:
                found[number] += 1
                defects.append(Defect(path, line, message))
        key = tuple(row[c] for c in KEY_COLUMNS)
        if key in seen and found[-1] < DEFECTS_PER_CHECK:
            found[-1] += 1
            defects.append(Defect(path, line, "duplicate offer " + "/".join(key)))
        seen.add(key)
    return defects


def _number(text: str) -> float | None:
    text = text.strip()
    return float(text) if text else None


def _micros(text: str) -> int | None:
    """A price as integer millionths of its currency (exact: prices have at most six decimals)."""
    text = text.strip()
    return int(Decimal(text).scaleb(6)) if text else None


def offer_values(row: Row, strings: dict[str, str]) -> tuple[object, ...]:
    """A checked row as the values of a stored offer, in column order (`Offer.from_row` makes the record).
    Repeated strings are shared through `strings` (one object per distinct provider, region, source…), which
    keeps the compiled cache small."""
    values: list[object] = []
    for column in OFFER_COLUMNS:
        text = row[column]
        if column in PRICE_COLUMNS:
            values.append(_micros(text))
        elif column == "billing_granularity_s":
            values.append(int(Decimal(text)))
        elif column == "verified":
            values.append(text == "yes")
        elif column in NUMBER_COLUMNS:
            values.append(_number(text))
        else:
            values.append(strings.setdefault(text, text))
    return tuple(values)


def sources_in(sources_md: Path) -> set[str]:
    """Source keys: the first column of SOURCES.md's table rows, in backticks."""
    if file_problem(sources_md):
        return set()
    try:
        text = sources_md.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):  # then every source is reported as not described
        return set()
    return set(re.findall(r"^\|\s*`([^`]+)`", text, flags=re.MULTILINE))


def undescribed_sources(offers: OfferFile, known_sources: set[str]) -> Iterable[Defect]:
    """Rows whose `source` (or `reserved_source`, when given) has no entry in SOURCES.md; 20 per column."""
    for column in ("source", "reserved_source"):
        if column not in offers.columns:
            continue
        unknown = [(line, row[column]) for line, row in offers.rows if row[column] not in known_sources
                   and (row[column] != "" or column == "source")]
        for line, value in unknown[:20]:
            yield Defect(str(offers.path), line, f"{column} '{value}' is not described in SOURCES.md")


def validate_directory(directory: Path) -> list[Defect]:
    """All defects in a catalog directory: GPU table, FX table and every offers file."""
    directory = Path(directory)
    try:
        gpus = load_gpus(require_file(directory / "gpus.csv"))
        fx = load_fx(require_file(directory / "fx.csv"))
    except CatalogError as error:
        return [Defect("", 0, error.message)]  # the message names the file (and line)
    files = offer_files(directory)
    if not files:
        return [Defect(str(directory), 0, "no offer files (*.csv besides gpus.csv and fx.csv)")]
    known_sources = sources_in(directory / "SOURCES.md")
    defects: list[Defect] = []
    for path in files:
        try:
            offers = read_offer_file(require_file(path))
        except CatalogError as error:
            defects.append(Defect("", 0, error.message))
            continue
        defects.extend(check_offers(offers, gpus, set(fx.per_usd)))
        defects.extend(undescribed_sources(offers, known_sources))
    return defects


def source_disagreements(directory: Path) -> list[str]:
    """One line per offer (provider, instance type, region) where two public sources price it differently:
    the rows a `sources disagree` note labels, with both figures and dates; a price flagged for it (a GCP spot
    price the billing catalog contradicts) is not kept, and is listed with the other flags instead."""
    lines: dict[tuple[str, str, str], str] = {}
    for path in offer_files(Path(directory)):
        for _, row in read_offer_file(path).rows:
            scopes = {flag.scope for flag in parse_flags(row["flags"])}
            disagreements = [label for label in parse_labels(row["notes"])
                             if isinstance(label, SourcesDisagree) and label.scope not in scopes]
            if disagreements:
                lines.setdefault((row.get("provider", ""), row.get("instance_type", ""), row.get("region", "")),
                                 disagreements[0].text)
    return [f"{p} {i} {r}: {text}" for (p, i, r), text in sorted(lines.items())]


@dataclass(frozen=True)
class RowFacts:
    """One catalog row named (provider, instance type, region, zone) and the facts `catalog validate` lists."""

    name: tuple[str, str, str, str]
    facts: tuple[object, ...]


def corrected_rows(directory: Path) -> list[RowFacts]:
    """Every row the import corrected on a named source (`Corrected`) or whose on-demand price the provider's
    billing catalog replaced (`Replaced`), with those labels."""
    found = []
    for row in _rows(directory):
        labels = tuple(label for label in parse_labels(row["notes"]) if isinstance(label, (Corrected, Replaced)))
        if labels:
            found.append(RowFacts(_name(row), labels))
    return found


def dropped_rows(directory: Path) -> list[RowFacts]:
    """Every row no quote ranks (each of its prices has a known defect, `include-flagged` shows it), with the
    flags that say why."""
    found = []
    for row in _rows(directory):
        flags = parse_flags(row["flags"])
        priced = [model for model, column in PRICE_COLUMN.items() if row[column].strip()]
        if flags and priced and all(_flagged(flags, FLAG_SCOPE[model]) for model in priced):
            found.append(RowFacts(_name(row), flags))
    return found


def _flagged(flags: tuple[ScopedFlag, ...], scope: str) -> bool:
    return any(flag.scope in ("all", scope) for flag in flags)


def _rows(directory: Path) -> Iterable[Row]:
    for path in offer_files(Path(directory)):
        for _, row in read_offer_file(path).rows:
            yield row


def _name(row: Row) -> tuple[str, str, str, str]:
    return row.get("provider", ""), row.get("instance_type", ""), row.get("region", ""), row.get("zone", "")
