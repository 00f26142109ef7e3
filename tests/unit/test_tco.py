"""Buy-or-rent arithmetic: the seed article's worked example, and the catalog's cloud rate."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from gpu_assist.commands.quote_grammar import words_of
from gpu_assist.errors import ParseError
from gpu_assist.plan.street_prices import STREET_PRICES
from gpu_assist.plan.tco import cheapest_cloud_rate, parse_tco, total_cost_of_ownership
from gpu_assist.render.notes import words

# The CLI reads today's date itself, as a user's run does: its answers here are on support.TODAY's.
pytestmark = pytest.mark.usefixtures("pinned_wall_clock")

SEED = "tco 1xA100 hardware=100k facility=20k power=15k ops=50k currency=CNY usage=200h/mo cloud=12"


def test_seed_example_first_year_is_185k_cny(catalog):
    result = total_cost_of_ownership(parse_tco(words_of(SEED), catalog.gpus), catalog)
    assert result.own_first_year == Decimal(185_000)
    assert result.inputs.currency == "CNY"
    assert result.cloud_per_year == Decimal(12) * 200 * 12
    assert result.break_even_hours_per_month_first_year == Decimal(185_000) / (12 * 12)
    per_year = Decimal(100_000) / 3 + 85_000
    assert result.own_per_year == per_year
    assert result.break_even_utilisation == per_year / (12 * 12) / 730
    assert result.cheaper == "cloud"


@pytest.mark.parametrize("text, pays_back, says", [
    # 15k / 3 + 50k a year against $0.72/GPU-h: 6,366 h a month to break even, 9 times the month's 730 h.
    ("tco 1xA100 hardware=15k ops=50k usage=200h/mo cloud=0.72", False,
     "break-even: none: over 3 years owning costs more than renting even at 730 h/month (in use all the time), "
     "so renting wins at any usage"),
    # 2 × 15k / 3 a year against 2 × ¥1.86 an hour: 224 h a month over 3 years, 672 in the first year.
    ("tco 2xRTX4090 hardware=15000 cloud=1.86 currency=CNY", True,
     "break-even: 224 h/month (31% utilisation) over 3 years; 672 h/month to pay back in the first year"),
    # The first year alone costs more than 730 h of renting: no usage pays it back that year.
    ("tco 2xRTX4090 hardware=15000 facility=9k cloud=1.86 currency=CNY", True,
     "break-even: 426 h/month (58% utilisation) over 3 years; no usage pays it back within the first year"),
])
def test_a_break_even_beyond_the_month_is_said_in_words(catalog, text, pays_back, says):
    """A break-even above 730 h/month is no usage a month has: "renting wins at any usage", never "1319%"."""
    from gpu_assist.render import plans as _plans  # noqa: F401 - registers the TCO's text
    from gpu_assist.render.text import render

    result = total_cost_of_ownership(parse_tco(words_of(text), catalog.gpus), catalog)
    assert result.pays_back is pays_back
    shown = " ".join(line.strip() for line in render(result).splitlines())
    assert says in shown
    assert not any(int(p) > 100 for p in re.findall(r"(\d+)% utilisation", shown))


@pytest.mark.parametrize("gpus", [1, 3, 8])
def test_cloud_rate_defaults_to_the_cheapest_way_to_rent_the_gpus_asked_for(catalog, gpus):
    """Whole instances: an 8-GPU instance rented for 1 GPU costs 8 GPUs' worth, and the rate says which it is.
    Like with like: one instance holding all the GPUs (NVLinked ones when more than one), from a price list, not
    a marketplace host's ask."""
    rate, where = cheapest_cloud_rate(catalog, "A100", "USD", gpus)
    offers = catalog.offers
    trusted = offers[(offers.gpu == "A100") & offers.verified & (offers["flags"] == "")
                     & (offers.on_demand_hourly > 0) & (offers.gpu_count >= gpus)
                     & ~offers.provider.isin(("vast", "lium", "primeintellect"))]
    if gpus > 1 and (trusted.interconnect == "nvlink").any():
        trusted = trusted[trusted.interconnect == "nvlink"]
    instances = -(-gpus // trusted.gpu_count)
    assert float(rate) == pytest.approx((instances * trusted.on_demand_hourly / gpus).min())
    result = total_cost_of_ownership(parse_tco(words_of(f"tco {gpus}xA100 hardware=$15000"), catalog.gpus), catalog)
    assert result.cloud_rate_per_gpu_hour == rate and result.cloud_rate_source == where
    assert re.search(r"\(\d+ GPUs?( each)?(, \d+ idle)?\)", where)


def test_one_gpu_is_not_priced_at_an_eight_gpu_instances_share(catalog):
    """The cheapest A100 per GPU-hour is an 8-GPU instance; one A100 cannot be rented at its per-GPU rate."""
    offers = catalog.offers
    trusted = offers[(offers.gpu == "A100") & offers.verified & (offers["flags"] == "")
                     & (offers.on_demand_hourly > 0)]
    per_gpu = trusted.on_demand_hourly / trusted.gpu_count
    cheapest_share = per_gpu.min()
    assert trusted.gpu_count[per_gpu.idxmin()] > 1  # the finding: the 8-GPU share was the rate
    rate, where = cheapest_cloud_rate(catalog, "A100", "USD", 1)
    assert float(rate) > cheapest_share and "(1 GPU)" in where


def test_an_amount_keeps_its_currency(catalog, capsys):
    """`hardware=¥100000 currency=USD` is ¥100,000 converted to dollars, said so; never $100,000."""
    from gpu_assist.cli import main

    assert main(["tco", "1xA100", "hardware=¥100000", "currency=USD"]) == 0
    shown = capsys.readouterr().out
    dollars = Decimal(100_000) / catalog.fx.per_usd["CNY"]
    assert f"1 × ${dollars:,.2f}" in shown and "$100,000" not in shown
    assert f"hardware ¥100,000.00 = ${dollars:,.2f} at {words(catalog.fx.rate('CNY'))}" in shown
    # Any mix: each amount in its own currency, the answer in the first one written unless currency= says.
    mixed = words_of("tco 2xA100 hardware=25000usd ops=¥10000 cloud=2usd")
    result = total_cost_of_ownership(parse_tco(mixed, catalog.gpus), catalog)
    assert result.inputs.currency == "USD"
    assert result.inputs.ops_per_year == Decimal(10_000) / catalog.fx.per_usd["CNY"]
    assert result.inputs.hardware_per_gpu == 25_000 and result.cloud_rate_per_gpu_hour == 2
    assert len(result.conversions) == 1 and result.conversions[0].key == "ops"
    assert words(result.conversions[0]).startswith("ops ¥10,000.00 = $")
    in_cny = words_of("tco 1xA100 hardware=15000 cloud=2usd currency=CNY")
    result = total_cost_of_ownership(parse_tco(in_cny, catalog.gpus),
                                     catalog)
    assert result.cloud_rate_per_gpu_hour == 2 * catalog.fx.per_usd["CNY"] and result.inputs.hardware_per_gpu == 15000


def test_a_servers_price_typed_per_gpu_is_asked_about(catalog, capsys):
    """`tco 8xH100 hardware=300k usage=500h/mo`, a whole 8-GPU server's price, was $2.4M of GPUs and "renting wins
    at any usage": now it asks whether 300k was the server's, and `per-server` answers with $300,000."""
    from gpu_assist.cli import main

    assert main(["tco", "8xH100", "hardware=300k", "usage=500h/mo"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert said.startswith("error: hardware 300,000 USD per H100 is more than twice what one sells for (about "
                           "$30,000 new: aiinframap.com, 2026-06)")
    assert "was it the price of a whole server? say per-server" in said
    assert said.endswith("example: tco 8xH100 hardware=300k per-server")
    server = total_cost_of_ownership(parse_tco(words_of("tco 8xH100 hardware=300k per-server usage=500h/mo"),
                                               catalog.gpus), catalog)
    assert server.inputs.hardware == server.own_first_year == 300_000 and server.inputs.hardware_per_gpu == 37_500
    assert main(["tco", "8xH100", "hardware=300k", "per-server", "usage=500h/mo"]) == 0
    assert "hardware                     1 server of 8    $300,000.00" in capsys.readouterr().out
    # Insisting keeps it per GPU; a believable price per GPU is never asked about; a GPU no source prices neither.
    kept = parse_tco(words_of("tco 8xH100 hardware=300k per-gpu"), catalog.gpus)
    assert total_cost_of_ownership(kept, catalog).inputs.hardware == 2_400_000
    assert total_cost_of_ownership(parse_tco(words_of("tco 8xH100 hardware=25k"), catalog.gpus), catalog)
    assert total_cost_of_ownership(parse_tco(words_of("tco 1xL4 hardware=300k"), catalog.gpus), catalog)


def test_a_server_price_in_another_currency_is_converted_whole(catalog):
    result = total_cost_of_ownership(parse_tco(words_of("tco 8xH100 hardware=¥2000000 per-server currency=USD"),
                                               catalog.gpus), catalog)
    dollars = Decimal(2_000_000) / catalog.fx.per_usd["CNY"]
    assert result.inputs.hardware_per_server == dollars and result.inputs.hardware_per_gpu == dollars / 8
    assert result.conversions[0].key == "hardware"


def test_every_street_price_cites_its_source():
    from gpu_assist.plan.street_prices import STREET_PRICES

    for gpu, price in STREET_PRICES.items():
        assert price.gpu == gpu and price.usd > 0 and price.source.startswith("https://") and price.said
        assert re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", price.as_of)


@pytest.mark.parametrize("text, message", [
    ("tco hardware=100k", "say which GPUs"),
    ("tco 8xH100 hardware=300k per-server per-gpu", "both per-server and per-gpu"),
    ("tco 1xA100", "hardware price"),
    ("tco 1xA100 hardware=lots", "not an amount"),
    ("tco 1xA100 hardware=1k usage=900h/mo", "not hours per month"),
    ("tco 1xA100 hardware=1k years=0", "years must be 1 to 20"),
    ("tco 1xA100 hardware=1k rent=2", "unknown option 'rent'"),
    ("tco 1xA100 hardware=00k", "hardware must be above 0, not '00k' — a shell reads \\$5 in hardware=\\$5000"),
    ("tco 1xA100 hardware=", "hardware= has no amount — a shell reads"),
    ("tco 1xA100 hardware=1k facility=0", "facility must be above 0, not '0' — leave facility= out when there is"),
    ("tco 1xA100 hardware=1k cloud=0", "cloud must be above 0, not '0' — cloud is the price per GPU-hour"),
])
def test_bad_tco_input(catalog, text, message):
    with pytest.raises(ParseError, match=message):
        parse_tco(words_of(text), catalog.gpus)


def test_every_street_price_traces_to_the_catalogs_sources():
    """A yardstick price is a published figure like any other: catalogs/SOURCES.md lists each one with its source
    and date, as the module holds it."""
    listed = (Path(__file__).resolve().parents[2] / "catalogs" / "SOURCES.md").read_text(encoding="utf-8")
    for price in STREET_PRICES.values():
        assert f"| {price.gpu} | ${price.usd:,} | {price.source} | {price.said} | {price.as_of} |" in listed
