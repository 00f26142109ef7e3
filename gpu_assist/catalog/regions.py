"""Where offers are: every provider's region name → an ISO country code and a continent (the providers themselves,
`PROVIDERS`, are `catalog.providers`' registry).

Providers name regions their own way (`eu-west-1`, `europe-west4`, `FIN-03`, `Texas, US, NA`,
`kansascity-usa-1`, a bare `FI`). Importers write each offer's `country` and `continent` with
`location()`, so residency selectors (`region=eu`, `us`, `asia`, `cn`, or a country code such as
`region=de`) mean the same for every provider. A name not known here gets blank location and
matches only by its exact name.

Continents are the two-letter codes vast.ai's data uses: NA, SA, EU, AS (the Middle East
included), OC, AF. Groups: `us` = the United States, `eu` = Europe (EU or not: UK, Norway,
Switzerland, Iceland count), `asia` = Asia outside mainland China, `cn` = mainland China.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

from ..errors import ParseError
from .providers import CHINA_PROVIDERS

DEFAULT_REGION = "us-east-1"
GROUPS = ("us", "eu", "asia", "cn")
_WELL_KNOWN = ("us-east-1", "europe-west4", "eastus", "asia-northeast-1")
_NEAR = 0.65  # how alike (difflib's ratio, without dashes) a region's name must be to be suggested

_CONTINENT = {
    **dict.fromkeys("US CA MX".split(), "NA"),
    **dict.fromkeys("BR CL CO AR".split(), "SA"),
    **dict.fromkeys("GB IE FR DE NL BE CH IT ES PT SE NO FI DK IS PL CZ AT HU RO BG HR SI GR UA RU RS".split(), "EU"),
    **dict.fromkeys("JP KR IN SG ID MY TW HK CN TH VN IL AE SA QA BH".split(), "AS"),
    **dict.fromkeys("AU NZ".split(), "OC"),
    **dict.fromkeys("ZA MA".split(), "AF"),
}

# Exact region names of the clouds whose names carry no country (AWS, GCP, Lambda, Nebius, …).
_EXACT = {
    # AWS
    "ca-central-1": "CA", "eu-west-1": "IE", "eu-west-2": "GB", "eu-west-3": "FR", "eu-central-1": "DE",
    "eu-central-2": "CH", "eu-north-1": "SE", "eu-south-1": "IT", "eu-south-2": "ES", "ap-northeast-1": "JP",
    "ap-northeast-2": "KR", "ap-northeast-3": "JP", "ap-south-1": "IN", "ap-south-2": "IN", "ap-southeast-1": "SG",
    "ap-southeast-2": "AU", "ap-southeast-3": "ID", "ap-southeast-4": "AU", "ap-southeast-5": "MY",
    "ap-east-1": "HK", "sa-east-1": "BR", "me-south-1": "BH", "me-central-1": "AE", "il-central-1": "IL",
    "af-south-1": "ZA", "mx-central-1": "MX",
    # GCP
    "northamerica-northeast1": "CA", "northamerica-northeast2": "CA", "northamerica-south1": "MX",
    "southamerica-east1": "BR", "southamerica-west1": "CL", "europe-west1": "BE", "europe-west2": "GB",
    "europe-west3": "DE", "europe-west4": "NL", "europe-west6": "CH", "europe-west8": "IT", "europe-west9": "FR",
    "europe-west10": "DE", "europe-west12": "IT", "europe-north1": "FI", "europe-north2": "SE",
    "europe-central2": "PL", "europe-southwest1": "ES", "asia-east1": "TW", "asia-east2": "HK",
    "asia-northeast1": "JP", "asia-northeast2": "JP", "asia-northeast3": "KR", "asia-south1": "IN",
    "asia-south2": "IN", "asia-southeast1": "SG", "asia-southeast2": "ID", "australia-southeast1": "AU",
    "australia-southeast2": "AU", "me-west1": "IL", "me-central1": "QA", "me-central2": "SA", "africa-south1": "ZA",
    # Lambda
    "asia-northeast-1": "JP", "asia-northeast-2": "KR", "asia-south-1": "IN", "australia-east-1": "AU",
    "europe-central-1": "DE", "europe-south-1": "IT", "me-west-1": "IL",
    # Nebius (eu-north1 Finland, eu-west1 Paris), Cudo, Hyperstack
    "eu-north1": "FI", "eu-west1": "FR", "ca-montreal-3": "CA", "no-kristiansand-1": "NO",
    "se-stockholm-1": "SE", "CANADA-1": "CA", "NORWAY-1": "NO", "US-1": "US",
    # Verda (Finland), JarvisLabs (India)
    "FIN-01": "FI", "FIN-02": "FI", "FIN-03": "FI", "IN1": "IN", "IN2": "IN",
}
_AZURE_EUROPE = {"northeurope": "IE", "westeurope": "NL", "francecentral": "FR", "germanywestcentral": "DE",
                 "swedencentral": "SE", "italynorth": "IT", "polandcentral": "PL", "spaincentral": "ES",
                 "switzerlandnorth": "CH", "norwayeast": "NO", "uksouth": "GB", "ukwest": "GB"}
# OCI names a region <area>-<city>-N: the city says the country.
_OCI_CITY = {
    "casablanca": "MA", "johannesburg": "ZA", "batam": "ID", "chuncheon": "KR", "hyderabad": "IN", "kulai": "MY",
    "melbourne": "AU", "mumbai": "IN", "osaka": "JP", "seoul": "KR", "singapore": "SG", "sydney": "AU",
    "tokyo": "JP", "montreal": "CA", "toronto": "CA", "amsterdam": "NL", "frankfurt": "DE", "madrid": "ES",
    "marseille": "FR", "milan": "IT", "paris": "FR", "stockholm": "SE", "turin": "IT", "zurich": "CH",
    "jerusalem": "IL", "abudhabi": "AE", "dubai": "AE", "jeddah": "SA", "riyadh": "SA", "monterrey": "MX",
    "queretaro": "MX", "bogota": "CO", "santiago": "CL", "saopaulo": "BR", "valparaiso": "CL", "vinhedo": "BR",
    "cardiff": "GB", "london": "GB", "ashburn": "US", "chicago": "US", "phoenix": "US", "sanjose": "US",
}
# Shadeform names a region <city>-<country>-N.
_SHADEFORM_COUNTRY = {"usa": "US", "canada": "CA", "india": "IN", "france": "FR", "japan": "JP", "poland": "PL"}
_TENCENT_MAINLAND = ("ap-beijing", "ap-shanghai", "ap-guangzhou", "ap-chengdu", "ap-chongqing", "ap-nanjing")
_COUNTRY_CODE = re.compile(r"^[A-Z]{2}$")
# Region names a source uses where it gives no region (Hyperbolic's "default"): no place a buyer can pick.
PLACEHOLDER_REGIONS = frozenset({"default"})


@lru_cache(maxsize=4096)
def location(provider: str, region: str) -> tuple[str, str]:
    """(ISO country code, continent) of a provider's region; ("", "") when the name says nothing."""
    country = _country(provider, region.strip())
    return country, _CONTINENT.get(country, "")


