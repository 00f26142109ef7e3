"""Offer catalogs: the CSV files in `catalogs/` → one `Catalog` of plain-Python offers.

Schema (one row per provider, region, zone, instance type and GPU configuration; `offers.OFFER_COLUMNS`):

    provider, region, zone, instance_type, gpu, gpu_count, gpu_memory_gib, vcpus, memory_gib,
    interconnect, currency, on_demand_hourly, spot_hourly, reserved_1y_hourly, reserved_3y_hourly,
    monthly, billing_granularity_s, source, as_of, verified, flags, source_detail,
    country, continent, notes, reserved_source, reserved_as_of, imported

Prices are per instance and hour (reserved: effective hourly, upfront spread over the term;
monthly: per instance and month); blank means "not offered" or "not known". `flags` lists
known data defects as `model:reason` (`spot:not-below-on-demand`, `all:zero-host-price`);
quotes leave a flagged price out unless asked to include it. `notes` lists what a reader must
know about a price that is still shown, as `model:text` (`all:marketplace offer, may be gone`)
or as a label the importer states as values (`spot:@derived share=0.35`); quotes print them. An offer
record carries both as facts (`facts.ScopedFlag`, `facts.CatalogLabel`), parsed once per distinct text.
`country`/`continent` locate the region (`regions.location`). Reserved prices may come from another
source than the row's: `reserved_source`/`reserved_as_of` then name it and its date.
`as_of` is the day the source observed the price (a catalog commit's date, a page's or an API's); blank when
the source does not say, and then `imported`, the day the row entered the catalog, is what its age counts from
(`ages`: each kind of figure has its own age limit).

The last six columns are optional in a file (older catalogs, hand-written test files): a file
without them reads as blank, with the location derived from the region name.

The loader and `catalog validate` share one set of checks (`catalog_files`), so a file that validates loads.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CatalogError
from . import cache as catalog_cache
from .data_prices import FILE_NAME as DATA_PRICES
from .data_prices import DataPrices, read_data_prices
from .files import (
    Defect,
    check_offers,
    file_problem,
    offer_files,
    offer_values,
    read_offer_file,
    require_file,
    source_disagreements,
    validate_directory,
)
from .fx import FxRates, load_fx
from .gpus import GpuTable, load_gpus
from .offers import KEY_COLUMNS, NUMBER_COLUMNS, OFFER_COLUMNS, OPTIONAL_COLUMNS, PRICE_COLUMNS, Offer

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["KEY_COLUMNS", "NUMBER_COLUMNS", "OFFER_COLUMNS", "OPTIONAL_COLUMNS", "PRICE_COLUMNS", "Catalog",
           "Defect", "FxRates", "Offer", "default_catalog_dir", "file_problem", "load_catalog", "load_fx",
           "read_catalog", "require_file", "source_disagreements", "validate_directory"]

_GPU, _GPU_COUNT, _REGION, _COUNTRY, _PROVIDER, _INSTANCE_TYPE = (OFFER_COLUMNS.index(c) for c in (
    "gpu", "gpu_count", "region", "country", "provider", "instance_type"))


def default_catalog_dir() -> Path:
    """`GPU_ASSIST_CATALOG_DIR`, else the catalogs shipped in the wheel, else the checkout's."""
    configured = os.environ.get("GPU_ASSIST_CATALOG_DIR")
    if configured:
        return Path(configured)
    package = Path(__file__).resolve().parents[1]  # gpu_assist/
    packaged = package / "_catalogs"
    if packaged.is_dir():
        return packaged
    return package.parent / "catalogs"


