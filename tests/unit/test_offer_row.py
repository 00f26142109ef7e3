"""A price source's row is typed; only the catalog writer turns it into text, byte for byte as the files hold it."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from decimal import Decimal

import pytest
from support import CATALOGS, REPO, offer

from gpu_assist.catalog.files import NON_OFFER_FILES
from gpu_assist.facts import Derived, Flag, ScopedFlag
from gpu_assist.sources.offer_row import OfferRow, read_rows
from gpu_assist.sources.refresh import rows_to_csv


def test_a_row_holds_typed_values():
    row = OfferRow.from_csv_fields(offer(spot_hourly="9.5", flags="spot:at-on-demand-cap",
                                         notes="spot:@derived share=0.35", gpu_count="0.125"))
    assert (row.on_demand_hourly, row.spot_hourly, row.reserved_1y_hourly) == (Decimal(32), Decimal("9.5"), None)
    assert (row.gpu_count, row.billing_granularity_s, row.verified) == (Decimal("0.125"), 1, True)
    assert row.as_of == dt.date(2026, 12, 1) and row.reserved_as_of is None
    assert row.flags == (ScopedFlag("spot", Flag.AT_ON_DEMAND_CAP),)
    assert row.notes == (Derived("spot", "@derived share=0.35", Decimal("0.35")),)
    assert row.csv_fields()["verified"] == "yes" and row.csv_fields()["spot_hourly"] == "9.5"


def test_a_misspelt_column_is_refused_where_a_source_hands_its_fields_over():
    with pytest.raises(ValueError, match="not offer columns: spot_hourli"):
        OfferRow.from_csv_fields(offer(spot_hourli="1"))


def test_a_misspelt_field_is_refused():
    with pytest.raises(TypeError, match="spot_hourli"):
        OfferRow(provider="aws", region="r", instance_type="t", gpu="A100", gpu_count=Decimal(8),  # type: ignore[call-arg]
                 gpu_memory_gib=None, currency="USD", billing_granularity_s=1, source="s", as_of=None,
                 verified=True, spot_hourli=Decimal(1))


@pytest.mark.slow
def test_mypy_catches_a_misspelt_field(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from decimal import Decimal\nfrom gpu_assist.sources.offer_row import OfferRow\n"
                     "OfferRow(provider='aws', region='r', instance_type='t', gpu='A100', gpu_count=Decimal(8), "
                     "gpu_memory_gib=None, currency='USD', billing_granularity_s=1, source='s', as_of=None, "
                     "verified=True, spot_hourli=Decimal(1))\n")
    found = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(probe)], cwd=REPO,
                           capture_output=True, text=True, check=False)
    assert 'Unexpected keyword argument "spot_hourli"' in found.stdout


@pytest.mark.parametrize("path", sorted(p for p in CATALOGS.glob("*.csv") if p.name not in NON_OFFER_FILES),
                         ids=lambda p: p.name)
def test_every_bundled_catalog_is_written_back_byte_for_byte(path):
    assert rows_to_csv(read_rows(path)) == path.read_text(encoding="utf-8")


def test_a_refresh_that_keeps_a_row_it_cannot_read_stops_in_one_line_and_changes_nothing(tmp_path):
    """A part-refresh keeps the rows outside its scope: one of them with a price that is no number is the file's
    error, named by line, and the file stays as it was."""
    from gpu_assist.errors import CatalogError
    from gpu_assist.sources.refresh import refresh

    for name in ("gpus.csv", "fx.csv", "SOURCES.md"):
        (tmp_path / name).write_bytes((CATALOGS / name).read_bytes())
    path = tmp_path / "aws.csv"
    path.write_text(rows_to_csv([OfferRow.from_csv_fields(offer())]).replace(",32,", ",abc,", 1), encoding="utf-8")
    before = path.read_bytes()

    class PartSource:
        provider, source = "aws", "skypilot-aws"

        def rows(self):
            return [OfferRow.from_csv_fields(offer(region="eu-west-1"))]

        def in_scope(self, row):
            return row.region == "eu-west-1"

    with pytest.raises(CatalogError, match=r"aws\.csv:2: a value is not of its column's type.*previous file kept"):
        refresh(PartSource(), tmp_path)
    assert path.read_bytes() == before
