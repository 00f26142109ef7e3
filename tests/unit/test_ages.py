"""A price's date and age, as a buyer meets them: each kind of figure has its own age limit, an undated figure
ages from its import, and a figure past its limit ranks after every figure within its own."""

from __future__ import annotations

import csv
import datetime as dt

from support import CATALOGS, TODAY, offer

from gpu_assist.catalog.ages import AGE_LIMIT_DAYS, FigureKind, StaleFigure, UndatedFigure, figure_kind
from gpu_assist.facts import PricingModel, Stale
from gpu_assist.pricing.compare import compare, refine
from gpu_assist.pricing.query_parser import parse_request
from gpu_assist.pricing.quote import quote
from gpu_assist.render.notes import said


def _compare(catalog, text, today=TODAY):
    return compare(refine(quote(parse_request(text, catalog.gpus), catalog, today=today)))


def _days_before(days: int) -> str:
    return (TODAY - dt.timedelta(days=days)).isoformat()


def test_each_kind_of_figure_has_its_own_limit(catalog):
    assert AGE_LIMIT_DAYS == {FigureKind.LIST: 180, FigureKind.SPOT: 30, FigureKind.ASK: 7}
    aws = next(o for o in catalog.offers_of("A100") if o.provider == "aws")
    vast = next(o for o in catalog.offers_of("A100") if o.provider == "vast")
    assert figure_kind(aws, PricingModel.ON_DEMAND) == figure_kind(aws, PricingModel.RESERVED_3Y) == FigureKind.LIST
    assert figure_kind(aws, PricingModel.SPOT) == FigureKind.SPOT
    assert figure_kind(vast, PricingModel.ON_DEMAND) == FigureKind.ASK  # a host's ask, whatever its model


def test_a_figure_is_fresh_up_to_its_limit_and_stale_the_day_after(make_catalog):
    for days, kind in ((180, "on-demand"), (30, "spot")):
        for age, stale in ((days, False), (days + 1, True)):
            catalog = make_catalog(offer(on_demand_hourly="32", spot_hourly="10", as_of=_days_before(age)))
            option = quote(parse_request(f"8xA100 1h {kind}", catalog.gpus), catalog, today=TODAY).options[0]
            assert any(isinstance(n, Stale) for n in option.notes) is stale, (kind, age)


def test_a_stale_marketplace_ask_ranks_after_a_fresh_on_demand_price(make_catalog):
    catalog = make_catalog(
        offer(provider="vast", region="Texas, US, NA", instance_type="8x-A100", on_demand_hourly="8",
              billing_granularity_s="3600", source="skypilot-vast", as_of="", imported=_days_before(10)),
        offer(provider="lambda", region="us-east-1", instance_type="gpu_8x_a100", on_demand_hourly="14",
              billing_granularity_s="60", source="skypilot-lambda", as_of=_days_before(10)))
    result = _compare(catalog, "8xA100 72h")
    assert [r.provider for r in result.rows] == ["lambda"]  # 10 days is young for a list price
    (ask,) = result.untrusted
    assert ask.provider == "vast"
    assert "stale: price undated, imported 2026-11-22 (10 days old; limit 7)" in said(ask.notes)
    assert "price date unknown (imported 2026-11-22)" in said(ask.notes)
    fresh = _compare(catalog, "8xA100 72h", today=TODAY - dt.timedelta(days=5))
    assert [r.provider for r in fresh.rows] == ["vast", "lambda"]  # 5 days old: the ask is still ranked


def test_an_undated_figure_says_so_and_ages_from_its_import(make_catalog):
    catalog = make_catalog(offer(as_of="", imported=_days_before(40), spot_hourly="10"))
    option = quote(parse_request("8xA100 1h spot", catalog.gpus), catalog, today=TODAY).options[0]
    assert UndatedFigure(_days_before(40)) in option.notes
    assert StaleFigure(_days_before(40), 40, False, 30, False) in option.notes


def test_a_reserved_term_from_its_own_source_is_dated_by_it(make_catalog):
    catalog = make_catalog(offer(as_of="", imported=_days_before(1), reserved_3y_hourly="12",
                                 reserved_source="aws-reserved-3y", reserved_as_of=_days_before(200)))
    option = quote(parse_request("8xA100 3y reserved-3y", catalog.gpus), catalog, today=TODAY).options[0]
    assert StaleFigure(_days_before(200), 200, True, 180, True) in option.notes
    assert not any(isinstance(n, UndatedFigure) for n in option.notes)  # the term's own source gives its date


def test_no_skypilot_row_is_dated_by_its_import():
    """The bundled extracts name their commits but not the commits' dates: a SkyPilot row leaves as_of blank
    (date unknown) and says when it was imported, rather than passing its import day off as the price's date."""
    for path in sorted(CATALOGS.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row.get("source", "").startswith("skypilot-"):
                    assert row["imported"] and row["as_of"] != row["imported"], (path.name, row["instance_type"])


def test_catalog_status_counts_stale_rows_by_their_kinds_limit(make_catalog):
    from gpu_assist.catalog.report import provider_status

    catalog = make_catalog(
        offer(instance_type="a", as_of="", imported=_days_before(40)),  # on-demand only: a list price, fresh
        offer(instance_type="b", as_of="", imported=_days_before(40), spot_hourly="10"))  # its spot is stale
    (status,) = provider_status(catalog, TODAY).to_dict("records")
    assert status["stale"] == 1 and status["age_days"] == 40
    assert status["sources"] == "skypilot-aws undated"  # and its age counts from the import


def test_a_row_needs_an_observed_or_an_imported_date(make_catalog):
    from gpu_assist.catalog import validate_directory

    directory = make_catalog(offer(instance_type="none", as_of="", imported=""),
                             offer(instance_type="bad", as_of="", imported="2026-13-01"),
                             offer(instance_type="undated", as_of="", imported="2026-12-01"), load=False)
    messages = "\n".join(str(d) for d in validate_directory(directory))
    assert "as_of '' is not YYYY-MM-DD (blank only with an imported date, or for verified=no)" in messages
    assert "imported '2026-13-01' is not a day of the calendar (YYYY-MM-DD) (blank: not recorded)" in messages
    assert messages.count("\n") == 1  # the undated row with its import date is valid
