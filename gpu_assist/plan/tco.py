"""Buy or rent: the total cost of owning GPUs against renting them, and the break-even utilisation. Pure.

    hardware             = price per GPU × GPUs, or the server's price (`hardware=300k per-server`)
    own, first year      = hardware + facility + power + operations   (per year, for the lot)
    own, per year (amortised over `years`) = hardware / years + facility + power + operations
    cloud, per year      = rate per GPU-hour × GPUs × hours per month × 12
    break-even           = own per year / (rate × GPUs × 12) hours per month; ÷ 730 → utilisation

The cloud rate is the user's (`cloud=12`) or, from the catalog, the cheapest way to rent the GPUs asked for on
demand (verified, unflagged), in whole instances: one A100 rented as an 8-GPU instance costs 8 GPUs' worth, so the
rate is the instances' hourly price ÷ the GPUs asked for. Like with like: the same host class as the server, one
instance holding all the GPUs (NVLinked ones first when more than one GPU) where the catalog has one, else whole
instances of fewer; a provider's price list before a marketplace host's ask; the answer names the instance it
priced.

An amount keeps the currency it is written in (`hardware=¥100000`, `cloud=2usd`): one written in another currency
than the answer's is converted with the catalog's FX rates, and the answer says so.

A price per GPU more than twice what that GPU sells for (`street_prices`) is an error that asks whether it was the
whole server's: `tco 8xH100 hardware=300k` is an 8-GPU server's price, not $2.4M of GPUs. `per-server` says it
was, `per-gpu` that it was meant per GPU after all.

    tco 1xA100 hardware=100k facility=20k power=15k ops=50k currency=CNY usage=200h/mo
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from ..catalog import Catalog
from ..catalog.fx import FxRates
from ..catalog.gpus import GpuTable
from ..errors import ParseError
from ..facts import InputConverted
from ..plural import plural
from ..pricing.amounts import format_count, parse_amount
from ..pricing.query import HOURS_PER_MONTH
from ..pricing.query_parser import parse_currency, parse_request_words
from ..catalog.offers import MARKETPLACES
from .street_prices import PLAUSIBLE_FACTOR, STREET_PRICES, StreetPrice

EXAMPLE = "tco 1xA100 hardware=100k facility=20k power=15k ops=50k currency=CNY usage=200h/mo"
# The keys `tco` reads (what `gpu-assist tco --help` lists and an unknown key's error names).
OPTIONS = {
    "hardware": "purchase price per GPU, e.g. 25k, 25000usd, ¥180000 (required); with the word per-server, the "
                "price of one server holding all the GPUs named (hardware=300k per-server); per-gpu keeps a price "
                "far above the GPU's street price as written",
    "facility": "rack, space and cooling per year, for the lot (leave it out for none)",
    "power": "electricity per year (leave it out for none)",
    "ops": "operations (people, support contracts) per year (leave it out for none)",
    "cloud": "cloud price per GPU-hour to compare with, above 0 (default: the catalog's cheapest verified "
             "on-demand)",
    "currency": "USD or CNY, the answer's; an amount written in the other (¥100000, 25000usd) is converted at the "
                "catalog's FX rate, said in the answer (default: the currency the amounts are written in, else USD)",
    "years": "years the hardware is amortised over, 1 to 20 (default 3)",
    "usage": "hours of use per month, 0 to 730, e.g. 200h/mo (default 730)",
}


# What a plain 0 means for the keys that cannot be left out to mean none (facility, power, ops can).
_ZERO_HINTS = {"hardware": None, "cloud": "cloud is the price per GPU-hour to compare with: leave it out for the "
                                          "catalog's cheapest on-demand"}


@dataclass(frozen=True)
class TcoInput:
    gpu: str
    gpus: int
    hardware_per_gpu: Decimal  # the server's price ÷ its GPUs when `hardware_per_server` is given
    facility_per_year: Decimal = Decimal(0)
    power_per_year: Decimal = Decimal(0)
    ops_per_year: Decimal = Decimal(0)
    years: int = 3
    hours_per_month: Decimal = Decimal(HOURS_PER_MONTH)
    currency: str = "USD"
    cloud_rate_per_gpu_hour: Decimal | None = None
    # (key, currency) of each amount written with its currency (`hardware=¥100000`): converted when not `currency`
    written_in: tuple[tuple[str, str], ...] = ()
    hardware_per_server: Decimal | None = None  # `per-server`: one server holding all `gpus`
    per_gpu_meant: bool = False  # `per-gpu`: a price per GPU far above its street price is taken as written

    @property
    def hardware(self) -> Decimal:
        """What the GPUs cost to buy: the server's price, or the price per GPU times the GPUs."""
        return self.hardware_per_gpu * self.gpus if self.hardware_per_server is None else self.hardware_per_server


