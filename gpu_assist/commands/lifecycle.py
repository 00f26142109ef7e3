"""The request lifecycle as a process builds it from its settings: the configured store, policy and clouds.

A module of its own, off the quote path: it loads the request store (SQLAlchemy) and the policy, which a quote needs
neither of, and names every cloud's provisioner, imported on that cloud's first use; `Context` imports it on the
first use of its approvals.
"""

from __future__ import annotations

from typing import Callable

from ..catalog import Catalog
from ..catalog.providers import LAUNCH_PROVIDERS
from ..errors import PolicyError
from ..lifecycle.approvals import Approvals
from ..lifecycle.policy import Policy, load_policy
from ..lifecycle.ports import Clouds, Launched, LaunchOutcome, Provisioner
from ..lifecycle.specs import LaunchSpec
from ..store import Store

def _aws(policy: Policy) -> Provisioner:
    from ..clouds.launch.aws import AwsProvisioner

    return AwsProvisioner(policy)


def _tencent(policy: Policy) -> Provisioner:
    from ..clouds.launch.tencent import TencentProvisioner

    return TencentProvisioner(policy)


def _aliyun(policy: Policy) -> Provisioner:
    from ..clouds.launch.aliyun import AlibabaProvisioner

    return AlibabaProvisioner(policy)


def _huawei(policy: Policy) -> Provisioner:
    from ..clouds.launch.huawei import HuaweiProvisioner

    return HuaweiProvisioner(policy)


# The provisioner of each cloud the registry says gpu-assist launches on natively, its module imported when it is
# built: on the cloud's first use (`_OnFirstUse`), so a verb that only reads the store loads no cloud's code.
PROVISIONERS: dict[str, Callable[[Policy], Provisioner]] = {
    "aws": _aws, "tencent": _tencent, "aliyun": _aliyun, "huawei": _huawei}


class _OnFirstUse:
    """A cloud's provisioner, built (its module imported) on the first call to it."""

    def __init__(self, name: str, policy: Policy):
        self.name, self.policy = name, policy
        self._built: Provisioner | None = None

    def __repr__(self) -> str:
        return f"{self.name} provisioner (built on first use)"

    @property
    def provisioner(self) -> Provisioner:
        if self._built is None:
            self._built = PROVISIONERS[self.name](self.policy)
        return self._built

    def dry_run(self, spec: LaunchSpec) -> str:
        return self.provisioner.dry_run(spec)

    def quota(self, spec: LaunchSpec) -> str:
        return self.provisioner.quota(spec)

    def require_managed(self, launched: Launched) -> dict[str, str]:
        return self.provisioner.require_managed(launched)

    def launch(self, spec: LaunchSpec, *, ends_at: str, still_ours: Callable[[], bool]) -> LaunchOutcome:
        return self.provisioner.launch(spec, ends_at=ends_at, still_ours=still_ours)

    def terminate_surplus(self, request_id: str, keep: Launched) -> str:
        return self.provisioner.terminate_surplus(request_id, keep)

    def stop(self, launched: Launched) -> list[str]:
        return self.provisioner.stop(launched)

    def set_expiry(self, launched: Launched, ends_at: str) -> None:
        self.provisioner.set_expiry(launched, ends_at)


def clouds(policy: Policy) -> Clouds:
    """Every cloud's provisioner (each imported and built on its first use, and resolving its SDK's credentials on
    its first call), launching only on the clouds the policy allows (`allowed_providers`, default AWS alone); any
    may stop what gpu-assist launched. A launch cloud of the registry without a provisioner here is an error, never
    another cloud's."""
    missing = [name for name in LAUNCH_PROVIDERS if name not in PROVISIONERS]
    if missing:
        raise PolicyError(f"no provisioner for {', '.join(missing)}", hint="add it to commands.lifecycle.PROVISIONERS")
    return Clouds({name: _OnFirstUse(name, policy) for name in LAUNCH_PROVIDERS}, launches=policy.allowed_providers,
                  source=policy.source)


def configured_approvals(catalog: Catalog) -> Approvals:
    """The lifecycle over the configured store (schema upgraded), the configured policy and its clouds."""
    policy = load_policy()
    return Approvals(Store(), policy, clouds(policy), catalog)
