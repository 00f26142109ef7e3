"""Tencent Cloud CVM's operations for the one launcher (`launcher.Launcher`), through the official SDK
(tencentcloud-sdk-python, CVM API 2017-03-12): `DescribeInstances` filtered by `tag:gpu-assist:request-id` (the
lookup by tag), `RunInstances` with its `ClientToken` (CVM returns the same instances for a token it has seen) and
`DryRun`, `DescribeZones`, `DescribeAccountQuota`, Stop- and TerminateInstances.
Capacity: the sold-out errors below (spot: `InstanceMarketOptions.SpotOptions.MaxPrice` is the approved ceiling).
Credentials: the SDK's own chain as `clouds/sdk/tencent.py` builds it (`TENCENTCLOUD_SECRET_ID`/
`TENCENTCLOUD_SECRET_KEY`, the profile file, a CVM role on a CVM instance or where one is named), resolved on the
first call; nothing of them is stored or logged.
What CVM cannot do here: move a tag (tags are written by the Tag API, another SDK package), so an extension
moves the request's end in the store, which the reaper reads, and leaves the instances' `expires-at` tag as
launched.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ...errors import GpuAssistError
from ...facts import PricingModel
from ...lifecycle.policy import Policy
from ...lifecycle.specs import LaunchSpec
from ..tags import REQUEST_TAG, cny_ceiling, launch_tags
from .launcher import Found, Launcher, SdkOperations

# RunInstances' errors that mean "not here, try elsewhere": sold out in the zone, or the type not sold there.
CAPACITY_ERRORS = ("ResourceInsufficient.SpecifiedInstanceType", "ResourcesSoldOut.SpecifiedInstanceType",
                   "ResourceInsufficient.ZoneSoldOutForSpecifiedInstance", "ResourcesSoldOut.AvailableZone",
                   "InvalidParameterValue.InstanceTypeNotSupportedInZone")
_LIVE_STATES = ("PENDING", "LAUNCH_FAILED", "RUNNING", "STOPPING", "STOPPED", "STARTING", "REBOOTING")
_CHARGE = {"on-demand": "POSTPAID_BY_HOUR", "spot": "SPOTPAID"}
_PAGE = 100  # DescribeInstances' largest page
class Cvm(SdkOperations):
    """CVM's operations; `client(region)` gives a CvmClient (tests point it at a local server)."""

    provider = "tencent"

    def _call(self, region: str, action: str, params: dict[str, Any]) -> dict[str, Any]:
        """One CVM API call's `Response`, retried with backoff while throttled or the network fails."""
        def call() -> dict[str, Any]:
            response: dict[str, Any] = self.client(region).call_json(action, params)["Response"]
            return response
        return self.retried(call)

    # ---- checks before approval -------------------------------------------------------------------------
    def dry_call(self, spec: LaunchSpec) -> None:
        zone = next(iter(self.zones(spec.region, spec.zone or None)), None)
        self._call(spec.region, "RunInstances", {**self._launch_args(spec, spec.region, zone), "DryRun": True})

    def quota(self, spec: LaunchSpec) -> str:
        """Whether the account's instance quota for the charge type covers the request, from
        `DescribeAccountQuota` (per zone: post-paid or spot instances remaining); 'quota unknown' otherwise."""
        kind = "SpotPaidQuotaSet" if spec.pricing_model == PricingModel.SPOT else "PostPaidQuotaSet"
        try:
            overview = self._call(spec.region, "DescribeAccountQuota", {})["AccountQuotaOverview"]
            quotas = overview["AccountQuota"][kind]
        except Exception as error:  # noqa: BLE001
            reason = error.message if isinstance(error, GpuAssistError) else self.explain(error, "").message
            return f"quota unknown ({kind}): {reason}"
        zones = [q for q in quotas if not spec.zone or q.get("Zone") == spec.zone]
        if not zones:
            return f"quota unknown (no {kind} for {spec.zone or spec.region})"
        best = max(zones, key=lambda q: int(q.get("RemainingQuota", 0)))
        left, total = int(best.get("RemainingQuota", 0)), int(best.get("TotalQuota", 0))
        if spec.instances > left:
            return f"quota too low: {spec.instances} instances needed, {left} of {total} left ({kind}, " \
                   f"{best.get('Zone')}); ask Tencent Cloud to raise it"
        return f"ok: {spec.instances} of {left} instances left ({kind}, {best.get('Zone')})"

    # ---- launch -----------------------------------------------------------------------------------------
    def _launch_args(self, spec: LaunchSpec, region: str, zone: str | None, token: str | None = None, *,
                     ends_at: str = "") -> dict[str, Any]:
        """RunInstances' parameters for `spec` in `zone`, tagged (`tags.launch_tags`)."""
        image = self.image('"img-…"')
        tags = launch_tags(spec, self.policy, ends_at)
        args: dict[str, Any] = {
            "InstanceChargeType": _CHARGE.get(spec.pricing_model, "POSTPAID_BY_HOUR"),
            "Placement": {"Zone": zone or region}, "InstanceType": spec.instance_type, "ImageId": image,
            "InstanceCount": spec.instances, "InstanceName": f"gpu-assist-{spec.request_id}",
            "TagSpecification": [{"ResourceType": "instance",
                                  "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]}
        if token:
            args["ClientToken"] = token
        vpc, subnet = self.policy.cloud(self.provider, "vpc_id"), self.policy.cloud(self.provider, "subnet_id")
        if vpc and subnet:
            args["VirtualPrivateCloud"] = {"VpcId": vpc, "SubnetId": subnet}
        group = self.policy.cloud(self.provider, "security_group_id")
        if group:
            args["SecurityGroupIds"] = [group]
        if spec.pricing_model == PricingModel.SPOT:
            args["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": {
                "MaxPrice": format(cny_ceiling(spec).normalize(), "f"), "SpotInstanceType": "one-time"}}
        return args

    def _describe(self, region: str, **params: Any) -> list[dict[str, Any]]:
        """Every instance DescribeInstances returns for `params`, page by page."""
        found: list[dict[str, Any]] = []
        while True:
            page = self._call(region, "DescribeInstances", {**params, "Offset": len(found), "Limit": _PAGE})
            found += page.get("InstanceSet", [])
            if not page.get("InstanceSet") or len(found) >= int(page.get("TotalCount", 0)):
                return found

    def find_tagged(self, region: str, request_id: str) -> list[Found]:
        found = self._describe(region, Filters=[{"Name": f"tag:{REQUEST_TAG}", "Values": [request_id]}])
        return [Found(i["InstanceId"], i.get("Placement", {}).get("Zone"), i.get("CreatedTime") or "")
                for i in found if i.get("InstanceState") in _LIVE_STATES]

    def zones(self, region: str, zone: str | None) -> list[str | None]:
        """Zones to try in `region`: the offer's zone when the catalog names one, else every available zone."""
        if zone:
            return [zone]
        zones = self._call(region, "DescribeZones", {}).get("ZoneSet", [])
        return [z["Zone"] for z in zones if z.get("ZoneState") == "AVAILABLE"]

    def run(self, spec: LaunchSpec, region: str, zone: str | None, token: str, ends_at: str
            ) -> tuple[list[str], str | None]:
        args = self._launch_args(spec, region, zone, token, ends_at=ends_at)
        return list(self._call(region, "RunInstances", args)["InstanceIdSet"]), zone

    def is_capacity(self, error: Exception) -> str | None:
        code = getattr(error, "code", None)
        return str(code) if code in CAPACITY_ERRORS else None

    # ---- ownership, stop, extend ------------------------------------------------------------------------
    def owners(self, region: str, instance_ids: list[str]) -> dict[str, str | None]:
        found = self._describe(region, InstanceIds=instance_ids)
        tags = {i["InstanceId"]: {t["Key"]: t["Value"] for t in i.get("Tags") or []} for i in found}
        return {i: tags.get(i, {}).get(REQUEST_TAG) for i in instance_ids}

    def terminate(self, region: str, instance_ids: list[str]) -> None:
        self._call(region, "TerminateInstances", {"InstanceIds": instance_ids})

    def stop(self, region: str, instance_ids: list[str]) -> None:
        self._call(region, "StopInstances", {"InstanceIds": instance_ids, "StopType": "SOFT_FIRST",
                                             "StoppedMode": "STOP_CHARGING"})

    def tag_expiry(self, region: str, instance_ids: list[str], ends_at: str) -> None:
        """Nothing: CVM's API writes no tags after launch (the Tag API is another SDK package); the store's end,
        which the reaper reads, moves."""


class TencentProvisioner(Launcher):
    """The launcher on Tencent Cloud CVM."""

    def __init__(self, policy: Policy, client: Callable[[str], Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        super().__init__(Cvm(policy, client, sleep))
