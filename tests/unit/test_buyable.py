"""The first row is one a buyer can buy at that price: the cases of a buyer trying the tool on the bundled catalogs."""

from __future__ import annotations

import csv
import io
import json
import re
from decimal import Decimal

import pytest
from support import TODAY

from gpu_assist.catalog.regions import PLACEHOLDER_REGIONS
from gpu_assist.cli import main
from gpu_assist.commands import Context
from gpu_assist.commands.execute import run
from gpu_assist.commands.grammar import parse_command
from gpu_assist.facts import Labelled, LocalZone, OneHostListings, PricingModel
from gpu_assist.pricing.compare import Comparison, Ranking
from gpu_assist.pricing.query_parser import parse_request
from gpu_assist.pricing.quote import quote
from gpu_assist.render.notes import where

AWS_ZONE_ID = re.compile(r"[a-z]+\d-(?:[a-z]+\d-)?az\d+")

pytestmark = pytest.mark.usefixtures("pinned_wall_clock")


@pytest.fixture
def context(catalog):
    return Context(catalog_loader=lambda: catalog, today=lambda: TODAY, currency="USD")


def _compare(context, text: str) -> Comparison:
    result = run(parse_command(text, context.catalog.gpus), context)
    assert isinstance(result, Comparison)
    return result


@pytest.mark.parametrize("words", ["quote 8xA100 72h", "quote 8xH100 72h", "quote 8xB200 72h", "quote 1xL4 100h"])
def test_without_spot_the_first_row_ranks_by_a_price_that_cannot_be_taken_away(context, words):
    result = _compare(context, words)
    assert result.ranking == Ranking.COUNT_ON
    first = result.rows[0]
    assert first.best.pricing_model != PricingModel.SPOT and first.instances == 1
    # every row with a price a buyer can count on ranks by it, spot staying in its column
    assert all(row.best.pricing_model != PricingModel.SPOT for row in result.rows if row.counted_on)


def test_a_spot_quote_ranks_no_local_zone_and_no_outlier_first(context, catalog):
    result = _compare(context, "quote 8xB200 72h spot")
    assert result.ranking == Ranking.EXPECTED_SPOT
    for row in result.rows:
        best = row.best
        assert best.pricing_model == PricingModel.SPOT and best.spot_overhead is not None
        offer = next(o for o in catalog.offers_of_type(best.provider, best.instance_type)
                     if o.region == best.region and o.zone == best.zone)
        assert not any(isinstance(label, LocalZone) for label in offer.notes)
        assert not offer.flagged(PricingModel.SPOT)
    every = _compare(context, "quote 8xB200 72h spot all-regions")  # all-regions shows each zone, labelled
    assert any(best.zone == "use1-atl2-az1" and any(isinstance(n.label, LocalZone) for n in best.notes
                                                    if isinstance(n, Labelled))
               for best in every.quote.options)


def test_the_header_says_what_it_ranked_by(capsys):
    assert main(["quote", "8xA100", "72h"]) == 0
    assert "cheapest non-spot first" in capsys.readouterr().out.splitlines()[0]
    assert main(["quote", "8xA100", "72h", "spot"]) == 0
    assert "expected spot cost first" in capsys.readouterr().out.splitlines()[0]


def test_every_split_says_network_and_every_json_row_its_rank(capsys):
    assert main(["quote", "8xA100", "72h", "--format", "json"]) == 0
    options = json.loads(capsys.readouterr().out)
    assert options and all(o["interconnect"] == "network" for o in options if o["instances"] > 1)
    ranks = [o["rank"] for o in options if o["rank"] is not None]
    assert ranks == sorted(ranks) and ranks[0] == 1
    assert options[0]["pricing_model"] != "spot"


def test_a_marketplace_listing_is_one_host_in_quote_as_in_recommend(context):
    result = _compare(context, "quote 512xH100 1mo")
    assert all(row.provider not in ("vast", "lium", "primeintellect") for row in result.rows + result.untrusted)
    assert any(isinstance(n, OneHostListings) and n.listings > 0 for n in result.quote.notices)


@pytest.mark.parametrize("words", ["quote 8xA100 72h", "quote 8xH100 72h", "quote 8xB200 72h spot",
                                   "quote 1xL4 100h", "quote 8xH100 72h provider=hyperbolic"])
def test_where_is_a_place_a_buyer_can_use(capsys, words):
    assert main([*words.split(), "--format", "json"]) == 0
    options = json.loads(capsys.readouterr().out)
    assert main([*words.split(), "--format", "csv"]) == 0
    for row in csv.DictReader(io.StringIO(capsys.readouterr().out)):
        assert row["where"] not in PLACEHOLDER_REGIONS and not AWS_ZONE_ID.fullmatch(row["where"]), row
        if row["provider"] in ("lambda", "oci"):
            assert row["where"].startswith("any of "), row
    for option in options:
        assert option["regions"] >= 1


def test_one_price_in_every_region_is_said_once(context):
    result = _compare(context, "quote 8xA100 72h")
    lambda_row = next(row for row in result.rows if row.provider == "lambda")
    assert lambda_row.best.regions == 17
    assert where(lambda_row.best) == "any of 17 regions"


def test_a_gcp_spot_price_the_billing_catalog_contradicts_is_flagged_and_unranked(catalog):
    """a3-highgpu-8g in us-east4: SkyPilot's spot $20.04/h, the bundled billing-catalog extract (gcp_cud.csv,
    hour_spot) $36.32/h: more than 10 % apart, so flagged, both figures named, and never ranked."""
    rows = [o for o in catalog.offers_of_type("gcp", "a3-highgpu-8g") if o.region == "us-east4"]
    assert rows
    for offer in rows:
        billing = Decimal("36.3208366027397")
        within = abs(offer.spot_hourly - billing) <= billing * Decimal("0.1")
        assert within or offer.flagged(PricingModel.SPOT)
        assert within or any("gcp-cud $36.320837/h" in label.text for label in offer.notes_for(PricingModel.SPOT))
    result = quote(parse_request("8xH100 72h spot region=us-east4", catalog.gpus), catalog, today=TODAY)
    assert not any(o.provider == "gcp" and o.instance_type == "a3-highgpu-8g" for o in result.options)
