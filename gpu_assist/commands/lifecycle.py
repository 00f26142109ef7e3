"""The request lifecycle as a process builds it from its settings: the configured store, policy and clouds.

A module of its own, off the quote path: it loads the request store (SQLAlchemy), the policy and every cloud's
provisioner, which a quote needs none of; `Context` imports it on the first use of its approvals.
"""

from __future__ import annotations

from ..catalog import Catalog
from ..clouds.launch.aliyun import AlibabaProvisioner
from ..clouds.launch.aws import AwsProvisioner
from ..clouds.launch.tencent import TencentProvisioner
from ..lifecycle.approvals import Approvals
from ..lifecycle.policy import LAUNCH_PROVIDERS, Policy, load_policy
from ..lifecycle.ports import Clouds, Provisioner
from ..store import Store


def clouds(policy: Policy) -> Clouds:
    """Every cloud's provisioner (each resolves its SDK's credentials on its first call), launching only on the
    clouds the policy allows (`allowed_providers`, default AWS alone); any may stop what gpu-assist launched."""
    by_provider: dict[str, Provisioner] = {}
    for provider in LAUNCH_PROVIDERS:
        if provider == "tencent":
            by_provider[provider] = TencentProvisioner(policy)
        elif provider == "aliyun":
            by_provider[provider] = AlibabaProvisioner(policy)
        else:
            by_provider[provider] = AwsProvisioner(policy)
    return Clouds(by_provider, launches=policy.allowed_providers)


def configured_approvals(catalog: Catalog) -> Approvals:
    """The lifecycle over the configured store (schema upgraded), the configured policy and its clouds."""
    policy = load_policy()
    return Approvals(Store(), policy, clouds(policy), catalog)
