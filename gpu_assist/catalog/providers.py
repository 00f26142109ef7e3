"""Every provider gpu-assist knows, declared once: what it is called, where its prices come from, whether and how
gpu-assist launches on it, and what its instance ids look like.

Everything that names providers reads this registry: the catalog's checks and the query's filter (`PROVIDERS`),
the policy's launch clouds (`LAUNCH_PROVIDERS`: native ones and those the engine reaches, `ENGINE_PROVIDERS`) and
default instance families (`GPU_INSTANCE_TYPES`), the command line's `catalog refresh` verbs (`REFRESH_VERBS`),
the router of stops by instance id (`instance_ids`), the cards' cloud names (`display_name`), the SkyPilot extracts
and the JupyterLab sidebar; `tests/unit/test_provider_registry.py` walks the package and fails where one disagrees.
A provider missing here is an error wherever it is named, never another cloud.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from ..errors import PolicyError


class LaunchRoute(enum.Enum):
    """How gpu-assist starts machines on a provider: through its own API (`clouds/launch/<cloud>.py`), through
    SkyPilot, the launch engine, on a team's API server (`clouds/launch/skypilot.py`: the clouds SkyPilot 0.14
    launches on, under the same name), or not at all (prices only: neither reaches it)."""

    NATIVE = "native"
    ENGINE = "engine"
    NONE = "none"


@dataclass(frozen=True)
class Provider:
    name: str                        # the canonical name offers, selectors, policies and launches use
    display: str                     # as cards and notes name it
    price_sources: tuple[str, ...]   # the `source` keys its catalog rows carry (`skypilot-<name>` for SkyPilot's)
    refresh: str | None = None       # `gpu-assist catalog refresh <verb>` for its own account's prices
    launch: LaunchRoute = LaunchRoute.NONE
    instance_id: str | None = None   # its instance ids' form, a regular expression (native clouds)
    china: bool = False              # mainland China's clouds: CNY lists, country-wide rows
    skypilot: bool = False           # in SkyPilot's catalog (`sources.skypilot.EXTRACTS`)
    marketplace: bool = False        # every listing is one machine (a plan takes at most that many of it)
    launch_region: str | None = None  # where a launch priced by a country-wide list starts, unless the policy says
    gpu_types: tuple[str, ...] = ()  # its GPU instance families as shell patterns: the policy's default allow-list


# The articles whose claims seed the Chinese clouds' rows (catalogs/sources/cn_gpu_prices.csv)
_ARTICLES = ("seed-000", "seed-001", "seed-002")


def _sky(name: str, display: str, gpu_types: tuple[str, ...] = (), *, marketplace: bool = False) -> Provider:
    """A provider priced by SkyPilot's catalog alone; launched through SkyPilot when it names its GPU families."""
    return Provider(name, display, (f"skypilot-{name}",), skypilot=True, marketplace=marketplace,
                    launch=LaunchRoute.ENGINE if gpu_types else LaunchRoute.NONE, gpu_types=gpu_types)


