"""Currency rates (`catalogs/fx.csv`): units of each currency per 1 USD, with their date and source. Pure."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from ..errors import CatalogError, ParseError
from ..facts import Conversion, FxRate, Restated

FX_COLUMNS = ("base", "quote", "rate", "as_of", "source", "verified")


@dataclass(frozen=True)
class FxRates:
    """Units of each currency per 1 USD, with where and when the rates are from."""

    per_usd: dict[str, Decimal]
    as_of: str
    source: str
    verified: bool

    def convert(self, amount: Decimal, from_currency: str, to_currency: str) -> Decimal:
        return amount if from_currency == to_currency else self.conversion(from_currency, to_currency).apply(amount)

    def factor(self, from_currency: str, to_currency: str) -> float:
        """The same conversion as a float, for ranking only."""
        return float(self.per_usd[to_currency] / self.per_usd[from_currency])

    def restate(self, amount: Decimal, from_currency: str, to_currency: str, *,
                example: str) -> tuple[Decimal, Restated]:
        """`amount` in `to_currency`, and the conversion as a fact (`¥100,000.00 = $15,031.08 at 6.652882 CNY/USD
        (ecb-eurofxref 2026-10-30)` in words), for an answer that says which amounts it converted; ParseError
        (with `example`) when the catalog has no rate for one of the currencies."""
        missing = [code for code in (from_currency, to_currency) if code not in self.per_usd]
        if missing:
            raise ParseError(f"no FX rate for {missing[0]} in the catalog", hint=f"give the amount in {to_currency}",
                             example=example)
        converted = self.convert(amount, from_currency, to_currency)
        foreign = from_currency if from_currency != "USD" else to_currency
        return converted, Restated(amount, from_currency, converted, to_currency, self.rate(foreign))

    def rate(self, currency: str) -> FxRate:
        """The rate of `currency` per USD, with where and when it is from."""
        return FxRate(currency, self.per_usd[currency], self.source, self.as_of, self.verified)

    def conversion(self, from_currency: str, to_currency: str) -> Conversion:
        """How `convert` turns amounts in `from_currency` into `to_currency`, as a value a renderer applies."""
        if from_currency == to_currency:
            return Conversion(from_currency, to_currency, Decimal(1), Decimal(1))
        return Conversion(from_currency, to_currency, self.per_usd[from_currency], self.per_usd[to_currency])


def rate_places(amount: Decimal) -> int:
    """Decimal places a price per hour is written with: cents, or four places below one unit (sub-dollar
    GPU-hours differ in the third place). The renderers show rates so, and a filter on a rate the user gave in
    another currency (`max-price=`) compares at that figure, so what it says is what it did."""
    return 4 if amount < 1 else 2


def load_fx(path: Path) -> FxRates:
    """The rates in `path`; a defect raises CatalogError with the file and line."""
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
