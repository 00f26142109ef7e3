"""The request lifecycle as a process builds it from its settings: the configured store, policy and clouds.

A module of its own, off the quote path and off the store verbs' (`requests`, `spend` and `commit` read the
context's store and policy alone): it loads the lifecycle and every cloud's provisioner; `Context` imports it on
the first use of its approvals.
"""

from __future__ import annotations

from typing import Callable

from ..catalog import Catalog
from ..catalog.providers import ENGINE_PROVIDERS, GATE_CLUSTERS, LAUNCH_PROVIDERS
from ..clouds.launch.aliyun import AlibabaProvisioner
from ..clouds.launch.aws import AwsProvisioner
from ..clouds.launch.huawei import HuaweiProvisioner
from ..clouds.launch.skypilot import engine
from ..clouds.launch.tencent import TencentProvisioner
from ..errors import PolicyError
from ..lifecycle.approvals import Approvals
from ..lifecycle.policy import Policy
from ..lifecycle.ports import Clouds, Provisioner
from ..store import Store

# The provisioner of each cloud the registry says gpu-assist launches on: natively, or through SkyPilot (the engine).
PROVISIONERS: dict[str, Callable[[Policy], Provisioner]] = {
    "aws": AwsProvisioner, "tencent": TencentProvisioner, "aliyun": AlibabaProvisioner, "huawei": HuaweiProvisioner,
    **{name: engine(name) for name in ENGINE_PROVIDERS}}


def clouds(policy: Policy) -> Clouds:
    """Every cloud's provisioner (each resolves its SDK's credentials on its first call), launching only on the
    clouds the policy allows (`allowed_providers`, default AWS alone); any may stop what gpu-assist launched.
    A launch cloud of the registry without a provisioner here is an error, never another cloud's."""
    missing = [name for name in LAUNCH_PROVIDERS if name not in PROVISIONERS]
    if missing:
        raise PolicyError(f"no provisioner for {', '.join(missing)}", hint="add it to commands.lifecycle.PROVISIONERS")
    by_provider = {name: PROVISIONERS[name](policy) for name in LAUNCH_PROVIDERS}
    # the clusters SkyPilot's gate admitted: brought down through the engine, never launched through this key
    by_provider[GATE_CLUSTERS] = engine(GATE_CLUSTERS)(policy)
    return Clouds(by_provider, launches=policy.allowed_providers, source=policy.source)


def configured_approvals(store: Store, policy: Policy, catalog: Catalog) -> Approvals:
    """The lifecycle over the configured store (schema upgraded), the configured policy and its clouds."""
    return Approvals(store, policy, clouds(policy), catalog)
