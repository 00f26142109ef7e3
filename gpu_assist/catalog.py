"""Offer catalogs: the CSV files in `catalogs/` → one pandas DataFrame.

Schema (one row per provider, region, zone, instance type and GPU configuration):

    provider, region, zone, instance_type, gpu, gpu_count, gpu_memory_gib, vcpus, memory_gib,
    interconnect, currency, on_demand_hourly, spot_hourly, reserved_1y_hourly, reserved_3y_hourly,
    monthly, billing_granularity_s, source, as_of, verified, flags, source_detail,
    country, continent, notes, reserved_source, reserved_as_of

Prices are per instance and hour (reserved: effective hourly, upfront spread over the term;
monthly: per instance and month); blank means "not offered" or "not known". `flags` lists
known data defects as `model:reason` (`spot:not-below-on-demand`, `all:zero-host-price`);
quotes leave a flagged price out unless asked to include it. `notes` lists what a reader must
know about a price that is still shown, as `model:text` (`all:marketplace offer, may be gone`,
`spot:derived spot …`); quotes print them. `country`/`continent` locate the region
(`regions.location`). Reserved prices may come from another source than the row's:
`reserved_source`/`reserved_as_of` then name it and its date.

The last five columns are optional in a file (older catalogs, hand-written test files): a file
without them reads as blank, with the location derived from the region name.

The loader and `catalog validate` share one set of checks, so a file that validates loads.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from .errors import CatalogError
from .gpus import GpuTable, load_gpus
from .regions import location
from .request import PROVIDERS

OFFER_COLUMNS = (
    "provider", "region", "zone", "instance_type", "gpu", "gpu_count", "gpu_memory_gib", "vcpus", "memory_gib",
    "interconnect", "currency", "on_demand_hourly", "spot_hourly", "reserved_1y_hourly", "reserved_3y_hourly",
    "monthly", "billing_granularity_s", "source", "as_of", "verified", "flags", "source_detail",
    "country", "continent", "notes", "reserved_source", "reserved_as_of",
)
OPTIONAL_COLUMNS = ("country", "continent", "notes", "reserved_source", "reserved_as_of")
PRICE_COLUMNS = ("on_demand_hourly", "spot_hourly", "reserved_1y_hourly", "reserved_3y_hourly", "monthly")
NUMBER_COLUMNS = ("gpu_count", "gpu_memory_gib", "vcpus", "memory_gib", "billing_granularity_s") + PRICE_COLUMNS
KEY_COLUMNS = ("provider", "region", "zone", "instance_type", "gpu", "gpu_count")
FLAG_SCOPES = ("all", "on_demand", "spot", "reserved_1y", "reserved_3y", "monthly")
INTERCONNECTS = ("nvlink", "pcie", "unknown")
NON_OFFER_FILES = ("gpus.csv", "fx.csv")
_DECIMALS_RE = re.compile(r"^\d+(\.\d{1,6})?$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def default_catalog_dir() -> Path:
    """`GPU_ASSIST_CATALOG_DIR`, else the catalogs shipped in the wheel, else the checkout's."""
    configured = os.environ.get("GPU_ASSIST_CATALOG_DIR")
    if configured:
        return Path(configured)
    packaged = Path(__file__).parent / "_catalogs"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "catalogs"


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


@dataclass(frozen=True)
class FxRates:
    """Units of each currency per 1 USD, with where and when the rates are from."""

    per_usd: dict[str, Decimal]
    as_of: str
    source: str
    verified: bool

    def convert(self, amount: Decimal, from_currency: str, to_currency: str) -> Decimal:
        if from_currency == to_currency:
            return amount
        return amount / self.per_usd[from_currency] * self.per_usd[to_currency]

    def factor(self, from_currency: str, to_currency: str) -> float:
        """The same conversion as a float, for ranking only."""
        return float(self.per_usd[to_currency] / self.per_usd[from_currency])

    def describe(self, currency: str) -> str:
        rate = self.per_usd[currency]
        label = "" if self.verified else ", unverified"
        return f"{rate.normalize():f} {currency}/USD ({self.source} {self.as_of}{label})"