@dataclass(frozen=True)
class TcoResult:
    inputs: TcoInput
    own_first_year: Decimal
    own_per_year: Decimal
    cloud_rate_per_gpu_hour: Decimal
    cloud_rate_source: str
    cloud_per_year: Decimal
    break_even_hours_per_month_first_year: Decimal
    break_even_hours_per_month: Decimal
    conversions: tuple[InputConverted, ...] = ()  # amounts written in another currency ("hardware ¥100,000.00 = …")

    @property
    def break_even_utilisation(self) -> Decimal:
        return self.break_even_hours_per_month / HOURS_PER_MONTH

    @property
    def pays_back(self) -> bool:
        """Whether owning pays back within a month's hours (break-even ≤ 730 h/month): above that, renting costs
        less at any usage, even running day and night."""
        return self.break_even_hours_per_month <= HOURS_PER_MONTH

    @property
    def pays_back_in_first_year(self) -> bool:
        return self.break_even_hours_per_month_first_year <= HOURS_PER_MONTH

    @property
    def cheaper(self) -> str:
        return "own" if self.own_per_year < self.cloud_per_year else "cloud"


# The TcoInput field each amount key fills.
_AMOUNT_FIELDS = {"hardware": "hardware_per_gpu", "facility": "facility_per_year", "power": "power_per_year",
                  "ops": "ops_per_year", "cloud": "cloud_rate_per_gpu_hour"}


def cheapest_cloud_rate(catalog: Catalog, gpu: str, currency: str, gpus: int = 1) -> tuple[Decimal, str] | None:
    """The cheapest way to rent `gpus` GPUs of `gpu` on demand (verified, unflagged offers, whole instances), as a
    rate per GPU-hour of the GPUs asked for, and the instances it rents: an 8-GPU instance for 1 GPU costs 8 GPUs'
    worth, as nobody rents a part of one."""
    priced = [(offer, price) for offer in catalog.offers_of(gpu) if (price := offer.on_demand_hourly)
              and offer.verified and not offer.flags]
    if not priced:
        return None
    # Like with like: a server of `gpus` GPUs against one instance that holds them all (NVLinked when the
    # catalog has such a one), not against as many single-GPU VMs, which cannot run what the server runs.
    whole = [pair for pair in priced if pair[0].gpu_count >= gpus]
    linked = [pair for pair in whole if pair[0].interconnect == "nvlink"] if gpus > 1 else []
    priced = linked or whole or priced
    listed = [pair for pair in priced if pair[0].provider not in MARKETPLACES]  # a price list, not a host's ask
    priced = listed or priced
    fx = catalog.fx
    row, price = min(priced, key=lambda pair: math.ceil(gpus / pair[0].gpu_count) * float(pair[1])
                     * fx.factor(pair[0].currency, currency))
    per_instance = int(row.gpu_count)
    instances = math.ceil(gpus / per_instance)
    rate = fx.convert(price, row.currency, currency) * instances / gpus
    idle = instances * per_instance - gpus
    rented = (f"{instances}× " if instances > 1 else "") + f"{row.instance_type} (" \
        + plural(per_instance, "GPU") + (" each" if instances > 1 else "") + (f", {idle} idle" if idle else "") + ")"
    return rate, f"{row.provider} {rented} {row.region} on-demand ({row.source}, {row.as_of or 'date unknown'})"


def in_one_currency(inputs: TcoInput, fx: FxRates) -> tuple[TcoInput, tuple[InputConverted, ...]]:
    """`inputs` with every amount in `inputs.currency`: those written in another converted at the catalog's rates,
    each conversion kept as a fact to show; ParseError when the catalog has no rate for a currency."""
    changes: dict[str, Any] = {}  # TcoInput field name to its amount converted
    said: list[InputConverted] = []
    for key, written in inputs.written_in:
        if written != inputs.currency:
            field_name = _AMOUNT_FIELDS[key]
            if key == "hardware" and inputs.hardware_per_server is not None:
                field_name = "hardware_per_server"  # what was written; its share per GPU follows
            changes[field_name], conversion = fx.restate(getattr(inputs, field_name), written, inputs.currency,
                                                         example=EXAMPLE)
            said.append(InputConverted(key, conversion))
    if "hardware_per_server" in changes:
        changes["hardware_per_gpu"] = changes["hardware_per_server"] / inputs.gpus
    return replace(inputs, **changes), tuple(said)


def check_plausible(inputs: TcoInput, fx: FxRates, prices: dict[str, StreetPrice] = STREET_PRICES) -> None:
    """ParseError asking which was meant when a price per GPU is more than `PLAUSIBLE_FACTOR` (twice) what the GPU
    sells for (`prices`): most often a whole server's price typed as one GPU's, which would overstate owning by the
    server's GPU count. Not for a server's price (it buys CPUs, memory and networking too) nor after `per-gpu`."""
    street = prices.get(inputs.gpu)
    if street is None or inputs.hardware_per_server is not None or inputs.per_gpu_meant:
        return
    per_gpu_usd = fx.convert(inputs.hardware_per_gpu, inputs.currency, "USD")
    if per_gpu_usd <= street.usd * PLAUSIBLE_FACTOR:
        return
    server = f"{inputs.gpus}x{inputs.gpu}" if inputs.gpus > 1 else f"8x{inputs.gpu}"
    raise ParseError(
        f"hardware {inputs.hardware_per_gpu:,.0f} {inputs.currency} per {inputs.gpu} is more than twice what one "
        f"sells for (about ${street.usd:,} new: {street.publisher}, {street.as_of})",
        hint=f"was it the price of a whole server? say per-server (one server holding {server}); per-gpu keeps "
             "it per GPU",
        example=f"tco {server} hardware={format_count(float(inputs.hardware_per_gpu)).lower()} per-server")


