"""What commands need from outside (the catalog, clocks, NVML, AWS, the request lifecycle), built once per process."""

from __future__ import annotations

import collections
import datetime as dt
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..catalog import Catalog, load_catalog
from ..errors import ConfigError
from ..request import CURRENCIES

ANSWERS_KEPT = 256


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def currency_setting() -> str:
    """`GPU_ASSIST_CURRENCY`, the answers' currency when a command names none (default USD); ConfigError naming the
    variable when it is not one gpu-assist quotes in (the catalogs' FX rates cover these alone)."""
    value = os.environ.get("GPU_ASSIST_CURRENCY", "USD")
    if value.strip().upper() not in CURRENCIES:
        raise ConfigError(f"GPU_ASSIST_CURRENCY='{value}' is not a currency gpu-assist quotes in",
                          hint="it takes " + " or ".join(CURRENCIES) + " (unset: USD)",
                          example="GPU_ASSIST_CURRENCY=CNY gpu-assist quote 8xA100 72h")
    return value.strip().upper()


def _nvml_sampler() -> Any:
    from ..nvml import NvmlSampler

    return NvmlSampler()


def _aws_client(service: str, region: str | None) -> Any:
    from ..aws import client

    return client(service, region)


def clouds(policy: Any) -> Any:
    """Every cloud's provisioner (each resolves its SDK's credentials on its first call), launching only on the
    clouds the policy allows (`allowed_providers`, default AWS alone); any may stop what gpu-assist launched."""
    from ..policy import LAUNCH_PROVIDERS
    from ..provision import Clouds
    from ..provision.aws import AwsProvisioner

    by_provider: dict[str, Any] = {}
    for provider in LAUNCH_PROVIDERS:
        if provider == "tencent":
            from ..provision.tencent import TencentProvisioner

            by_provider[provider] = TencentProvisioner(policy)
        elif provider == "aliyun":
            from ..provision.alibaba import AlibabaProvisioner

            by_provider[provider] = AlibabaProvisioner(policy)
        else:
            by_provider[provider] = AwsProvisioner(policy)
    return Clouds(by_provider, launches=policy.allowed_providers)


def _default_approvals(context: "Context") -> Any:
    from ..approvals import Approvals
    from ..policy import load_policy
    from ..store import Store

    policy = load_policy()
    return Approvals(Store(), policy, clouds(policy), context.catalog)


@dataclass
class Context:
    """What commands need from outside: the catalog, clocks, NVML and AWS, the request lifecycle, defaults.

    Faces build one per process (or per test) and pass it to `run`; the core never reaches for these itself.
    The shared objects are built once, under one lock (a server's first requests and its jobs thread may ask
    at the same instant); servers call `prepare()` before serving so the first request finds them ready.
    """

    catalog_loader: Callable[[], Catalog] = load_catalog
    today: Callable[[], dt.date] = dt.date.today
    now: Callable[[], dt.datetime] = _utc_now
    sampler_factory: Callable[[], Any] = _nvml_sampler
    aws_client: Callable[[str, str | None], Any] = _aws_client
    approvals_factory: Callable[["Context"], Any] | None = None
    currency: str = field(default_factory=currency_setting)
    _catalog: Catalog | None = None
    _sampler: Any = None
    _approvals: Any = None
    _answers: collections.OrderedDict[Any, Any] = field(default_factory=collections.OrderedDict)
    _answers_lock: threading.Lock = field(default_factory=threading.Lock)
    _build_lock: threading.RLock = field(default_factory=threading.RLock)  # re-entrant: approvals needs the catalog

    def remember(self, key: Any, compute: Callable[[], Any]) -> Any:
        """Quotes, plans and TCO are pure functions of (command, catalog, date, currency): the last 256 answers
        are kept, so a team asking the same question again gets it without recomputing."""
        with self._answers_lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key]
        value = compute()
        with self._answers_lock:
            self._answers[key] = value
            while len(self._answers) > ANSWERS_KEPT:
                self._answers.popitem(last=False)
        return value

    def prepare(self) -> "Context":
        """Build the catalog and the request lifecycle now, upgrading the store's schema: what a server does
        once before it serves (a bad policy or an unreachable database fails here, not on a user's click)."""
        self.catalog  # noqa: B018 - built for its side effect
        self.approvals  # noqa: B018
        return self

    def _built(self, name: str, build: Callable[[], Any]) -> Any:
        value = getattr(self, name)
        if value is None:
            with self._build_lock:
                value = getattr(self, name)
                if value is None:
                    value = build()
                    setattr(self, name, value)
        return value

    @property
    def approvals(self) -> Any:
        """The request lifecycle over the configured store (schema upgraded), policy and AWS."""
        return self._built("_approvals", lambda: (self.approvals_factory or _default_approvals)(self))

    @property
    def sampler(self) -> Any:
        return self._built("_sampler", self.sampler_factory)

    @property
    def catalog(self) -> Catalog:
        return self._built("_catalog", self.catalog_loader)