def _country(provider: str, region: str) -> str:
    if provider in CHINA_PROVIDERS:
        return "CN" if region == "cn" or region.startswith(("cn-", *_TENCENT_MAINLAND)) else ""
    if provider == "vast":  # "State, CC, Continent", or "CC, Continent" where the state is not known
        parts = [part for part in (p.strip() for p in region.split(",")) if part]
        return parts[-2] if len(parts) >= 2 and _COUNTRY_CODE.match(parts[-2]) else ""
    if _COUNTRY_CODE.match(region):  # Prime Intellect, Lium: the region is a country code
        return region
    if provider == "oci":
        city = region.split("-")[1] if region.count("-") >= 2 else ""
        return _OCI_CITY.get(city, "")
    if provider == "shadeform":
        parts = region.split("-")
        return _SHADEFORM_COUNTRY.get(parts[1], "") if len(parts) == 3 else ""
    if provider == "azure" and region in _AZURE_EUROPE:
        return _AZURE_EUROPE[region]
    if region in _EXACT:
        return _EXACT[region]
    if region.startswith("us") or (provider == "azure" and re.search(r"us\d?$", region)):
        return "US"
    if region.startswith("cn-"):
        return "CN"
    return ""


def in_group(country: str, continent: str, group: str) -> bool:
    """Whether a located region lies in a residency group."""
    if group == "cn":
        return country == "CN"
    if group == "us":
        return country == "US"
    if group == "eu":
        return continent == "EU"
    if group == "asia":
        return continent == "AS" and country != "CN"
    return False