class Catalog:
    """Everything the pure core needs to price: offers, GPU specs and FX rates.

    The offers are kept as plain tuples in `OFFER_COLUMNS` order, money in integer micro-units (`rows`, see
    `offers`): the compiled cache pickles exactly that, and such tuples unpickle several times faster than
    records, Decimals or a DataFrame.
    The views the core reads are built on first use and kept: `offers_of(gpu)` (one GPU's `Offer` records),
    `regions`/`countries` (for region selectors) and `offers`, a pandas DataFrame for the code that wants one
    (reports, the notebook API), so a quote never imports pandas. Building a view
    gives the same value every time, so threads racing on a first use only repeat the work.
    """

    __slots__ = ("rows", "gpus", "fx", "directory", "data_prices", "_rows_by_gpu", "_by_gpu", "_places",
                 "_region_providers", "_frame")

    def __init__(self, rows: Iterable[tuple[Any, ...]], gpus: GpuTable, fx: FxRates, directory: Path,
                 data_prices: DataPrices | None = None):
        self.rows: tuple[tuple[Any, ...], ...] = tuple(rows)
        self.gpus = gpus
        self.fx = fx
        self.directory = directory
        self.data_prices = data_prices or DataPrices()  # storage and transfer prices; none: every part unknown
        self._rows_by_gpu: dict[str, list[tuple[Any, ...]]] | None = None
        self._by_gpu: dict[str, tuple[Offer, ...]] = {}
        self._places: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        self._region_providers: dict[str, tuple[str, ...]] | None = None
        self._frame: pd.DataFrame | None = None

    def __reduce__(self) -> tuple[type[Catalog], tuple[Any, ...]]:
        """Pickled as its rows, GPU table, rates and directory: the views are rebuilt on use."""
        return (Catalog, (self.rows, self.gpus, self.fx, self.directory, self.data_prices))

    def __repr__(self) -> str:
        return f"Catalog({len(self.rows)} offers, {len(self.gpus.specs)} GPUs, from {self.directory})"

    def moved_to(self, directory: Path) -> Catalog:
        """The same offers, said to come from `directory` (a cached catalog read through another path)."""
        return Catalog(self.rows, self.gpus, self.fx, directory, self.data_prices)

    def offers_of(self, gpu: str) -> tuple[Offer, ...]:
        """The whole-GPU offers of one GPU, in catalog order: every quote starts here. Records are made for the
        GPUs asked about only (a cold quote makes a few hundred, not the whole catalog)."""
        if self._rows_by_gpu is None:
            rows_by_gpu: dict[str, list[tuple[Any, ...]]] = {}
            for row in self.rows:
                if row[_GPU_COUNT] >= 1:
                    rows_by_gpu.setdefault(row[_GPU], []).append(row)
            self._rows_by_gpu = rows_by_gpu
        offers = self._by_gpu.get(gpu)
        if offers is None:
            offers = self._by_gpu[gpu] = tuple(Offer.from_row(row) for row in self._rows_by_gpu.get(gpu, ()))
        return offers

    def offers_of_type(self, provider: str, instance_type: str) -> tuple[Offer, ...]:
        """Every offer of one provider's instance type (each region and zone), as records: what approvals and the
        fleet view look up by the name a cloud gives an instance, without building the DataFrame."""
        return tuple(Offer.from_row(row) for row in self.rows
                     if row[_INSTANCE_TYPE] == instance_type and row[_PROVIDER] == provider)

    def offers_in(self, provider: str, region: str) -> tuple[Offer, ...]:
        """Every whole-GPU offer of one provider in one region, as records: what a running instance could move to."""
        return tuple(Offer.from_row(row) for row in self.rows
                     if row[_REGION] == region and row[_PROVIDER] == provider and row[_GPU_COUNT] >= 1)

    @property
    def regions(self) -> tuple[str, ...]:
        """Every region of the catalog's offers, in the order they first appear."""
        return self._regions_and_countries()[0]

    @property
    def region_providers(self) -> dict[str, tuple[str, ...]]:
        """Every region of the catalog's offers and the providers that name it (`us-east-1`: aws, lambda), in
        the order they first appear."""
        if self._region_providers is None:
            providers: dict[str, dict[str, None]] = {}
            for row in self.rows:
                providers.setdefault(row[_REGION], {})[row[_PROVIDER]] = None
            self._region_providers = {region: tuple(names) for region, names in providers.items()}
        return self._region_providers

    @property
    def countries(self) -> tuple[str, ...]:
        """Every country code the catalog's regions lie in."""
        return self._regions_and_countries()[1]

    def _regions_and_countries(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if self._places is None:
            self._places = (tuple(dict.fromkeys(row[_REGION] for row in self.rows)),
                            tuple(dict.fromkeys(row[_COUNTRY] for row in self.rows)))
        return self._places

    @property
    def offers(self) -> pd.DataFrame:
        """Every offer as a pandas DataFrame (numbers as floats, NaN where blank), built on first use."""
        if self._frame is None:
            # pandas (about 100 ms) only for the verbs that ask for the table: a quote reads `rows`
            import pandas as pd

            columns = dict(zip(OFFER_COLUMNS, zip(*self.rows))) if self.rows else {c: () for c in OFFER_COLUMNS}
            frame = pd.DataFrame({c: list(values) for c, values in columns.items()}, columns=list(OFFER_COLUMNS))
            for column in NUMBER_COLUMNS:
                scale = 1_000_000 if column in PRICE_COLUMNS else 1  # money is stored in micro-units
                frame[column] = [float("nan") if v is None else v / scale for v in columns[column]]
            frame["verified"] = frame["verified"].astype(bool)
            self._frame = frame
        return self._frame


def load_catalog(directory: Path | None = None, *, cache_dir: Path | None | str = "default") -> Catalog:
    """The catalog in `directory` (default: `default_catalog_dir()`), through the compiled cache of
    `catalog_cache` (`cache_dir=None` always reads the CSVs); defects raise CatalogError with file and line."""
    directory = Path(directory) if directory else default_catalog_dir()
    if not directory.is_dir():
        raise CatalogError(f"catalog directory {directory} " + ("is not a directory" if directory.exists() else
                                                               "not found"),
                           hint="set GPU_ASSIST_CATALOG_DIR to a folder like the bundled catalogs/ or unset it")
    cache = catalog_cache.default_cache_dir() if cache_dir == "default" else cache_dir
    # Checked before the cache hashes their bytes: a FIFO named like a CSV file would block that read forever.
    extra = [directory / DATA_PRICES] if (directory / DATA_PRICES).exists() else []
    inputs = [require_file(path) for path in [directory / "gpus.csv", directory / "fx.csv", *offer_files(directory),
                                              *extra]]
    return catalog_cache.load(directory, Path(cache) if cache else None, read_catalog, inputs, Catalog)


def read_catalog(directory: Path) -> Catalog:
    """Read and check every file of `directory`; the first defects found raise CatalogError."""
    gpus = load_gpus(require_file(directory / "gpus.csv"))
    fx = load_fx(require_file(directory / "fx.csv"))
    files = offer_files(directory)
    if not files:
        raise CatalogError(f"no offer files in {directory}")
    rows: list[tuple[Any, ...]] = []
    strings: dict[str, str] = {}
    for path in files:
        offers = read_offer_file(require_file(path))
        defects = check_offers(offers, gpus, set(fx.per_usd))
        if defects:
            shown = "; ".join(str(d) for d in defects[:3])
            more = f" (and {len(defects) - 3} more; run `gpu-assist catalog validate`)" if len(defects) > 3 else ""
            raise CatalogError(shown + more)
        rows.extend(offer_values(row, strings) for _, row in offers.rows)
    data_prices = directory / DATA_PRICES
    return Catalog(rows, gpus, fx, directory,
                   read_data_prices(require_file(data_prices)) if data_prices.exists() else None)

