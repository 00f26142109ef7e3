"""Region selectors: an exact region name, or a group (`us`, `eu`, `asia`, `cn`).

Groups exist for residency questions ("only Chinese regions", "only the EU"), which
the providers' own names answer only through prefixes that differ by provider.
"""

from __future__ import annotations

CHINA_PROVIDERS = ("aliyun", "tencent", "huawei")
# Tencent Cloud names its mainland regions ap-<city>; these are the mainland ones.
_TENCENT_MAINLAND = ("ap-beijing", "ap-shanghai", "ap-guangzhou", "ap-chengdu", "ap-chongqing", "ap-nanjing")
_EU_PREFIXES = ("eu-", "europe-", "eu")
_EU_AZURE = ("northeurope", "westeurope", "francecentral", "germanywestcentral", "swedencentral",
             "italynorth", "polandcentral", "spaincentral", "switzerlandnorth", "norwayeast")

GROUPS = ("us", "eu", "asia", "cn")


def in_china(provider: str, region: str) -> bool:
    if provider not in CHINA_PROVIDERS:
        return region.startswith("cn-")
    return region == "cn" or region.startswith("cn-") or region.startswith(_TENCENT_MAINLAND)


def in_group(provider: str, region: str, group: str) -> bool:
    """Whether `region` of `provider` lies in `group`."""
    if group == "cn":
        return in_china(provider, region)
    if group == "eu":
        return region.startswith(_EU_PREFIXES) or region in _EU_AZURE
    if group == "us":
        return region.startswith("us") or (provider == "azure" and region.endswith("us")) or region.endswith("us2") \
            or region.endswith("us3")
    if group == "asia":
        return region.startswith(("ap-", "asia-", "asia")) and not in_china(provider, region)
    return False


def matches(provider: str, region: str, selectors: tuple[str, ...]) -> bool:
    """True when no selector is given, or `region` equals or belongs to one of them."""
    if not selectors:
        return True
    return any(region == s or (s in GROUPS and in_group(provider, region, s)) for s in selectors)