def total_cost_of_ownership(inputs: TcoInput, catalog: Catalog) -> TcoResult:
    inputs, conversions = in_one_currency(inputs, catalog.fx)
    check_plausible(inputs, catalog.fx)
    if inputs.cloud_rate_per_gpu_hour is not None:
        rate, source = inputs.cloud_rate_per_gpu_hour, "given"
    else:
        found = cheapest_cloud_rate(catalog, inputs.gpu, inputs.currency, inputs.gpus)
        if found is None:
            raise ParseError(f"no verified on-demand price for {inputs.gpu} in the catalog",
                             hint="give the cloud rate per GPU-hour", example=EXAMPLE + " cloud=12")
        rate, source = found
    running = inputs.facility_per_year + inputs.power_per_year + inputs.ops_per_year
    hardware = inputs.hardware
    first_year = hardware + running
    per_year = hardware / inputs.years + running
    cloud_hourly = rate * inputs.gpus
    return TcoResult(
        inputs=inputs, own_first_year=first_year, own_per_year=per_year, cloud_rate_per_gpu_hour=rate,
        cloud_rate_source=source, cloud_per_year=cloud_hourly * inputs.hours_per_month * 12,
        break_even_hours_per_month_first_year=first_year / (cloud_hourly * 12),
        break_even_hours_per_month=per_year / (cloud_hourly * 12), conversions=conversions,
    )


def parse_tco(words: list[str], gpus: GpuTable) -> TcoInput:
    """`tco`'s words, as the grammar split them: the GPUs (a request's words) and `name=value` inputs."""
    if words and words[0].lower() == "tco":
        words = words[1:]
    gpu_words: list[str] = []
    values: dict[str, Any] = {}  # option name to its parsed value: Decimal amounts, int years, str currency
    written_in: dict[str, str] = {}  # amount key to the currency it was written in, when one was
    per: set[str] = set()  # `per-server`, `per-gpu`: what the hardware price buys
    for word in words:
        if word.lower() in ("per-server", "per-gpu"):
            per.add(word.lower())
            continue
        if "=" not in word:
            gpu_words.append(word)
            continue
        key, _, value = word.lower().partition("=")
        if not value and key not in _AMOUNT_FIELDS:  # an empty amount is explained by parse_amount (`hardware=$1`)
            raise ParseError(f"'{word}' has no value", example=EXAMPLE)
        if key in _AMOUNT_FIELDS:
            # Above 0, as every amount: a cost that is nil is left out (it defaults to 0).
            nil = _ZERO_HINTS.get(key, f"leave {key}= out when there is none")
            amount, currency = parse_amount(value.removesuffix("/yr").removesuffix("/year"), example=EXAMPLE,
                                            name=key, zero_hint=nil)
            values[key] = amount
            if currency:
                written_in[key] = currency
        elif key == "currency":
            values["currency"] = parse_currency(value, example=EXAMPLE)
        elif key == "years":
            if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= 20:
                raise ParseError(f"years must be 1 to 20, not '{value}'", example=EXAMPLE)
            values["years"] = int(value)
        elif key in ("usage", "hours"):
            match = re.match(r"^(\d+(?:\.\d+)?)(?:h)?(?:/mo(?:nth)?)?$", value)
            if not match or Decimal(match.group(1)) > HOURS_PER_MONTH:
                raise ParseError(f"usage '{value}' is not hours per month (0 to 730)", example=EXAMPLE)
            values["hours_per_month"] = Decimal(match.group(1))
        else:
            raise ParseError(f"unknown option '{key}'", hint="known: " + ", ".join(OPTIONS), example=EXAMPLE)
    if not gpu_words:
        raise ParseError("say which GPUs you would buy", example=EXAMPLE)
    request = parse_request_words(gpu_words, gpus)
    if "hardware" not in values:
        raise ParseError("give the hardware price per GPU (hardware=…)", example=EXAMPLE)
    if len(per) > 1:
        raise ParseError("both per-server and per-gpu given", hint="the hardware price is one or the other",
                         example="tco 8xH100 hardware=300k per-server")
    server = values["hardware"] if "per-server" in per else None
    return TcoInput(gpu=request.gpu, gpus=request.count,
                    hardware_per_gpu=values["hardware"] if server is None else server / request.count,
                    hardware_per_server=server, per_gpu_meant="per-gpu" in per,
                    facility_per_year=values.get("facility", Decimal(0)),
                    power_per_year=values.get("power", Decimal(0)),
                    ops_per_year=values.get("ops", Decimal(0)), years=values.get("years", 3),
                    hours_per_month=values.get("hours_per_month", Decimal(HOURS_PER_MONTH)),
                    currency=values.get("currency") or next(iter(written_in.values()), request.currency or "USD"),
                    cloud_rate_per_gpu_hour=values.get("cloud"), written_in=tuple(written_in.items()))