def matches(region: str, country: str, continent: str, selectors: tuple[str, ...]) -> bool:
    """True when no selector is given, or `region` equals, or lies in, one of them (a group or a country code)."""
    if not selectors:
        return True
    return any(region.lower() == s.lower() or (s in GROUPS and in_group(country, continent, s))
               or (len(s) == 2 and s.upper() == country) for s in selectors)


def check_selectors(selectors: tuple[str, ...], known_regions: Mapping[str, Iterable[str]],
                    known_countries: Iterable[str], *, example: str = "8xA100 72h region=us-east-1") -> None:
    """ParseError for a selector that is neither a group, nor a region of any offer, nor the country code of one:
    `region=mars` would otherwise filter every offer away and answer with nothing. `known_regions`: each region and
    the providers that name it, so the nearest names come from every cloud. `example`: one that works for the verb
    asked."""
    by_key = {region.lower(): region for region in known_regions}
    countries = {country for country in known_countries if country}
    for selector in selectors:
        if selector in GROUPS or selector.lower() in by_key or (len(selector) == 2 and selector.upper() in countries):
            continue
        close = nearest_regions(selector, known_regions)
        examples = [r for r in _WELL_KNOWN if r in by_key] or sorted(by_key)[:4]
        hint = f"did you mean {close}?" if close else \
            f"use a group ({', '.join(GROUPS)}), a country code or a region of the catalogs, e.g. {', '.join(examples)}"
        raise ParseError(f"unknown region '{selector}'", hint=hint, example=example)


def nearest_regions(selector: str, known_regions: Mapping[str, Iterable[str]], most: int = 5) -> str:
    """The regions nearest `selector` from every cloud, each with the providers that name it: `us-east-1 (aws,
    lambda), us-east1 (gcp) or eastus (azure)`; '' when none is near. Each cloud offers its nearest name (the
    shortest, then the first, among equals), so one cloud's many similar names do not hide the others'."""
    def key(name: str) -> str:
        return re.sub(r"[-_ ]", "", name.lower())

    wanted, written = key(selector), selector.lower()
    per_provider: dict[str, tuple[float, float, int, str]] = {}
    for region, providers in known_regions.items():
        # alike without dashes first (`useast1` is us-east-1 and us-east1), then as written, then the shortest
        rank = (-difflib.SequenceMatcher(None, wanted, key(region)).ratio(),
                -difflib.SequenceMatcher(None, written, region.lower()).ratio(), len(region), region)
        for provider in providers:
            per_provider[provider] = min(per_provider.get(provider, rank), rank)
    near: dict[str, list[str]] = {}
    for provider, (unlike, _, _, region) in sorted(per_provider.items(), key=lambda item: (item[1], item[0])):
        if -unlike >= _NEAR and (region in near or len(near) < most):
            near.setdefault(region, []).append(provider)
    named = [f"{region} ({', '.join(providers)})" for region, providers in near.items()]
    return f"{', '.join(named[:-1])} or {named[-1]}" if len(named) > 1 else "".join(named)


def default_region(environ: Mapping[str, str] = os.environ) -> str:
    """The AWS region when none is named: boto3's own variables, then us-east-1 (where every GPU family is sold).
    Region knowledge, so the policy and the CLI read it without importing the AWS adapter."""
    return environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