REGISTRY: tuple[Provider, ...] = (
    Provider("aws", "AWS", ("skypilot-aws", "aws-api", "aws-price-list"), refresh="aws", launch=LaunchRoute.NATIVE,
             instance_id=r"i-[0-9a-f]{8,17}", skypilot=True, gpu_types=("p*", "g*")),
    Provider("gcp", "Google Cloud", ("skypilot-gcp", "gcp-billing"), refresh="gcp", skypilot=True,
             launch=LaunchRoute.ENGINE, gpu_types=("a2-*", "a3-*", "a4-*", "g2-*", "g4-*")),
    Provider("azure", "Microsoft Azure", ("skypilot-azure", "azure-retail"), refresh="azure", skypilot=True,
             launch=LaunchRoute.ENGINE, gpu_types=("Standard_N*",)),
    _sky("lambda", "Lambda", ("gpu_*",)),
    _sky("nebius", "Nebius", ("gpu-*",)),
    _sky("oci", "Oracle Cloud", ("BM.GPU*", "VM.GPU*")),
    _sky("verda", "Verda", ("[0-9]*[0-9]V",)),
    _sky("vast", "Vast.ai", ("[0-9]*x-*",), marketplace=True),
    _sky("cudo", "Cudo Compute", ("*_[0-9]*x*v*gb",)),
    _sky("hyperbolic", "Hyperbolic", ("[0-9]*x-*",)),
    _sky("shadeform", "Shadeform", ("[a-z]*_[ABHLR]*",)),
    _sky("hyperstack", "Hyperstack"),
    _sky("jarvislabs", "JarvisLabs"),
    _sky("primeintellect", "Prime Intellect", ("*__[0-9]*x*GB__*",), marketplace=True),
    _sky("mithril", "Mithril", ("*.sxm.*x", "*.pcie.*x")),
    _sky("yotta", "Yotta", ("[0-9]*x*v*g_*",)),
    _sky("lium", "Lium", marketplace=True),
    Provider("aliyun", "Alibaba Cloud", ("aliyun-api", *_ARTICLES), refresh="aliyun", launch=LaunchRoute.NATIVE,
             instance_id=r"i-[a-z0-9]{20}", china=True, launch_region="cn-hangzhou",
             gpu_types=("ecs.gn*", "ecs.ebmgn*")),
    Provider("tencent", "Tencent Cloud", ("tencent-api", "TC-PRICE-20210927", *_ARTICLES), refresh="tencent",
             launch=LaunchRoute.NATIVE, instance_id=r"ins-[a-z0-9]{8}", china=True, launch_region="ap-guangzhou",
             gpu_types=("GN*", "GT*", "GI*", "PNV*")),
    Provider("huawei", "Huawei Cloud", ("huawei-api", *_ARTICLES), refresh="huawei", launch=LaunchRoute.NATIVE,
             instance_id=r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", china=True,
             launch_region="cn-north-4"),  # its GPU flavours (p2s…, pi2…, g6…) are in AWS's p* and g*
)
BY_NAME = {provider.name: provider for provider in REGISTRY}
PROVIDERS = tuple(BY_NAME)
CHINA_PROVIDERS = tuple(p.name for p in REGISTRY if p.china)
NATIVE_PROVIDERS = tuple(p.name for p in REGISTRY if p.launch is LaunchRoute.NATIVE)
ENGINE_PROVIDERS = tuple(p.name for p in REGISTRY if p.launch is LaunchRoute.ENGINE)
# Where the clusters SkyPilot's gate admitted live, whatever their cloud: the engine's API server (the router's key
# for the engine itself, which brings them down at their time to live).
GATE_CLUSTERS = "skypilot"
LAUNCH_PROVIDERS = tuple(p.name for p in REGISTRY if p.launch is not LaunchRoute.NONE)
GPU_INSTANCE_TYPES = tuple(dict.fromkeys(pattern for p in REGISTRY for pattern in p.gpu_types))
REFRESH_VERBS = tuple(p.refresh for p in REGISTRY if p.refresh)
DEFAULT_LAUNCH_REGIONS = {p.name: p.launch_region for p in REGISTRY if p.launch_region}
INSTANCE_IDS = {p.name: re.compile(f"^{p.instance_id}$") for p in REGISTRY if p.instance_id}


def provider(name: str) -> Provider:
    """The registry's entry; PolicyError naming the known ones for any other name."""
    if name not in BY_NAME:
        raise PolicyError(f"unknown provider '{name}'", hint="known: " + ", ".join(PROVIDERS))
    return BY_NAME[name]


def not_launchable(name: str) -> str | None:
    """Why gpu-assist cannot launch on a provider it knows, in words; None when one route reaches it."""
    entry = BY_NAME.get(name)
    if entry is None or entry.launch is not LaunchRoute.NONE:
        return None
    return (f"{entry.display} has no provisioner of gpu-assist's own and SkyPilot 0.14, the launch engine, does not "
            "launch on it: its prices are for comparison") if entry.skypilot else \
        f"{entry.display} has no provisioner of gpu-assist's own: its prices are for comparison"


def display_name(name: str) -> str:
    """A provider as people read it ("Tencent Cloud"); an unknown name as it is."""
    return BY_NAME[name].display if name in BY_NAME else name


def cloud_of(instance_id: str) -> str | None:
    """The native cloud an instance id belongs to, by its form; None when it is no cloud's. Only a fallback: a
    stop, an extension or a reap routes by the launch record's cloud."""
    return next((cloud for cloud, pattern in INSTANCE_IDS.items() if pattern.match(instance_id)), None)