FX_COLUMNS = ("base", "quote", "rate", "as_of", "source", "verified")


def load_fx(path: Path) -> FxRates:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as error:
        raise CatalogError(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise CatalogError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    per_usd = {"USD": Decimal(1)}
    as_of, sources, verified = [], [], True
    for line, row in enumerate(rows, start=2):
        if any(row.get(c) in (None, "") for c in FX_COLUMNS) or row["base"] != "USD":
            raise CatalogError(f"{path}:{line}: expected base=USD and all of {', '.join(FX_COLUMNS)}")
        try:
            rate = Decimal(row["rate"])
        except ArithmeticError:
            raise CatalogError(f"{path}:{line}: bad rate '{row['rate']}'") from None
        if not rate > 0:
            raise CatalogError(f"{path}:{line}: rate must be positive")
        per_usd[row["quote"]] = rate
        as_of.append(row["as_of"])
        sources.append(row["source"])
        verified = verified and row["verified"] == "yes"
    return FxRates(per_usd, min(as_of, default=""), "+".join(dict.fromkeys(sources)), verified)


@dataclass(frozen=True)
class Catalog:
    """Everything the pure core needs to price: offers, GPU specs and FX rates."""

    offers: "pandas.DataFrame"  # noqa: F821 - pandas is imported lazily
    gpus: GpuTable
    fx: FxRates
    directory: Path
    _by_gpu: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    _records: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def __repr__(self) -> str:
        return f"Catalog({len(self.offers)} offers, {len(self.gpus.specs)} GPUs, from {self.directory})"

    def offers_of(self, gpu: str):
        """The whole-GPU offers of one GPU, filtered once per catalog: every quote starts here."""
        if gpu not in self._by_gpu:
            offers = self.offers
            self._by_gpu[gpu] = offers[(offers.gpu == gpu) & (offers.gpu_count >= 1)]
        return self._by_gpu[gpu]

    def record(self, label):
        """One offer as a named tuple, by its index label (built once per GPU, then a dictionary lookup)."""
        if label not in self._records:
            gpu = self.offers.at[label, "gpu"]
            frame = self.offers_of(gpu)
            self._records.update(zip(frame.index, frame.itertuples(index=False)))
            if label not in self._records:  # an offer outside offers_of (fractional GPUs)
                self._records[label] = next(self.offers.loc[[label]].itertuples(index=False))
        return self._records[label]


def offer_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.csv") if p.name not in NON_OFFER_FILES)


def check_offers(frame, path: str, gpus: GpuTable, currencies: set[str]) -> list[Defect]:
    """Every defect in one offers file (as read with all columns as strings)."""
    missing = [c for c in OFFER_COLUMNS if c not in frame.columns and c not in OPTIONAL_COLUMNS]
    if missing:
        return [Defect(path, 1, f"missing columns: {', '.join(missing)}")]
    frame = with_optional_columns(frame)
    defects: list[Defect] = []

    def report(mask, message) -> None:
        for index in frame.index[mask][:50]:
            value = message(frame.loc[index]) if callable(message) else message
            defects.append(Defect(path, int(index) + 2, value))

    report(~frame.provider.isin(PROVIDERS),
           lambda r: f"unknown provider '{r.provider}' (known: {', '.join(PROVIDERS)})")
    report(frame.instance_type.str.strip() == "", "empty instance_type")
    report(frame.region.str.strip() == "", "empty region")
    known = set(gpus.specs)
    report(~frame.gpu.isin(known), lambda r: f"unknown GPU '{r.gpu}' ({gpus.suggest(r.gpu)}; add it to gpus.csv)")
    for column in NUMBER_COLUMNS:
        values = frame[column].str.strip()
        required = column in ("gpu_count", "billing_granularity_s")
        bad = ~values.str.match(_DECIMALS_RE) & ((values != "") | required)
        report(bad, lambda r, c=column: f"{c}: '{r[c]}' is not a non-negative number with at most 6 decimals")
    counts = frame.gpu_count.where(frame.gpu_count.str.match(_DECIMALS_RE), "1").astype(float)
    report(counts <= 0, "gpu_count must be above 0")
    no_price = (frame[list(PRICE_COLUMNS)].apply(lambda col: col.str.strip()) == "").all(axis=1)
    report(no_price, "no price in any pricing model")
    report(~frame.currency.isin(currencies), lambda r: f"currency '{r.currency}' has no rate in fx.csv")
    report(~frame.interconnect.isin(INTERCONNECTS),
           lambda r: f"interconnect '{r.interconnect}' (use nvlink, pcie, unknown)")
    report(~frame.verified.isin(("yes", "no")), lambda r: f"verified must be yes or no, not '{r.verified}'")
    report(frame.source.str.strip() == "", "empty source")
    bad_date = ~frame.as_of.str.match(_DATE_RE) & ~((frame.as_of == "") & (frame.verified == "no"))
    report(bad_date, lambda r: f"as_of '{r.as_of}' is not YYYY-MM-DD (blank only for verified=no)")
    scopes = frame["flags"].str.split(";").map(lambda parts: [p.split(":")[0] for p in parts if p])
    report(scopes.map(lambda s: any(x not in FLAG_SCOPES for x in s)).astype(bool),
           lambda r: f"flags '{r['flags']}': each flag is scope:reason, scope one of {', '.join(FLAG_SCOPES)}")
    note_scopes = frame["notes"].str.split(";").map(lambda parts: [p.split(":")[0] for p in parts if p])
    report(note_scopes.map(lambda s: any(x not in FLAG_SCOPES for x in s)).astype(bool),
           lambda r: f"notes '{r['notes']}': each note is scope:text, scope one of {', '.join(FLAG_SCOPES)}")
    reserved = (frame.reserved_1y_hourly.str.strip() != "") | (frame.reserved_3y_hourly.str.strip() != "")
    report((frame.reserved_source != "") & ~frame.reserved_as_of.str.match(_DATE_RE),
           lambda r: f"reserved_as_of '{r.reserved_as_of}' is not YYYY-MM-DD (required with reserved_source)")
    report((frame.reserved_source != "") & ~reserved, "reserved_source without a reserved price")
    duplicated = frame.duplicated(list(KEY_COLUMNS), keep="first")
    report(duplicated, lambda r: "duplicate offer " + "/".join(str(r[c]) for c in KEY_COLUMNS))
    return sorted(defects, key=lambda d: d.line)


def with_optional_columns(frame):
    """`frame` with every optional column: blank, except a blank location, which the region name gives."""
    missing = [c for c in OPTIONAL_COLUMNS if c not in frame.columns]
    if missing:
        frame = frame.assign(**{c: "" for c in missing})
    if "provider" not in frame.columns or "region" not in frame.columns:
        return frame  # check_offers reports the missing columns
    unlocated = (frame.country == "") & (frame.continent == "")
    if unlocated.any():
        frame = frame.copy()
        located = [location(p, r) for p, r in zip(frame.provider[unlocated], frame.region[unlocated])]
        frame.loc[unlocated, "country"] = [c for c, _ in located]
        frame.loc[unlocated, "continent"] = [k for _, k in located]
    return frame


def read_offer_file(path: Path):
    """One offers file as strings. A row with more or fewer fields than the header is refused with its line:
    pandas would otherwise take a surplus field in the first row as an index and shift every column."""
    import io

    import pandas as pd

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CatalogError(f"{path}:1: cannot read as CSV ({str(error).splitlines()[0]})") from None
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    for line, row in enumerate(rows, start=2):
        if row and header and len(row) != len(header):
            raise CatalogError(f"{path}:{line}: {len(row)} fields where the header has {len(header)}")
    try:
        return with_optional_columns(pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise CatalogError(f"{path}:1: cannot read as CSV ({str(error).splitlines()[0]})") from None


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
            frame = read_offer_file(require_file(path))
        except CatalogError as error:
            defects.append(Defect("", 0, error.message))
            continue
        defects.extend(check_offers(frame, str(path), gpus, set(fx.per_usd)))
        for column in ("source", "reserved_source"):
            if column not in frame.columns:
                continue
            unknown = ~frame[column].isin(known_sources)
            if column == "reserved_source":  # blank: the row's own source prices the terms
                unknown &= frame[column] != ""
            for index in frame.index[unknown][:20]:
                defects.append(Defect(str(path), int(index) + 2,
                                      f"{column} '{frame[column][index]}' is not described in SOURCES.md"))
    return defects


def source_disagreements(directory: Path) -> list[str]:
    """One line per offer (provider, instance type, region) where two public sources price it differently:
    the rows a `sources disagree` note labels, with both figures and dates."""
    lines = {}
    for path in offer_files(Path(directory)):
        frame = read_offer_file(path)
        for row in frame[frame["notes"].str.contains("sources disagree", regex=False)].itertuples(index=False):
            text = next(n.partition(":")[2] for n in row.notes.split(";") if "sources disagree" in n)
            lines.setdefault((row.provider, row.instance_type, row.region), text)
    return [f"{p} {i} {r}: {text}" for (p, i, r), text in sorted(lines.items())]


def sources_in(sources_md: Path) -> set[str]:
    """Source keys: the first column of SOURCES.md's table rows, in backticks."""
    if file_problem(sources_md):
        return set()
    try:
        text = sources_md.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):  # then every source is reported as not described
        return set()
    return set(re.findall(r"^\|\s*`([^`]+)`", text, flags=re.MULTILINE))


def load_catalog(directory: Path | None = None, *, cache_dir: Path | None | str = "default") -> Catalog:
    """The catalog in `directory` (default: `default_catalog_dir()`), through the compiled cache of
    `catalog_cache` (`cache_dir=None` always reads the CSVs); defects raise CatalogError with file and line."""
    from . import catalog_cache

    directory = Path(directory) if directory else default_catalog_dir()
    if not directory.is_dir():
        raise CatalogError(f"catalog directory {directory} " + ("is not a directory" if directory.exists() else
                                                               "not found"),
                           hint="set GPU_ASSIST_CATALOG_DIR to a folder like the bundled catalogs/ or unset it")
    cache_dir = catalog_cache.default_cache_dir() if cache_dir == "default" else cache_dir
    # Checked before the cache hashes their bytes: a FIFO named like a CSV file would block that read forever.
    inputs = [require_file(path) for path in [directory / "gpus.csv", directory / "fx.csv", *offer_files(directory)]]
    return catalog_cache.load(directory, cache_dir, read_catalog, inputs)


def read_catalog(directory: Path) -> Catalog:
    """Read and check every file of `directory`; the first defects found raise CatalogError."""
    import pandas as pd

    gpus = load_gpus(require_file(directory / "gpus.csv"))
    fx = load_fx(require_file(directory / "fx.csv"))
    files = offer_files(directory)
    if not files:
        raise CatalogError(f"no offer files in {directory}")
    frames = []
    for path in files:
        frame = read_offer_file(require_file(path))
        defects = check_offers(frame, str(path), gpus, set(fx.per_usd))
        if defects:
            shown = "; ".join(str(d) for d in defects[:3])
            more = f" (and {len(defects) - 3} more; run `gpu-assist catalog validate`)" if len(defects) > 3 else ""
            raise CatalogError(shown + more)
        frames.append(frame)
    offers = pd.concat(frames, ignore_index=True)
    for column in NUMBER_COLUMNS:
        offers[column] = pd.to_numeric(offers[column].replace("", None), errors="raise").astype(float)
    offers["verified"] = offers["verified"] == "yes"
    return Catalog(offers=offers, gpus=gpus, fx=fx, directory=directory)


def days_old(as_of: str, today: dt.date) -> int | None:
    """Age of a price in days, None when its date is unknown."""
    if not as_of:
        return None
    return (today - dt.date.fromisoformat(as_of)).days
