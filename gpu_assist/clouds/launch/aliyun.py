"""Alibaba Cloud ECS's operations for the one launcher (`launcher.Launcher`), through the official SDK
(alibabacloud-ecs20140526, ECS API 2014-05-26): `DescribeInstances` with `Tag.1.Key`/`Tag.1.Value` (the lookup by
tag), `RunInstances` with its `ClientToken` (ECS returns the same instances for a token it has seen) and `DryRun`,
`DescribeZones`, `DescribeAccountAttributes` (the vCPU quota), StopInstances, DeleteInstances, and `TagResources`
(an extension moves the `gpu-assist:expires-at` tag).
Capacity: the out-of-stock errors below (spot: `SpotStrategy=SpotWithPriceLimit`, `SpotPriceLimit` the approved
ceiling in CNY).
Credentials: the SDK's own chain as `clouds/sdk/aliyun.py` builds it (`ALIBABA_CLOUD_ACCESS_KEY_ID`/
`ALIBABA_CLOUD_ACCESS_KEY_SECRET`, the profile files, an instance RAM role on an ECS instance or where one is named),
resolved on the first call; nothing of them is stored or logged.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from ...errors import GpuAssistError
from ...facts import PricingModel
from ...lifecycle.policy import Policy
from ...lifecycle.specs import LaunchSpec
from ..tags import EXPIRES_TAG, REQUEST_TAG, cny_ceiling, launch_tags
from .launcher import Found, Launcher, SdkOperations

# RunInstances' errors that mean "not here, try elsewhere".
CAPACITY_ERRORS = ("OperationDenied.NoStock", "Zone.NotOnSale", "InvalidInstanceType.ZoneNotSupported",
                   "InvalidResourceType.NotSupported", "OperationDenied.ZoneNotAllowed")
_LIVE_STATES = ("Pending", "Starting", "Running", "Stopping", "Stopped")
_PAGE = 100
class Ecs(SdkOperations):
    """ECS's operations; `client(region)` gives an ECS client (tests point it at a local server)."""

    provider = "aliyun"

    def _call(self, region: str, action: str, **fields: Any) -> dict[str, Any]:
        """One ECS API call with the SDK's request model for `action`; its response body as the documented JSON,
        retried with backoff while ECS throttles."""
        request = getattr(self.adapter().ecs_models, f"{action}Request")(region_id=region, **fields)
        method = "_".join(part.lower() for part in _words(action))

        def call() -> dict[str, Any]:
            body: dict[str, Any] = getattr(self.client(region), method)(request).body.to_map()
            return body
        return self.retried(call)

    # ---- checks before approval -------------------------------------------------------------------------
    def dry_call(self, spec: LaunchSpec) -> None:
        zone = next(iter(self.zones(spec.region, spec.zone or None)), None)
        self._call(spec.region, "RunInstances", **self._launch_args(spec, zone), dry_run=True)

    def quota(self, spec: LaunchSpec) -> str:
        """Whether the account's pay-as-you-go (or spot) vCPU quota covers the request, from
        `DescribeAccountAttributes`; 'quota unknown' when unanswered or the type's vCPUs are unknown."""
        name = "max-spot-instance-vcpu-count" if spec.pricing_model == PricingModel.SPOT \
            else "max-postpaid-instance-vcpu-count"
        if not spec.vcpus:
            return f"quota unknown ({name}: the type's vCPUs are not in the catalog)"
        try:
            body = self._call(spec.region, "DescribeAccountAttributes", attribute_name=[name])
            items = body["AccountAttributeItems"]["AccountAttributeItem"]
            values = [v for item in items if item.get("AttributeName") == name
                      for v in item["AttributeValues"]["ValueItem"]]
            limit = int(values[0]["Value"])
        except Exception as error:  # noqa: BLE001
            reason = error.message if isinstance(error, GpuAssistError) else self.explain(error, "").message
            return f"quota unknown ({name}): {reason}"
        needed = spec.vcpus * spec.instances
        if needed > limit:
            return f"quota too low: {needed} vCPUs needed, limit {limit} ({name}); ask Alibaba Cloud to raise it"
        return f"ok: {needed} vCPUs of {limit} ({name})"

    # ---- launch -----------------------------------------------------------------------------------------
    def _launch_args(self, spec: LaunchSpec, zone: str | None, token: str | None = None, *,
                     ends_at: str = "") -> dict[str, Any]:
        """RunInstances' fields for `spec` in `zone`, tagged (`tags.launch_tags`)."""
        image = self.image('"…"')
        tags = launch_tags(spec, self.policy, ends_at)
        args: dict[str, Any] = {
            "zone_id": zone, "instance_type": spec.instance_type, "image_id": image, "amount": spec.instances,
            "min_amount": spec.instances, "instance_name": f"gpu-assist-{spec.request_id}",
            "instance_charge_type": "PostPaid",
            "tag": [self.adapter().ecs_models.RunInstancesRequestTag(key=k, value=v) for k, v in tags.items()]}
        if token:
            args["client_token"] = token
        for setting, field in (("vswitch_id", "v_switch_id"), ("security_group_id", "security_group_id")):
            if self.policy.cloud(self.provider, setting):
                args[field] = self.policy.cloud(self.provider, setting)
        if spec.pricing_model == PricingModel.SPOT:
            args.update(spot_strategy="SpotWithPriceLimit", spot_price_limit=float(cny_ceiling(spec)))
        return args

    def _describe(self, region: str, **fields: Any) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            body = self._call(region, "DescribeInstances", page_number=page, page_size=_PAGE, **fields)
            instances = body.get("Instances", {}).get("Instance", [])
            found += instances
            if not instances or len(found) >= int(body.get("TotalCount", 0)):
                return found
            page += 1

    def find_tagged(self, region: str, request_id: str) -> list[Found]:
        tag = [self.adapter().ecs_models.DescribeInstancesRequestTag(key=REQUEST_TAG, value=request_id)]
        return [Found(i["InstanceId"], i.get("ZoneId"), i.get("CreationTime") or "")
                for i in self._describe(region, tag=tag) if i.get("Status") in _LIVE_STATES]

    def zones(self, region: str, zone: str | None) -> list[str | None]:
        if zone:
            return [zone]
        return [z["ZoneId"] for z in self._call(region, "DescribeZones").get("Zones", {}).get("Zone", [])]

    def run(self, spec: LaunchSpec, region: str, zone: str | None, token: str, ends_at: str
            ) -> tuple[list[str], str | None]:
        body = self._call(region, "RunInstances", **self._launch_args(spec, zone, token, ends_at=ends_at))
        return list(body["InstanceIdSets"]["InstanceIdSet"]), zone

    def is_capacity(self, error: Exception) -> str | None:
        code = getattr(error, "code", None)
        return str(code) if code in CAPACITY_ERRORS else None

    # ---- ownership, stop, extend ------------------------------------------------------------------------
    def owners(self, region: str, instance_ids: list[str]) -> dict[str, str | None]:
        found = self._describe(region, instance_ids=json.dumps(instance_ids))
        tags = {i["InstanceId"]: {t["TagKey"]: t["TagValue"] for t in i.get("Tags", {}).get("Tag", [])}
                for i in found}
        return {i: tags.get(i, {}).get(REQUEST_TAG) for i in instance_ids}

    def terminate(self, region: str, instance_ids: list[str]) -> None:
        self._call(region, "DeleteInstances", instance_id=instance_ids, force=True)

    def stop(self, region: str, instance_ids: list[str]) -> None:
        self._call(region, "StopInstances", instance_id=instance_ids, stopped_mode="StopCharging")

    def tag_expiry(self, region: str, instance_ids: list[str], ends_at: str) -> None:
        self._call(region, "TagResources", resource_type="instance", resource_id=instance_ids,
                   tag=[self.adapter().ecs_models.TagResourcesRequestTag(key=EXPIRES_TAG, value=ends_at)])


class AlibabaProvisioner(Launcher):
    """The launcher on Alibaba Cloud ECS."""

    def __init__(self, policy: Policy, client: Callable[[str], Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        super().__init__(Ecs(policy, client, sleep))


def _words(action: str) -> list[str]:
    """`RunInstances` → ["Run", "Instances"]: the SDK's method for an action is its words in snake case."""
    words, current = [], ""
    for char in action:
        if char.isupper() and current:
            words.append(current)
            current = ""
        current += char
    return [*words, current]
