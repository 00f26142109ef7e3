"""Buy-or-rent arithmetic: the seed article's worked example, and the catalog's cloud rate."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpu_assist.errors import ParseError
from gpu_assist.tco import cheapest_cloud_rate, parse_tco, total_cost_of_ownership

SEED = "tco 1xA100 hardware=100k facility=20k power=15k ops=50k currency=CNY usage=200h/mo cloud=12"


def test_seed_example_first_year_is_185k_cny(catalog):
    result = total_cost_of_ownership(parse_tco(SEED, catalog.gpus), catalog)
    assert result.own_first_year == Decimal(185_000)
    assert result.inputs.currency == "CNY"
    assert result.cloud_per_year == Decimal(12) * 200 * 12
    assert result.break_even_hours_per_month_first_year == Decimal(185_000) / (12 * 12)
    per_year = Decimal(100_000) / 3 + 85_000
    assert result.own_per_year == per_year
    assert result.break_even_utilisation == per_year / (12 * 12) / 730
    assert result.cheaper == "cloud"


def test_cloud_rate_defaults_to_the_cheapest_verified_on_demand_gpu_hour(catalog):
    rate, where = cheapest_cloud_rate(catalog, "A100", "USD")
    offers = catalog.offers
    trusted = offers[(offers.gpu == "A100") & offers.verified & (offers["flags"] == "")]
    assert float(rate) == pytest.approx((trusted.on_demand_hourly / trusted.gpu_count).min())
    result = total_cost_of_ownership(parse_tco("tco 8xA100 hardware=$15000", catalog.gpus), catalog)
    assert result.cloud_rate_per_gpu_hour == rate and result.cloud_rate_source == where


@pytest.mark.parametrize("text, message", [
    ("tco hardware=100k", "say which GPUs"),
    ("tco 1xA100", "hardware price"),
    ("tco 1xA100 hardware=lots", "not an amount"),
    ("tco 1xA100 hardware=1k usage=900h/mo", "not hours per month"),
    ("tco 1xA100 hardware=1k years=0", "years must be 1 to 20"),
    ("tco 1xA100 hardware=1k rent=2", "unknown option 'rent'"),
    ("tco 1xA100 hardware=00k", "hardware must be above 0, not '00k' — a shell reads \\$5 in hardware=\\$5000"),
    ("tco 1xA100 hardware=", "hardware= has no amount — a shell reads"),
    ("tco 1xA100 hardware=1k facility=0", "facility must be above 0, not '0' — leave facility= out when there is"),
    ("tco 1xA100 hardware=1k cloud=0", "cloud must be above 0, not '0' — example"),
])
def test_bad_tco_input(catalog, text, message):
    with pytest.raises(ParseError, match=message):
        parse_tco(text, catalog.gpus)
