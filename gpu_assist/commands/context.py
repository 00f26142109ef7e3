"""What commands need from outside (the catalog, clocks, NVML, AWS, the request lifecycle), built once per process."""

from __future__ import annotations

import collections
import datetime as dt
import os
import threading
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

from ..catalog import Catalog, default_catalog_dir, load_catalog
from ..errors import ConfigError
from ..pricing.query import CURRENCIES

if TYPE_CHECKING:
    from ..host.nvml import NvmlSampler
    from ..lifecycle.approvals import Approvals
    from ..lifecycle.policy import Policy
    from ..store import Store

ANSWERS_KEPT = 256
T = TypeVar("T")


# A boto3 client for a service in a region (None: the configured default); boto3's clients are untyped.
AwsClients = Callable[[str, str | None], Any]


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


def _directory_stamp() -> int | None:
    """When the catalog directory last changed (a file renamed in or out), in nanoseconds; None when it cannot be
    read (then loading it says why)."""
    try:
        return os.stat(default_catalog_dir()).st_mtime_ns
    except OSError:
        return None


def _nvml_sampler() -> NvmlSampler:
    from ..host.nvml import NvmlSampler  # `util` alone reads the GPUs: a quote does not load the NVML sampler

    return NvmlSampler()


def _aws_client(service: str, region: str | None) -> Any:
    from ..clouds.sdk.aws import client  # boto3, for fleet and spend alone: a quote does not load it

    return client(service, region)


def _configured_approvals(context: Context) -> Approvals:
    from .lifecycle import configured_approvals  # the lifecycle and the clouds' provisioners: not a quote's

    return configured_approvals(context.store, context.policy, context.catalog)


def _configured_store() -> Store:
    from ..store import Store  # SQLAlchemy: not a quote's

    return Store()


def _configured_policy() -> Policy:
    from ..lifecycle.policy import load_policy

    return load_policy()


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
    sampler_factory: Callable[[], NvmlSampler] = _nvml_sampler
    aws_client: AwsClients = _aws_client
    approvals_factory: Callable[[Context], Approvals] | None = None
    currency: str = field(default_factory=currency_setting)
    _catalog: Catalog | None = None
    _catalog_stamp: int | None = None  # the catalog directory's modification time when `_catalog` was read
    _sampler: NvmlSampler | None = None
    _approvals: Approvals | None = None
    _store: Store | None = None
    _policy: Policy | None = None
    _answers: collections.OrderedDict[Hashable, object] = field(default_factory=collections.OrderedDict)
    _answers_lock: threading.Lock = field(default_factory=threading.Lock)
    _build_lock: threading.RLock = field(default_factory=threading.RLock)  # re-entrant: approvals needs the catalog

    def remember(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Quotes, plans and TCO are pure functions of (command, catalog, date, currency): the last 256 answers
        are kept, so a team asking the same question again gets it without recomputing."""
        with self._answers_lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return cast(T, self._answers[key])  # the key names the command, so the answer is its type
        value = compute()
        with self._answers_lock:
            self._answers[key] = value
            while len(self._answers) > ANSWERS_KEPT:
                self._answers.popitem(last=False)
        return value

    def prepare(self) -> Context:
        """Build the catalog and the request lifecycle now, upgrading the store's schema: what a server does
        once before it serves (a bad policy or an unreachable database fails here, not on a user's click)."""
        self.catalog  # noqa: B018 - built for its side effect
        self.approvals  # noqa: B018
        return self

    def _built(self, name: str, build: Callable[[], T]) -> T:
        value = getattr(self, name)
        if value is None:
            with self._build_lock:
                value = getattr(self, name)
                if value is None:
                    value = build()
                    setattr(self, name, value)
        return cast(T, value)

    @property
    def approvals(self) -> Approvals:
        """The request lifecycle over the configured store (schema upgraded), policy and clouds."""
        return self._built("_approvals", lambda: (self.approvals_factory or _configured_approvals)(self))

    @property
    def store(self) -> Store:
        """The request store (schema upgraded): the lifecycle's where one is injected or built already, else the
        configured one opened alone, so a verb that only reads it (requests, spend) loads no lifecycle, clouds or
        catalog; a lifecycle built later shares it."""
        if self.approvals_factory is not None or self._approvals is not None:
            return self.approvals.store
        return self._built("_store", _configured_store)

    @property
    def policy(self) -> Policy:
        """The team's policy: the lifecycle's where one is injected or built already, else the configured one."""
        if self.approvals_factory is not None or self._approvals is not None:
            return self.approvals.policy
        return self._built("_policy", _configured_policy)

    @property
    def sampler(self) -> NvmlSampler:
        """This machine's GPUs, read through NVML (`sampler_factory`)."""
        return self._built("_sampler", self.sampler_factory)

    @property
    def catalog(self) -> Catalog:
        """The catalog; with the default loader, read again once its directory has changed (a jobs leader's refresh
        renames a new file into it, `sources.freshness`), so a long-running server answers from fresh prices
        without a restart, and its lifecycle prices launches from them too."""
        if self.catalog_loader is load_catalog:
            stamp = _directory_stamp()
            if stamp != self._catalog_stamp:
                with self._build_lock:
                    if stamp != self._catalog_stamp:
                        self._catalog, self._catalog_stamp = load_catalog(), stamp
                        if self._approvals is not None:
                            self._approvals.catalog = self._catalog
        return self._built("_catalog", self.catalog_loader)
