"""Alibaba Cloud ECS through the official SDK (alibabacloud-ecs20140526, ECS API 2014-05-26): dry runs, quota
checks, exactly-once launches and stops of gpu-assist's own instances, as `provision.aws` does on EC2.

Exactly once: instances tagged with the request id are looked up in every candidate region first
(`DescribeInstances` with `Tag.1.Key`/`Tag.1.Value`), and each `RunInstances` carries the request id and the zone as
its `ClientToken` (ECS returns the same instances for a token it has seen), so a retried call after a crash, or a
second owner's call, starts nothing new; the caller's ownership is checked right before each RunInstances.
Capacity: out-of-stock errors move on to the next zone, then the next allowed region, never above the approved
ceiling (spot: `SpotStrategy=SpotWithPriceLimit`, `SpotPriceLimit` the ceiling in CNY). An extension moves the
`gpu-assist:expires-at` tag (`TagResources`).
Credentials: the SDK's own chain as `sources.aliyun.chain` builds it (`ALIBABA_CLOUD_ACCESS_KEY_ID`/
`ALIBABA_CLOUD_ACCESS_KEY_SECRET`, the profile files, an instance RAM role on an ECS instance or where one is named),
resolved on the first call; nothing of them is stored or logged.
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
from decimal import Decimal
from typing import Any, Callable

from ...errors import GpuAssistError, PolicyError, ProvisionError
from ...facts import PricingModel
from ...lifecycle.policy import Policy
from ...lifecycle.ports import LaunchOutcome, OwnershipLost, client_token
from ...lifecycle.specs import LaunchSpec
from ..aws import EXPIRES_TAG, REQUEST_TAG, REQUESTER_TAG

# RunInstances' errors that mean "not here, try elsewhere".
CAPACITY_ERRORS = ("OperationDenied.NoStock", "Zone.NotOnSale", "InvalidInstanceType.ZoneNotSupported",
                   "InvalidResourceType.NotSupported", "OperationDenied.ZoneNotAllowed")
_LIVE_STATES = ("Pending", "Starting", "Running", "Stopping", "Stopped")
_PAGE = 100
ENDPOINT_VARIABLE = "GPU_ASSIST_ALIYUN_ENDPOINT"
RETRIED = ("Throttling", "Throttling.User", "Throttling.Api", "ServiceUnavailable")
RETRIES = 4


def _default_client(region: str) -> Any:
    """An ECS client for `region` with the SDK's own credential chain; `GPU_ASSIST_ALIYUN_ENDPOINT` (a URL: a VPC
    endpoint, or a local fake in tests) replaces the public one, as AWS_ENDPOINT_URL does for boto3."""
    # the SDK (the optional `china` extra) with its importer, on the first call: every process builds this provisioner
    from ...sources.aliyun import ecs_client

    url = urllib.parse.urlsplit(os.environ.get(ENDPOINT_VARIABLE, ""))
    return ecs_client(region, url.netloc or None, scheme=url.scheme or "https")


def _ecs_models() -> Any:
    """The SDK's request models (`alibabacloud_ecs20140526.models`, untyped), loaded on the first call as the
    client is."""
    # the optional `china` extra, as in `_default_client`
    from alibabacloud_ecs20140526 import models

    return models


def _yuan(spec: LaunchSpec) -> str:
    """The approved hourly ceiling in CNY, as SpotPriceLimit takes it; ProvisionError when the spec has none."""
    if spec.native_currency == "CNY" and spec.native_ceiling_hourly is not None:
        value: Decimal = spec.native_ceiling_hourly
    elif spec.currency == "CNY":
        value = spec.ceiling_hourly
    else:
        raise ProvisionError(f"no CNY ceiling for the spot launch {spec.request_id}", hint="ask for it again")
    return format(value.normalize(), "f")


class AlibabaProvisioner:
    """A `provision.Provisioner` on Alibaba Cloud ECS. `client(region)` gives an ECS client (tests point it at a
    local server)."""

    provider = "aliyun"

    def __init__(self, policy: Policy, client: Callable[[str], Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.policy = policy
        self.client = client or _default_client
        self.sleep = sleep

    def __repr__(self) -> str:
        return f"AlibabaProvisioner(account={self.policy.cloud(self.provider, 'account')!r})"

    def _call(self, region: str, action: str, **fields: Any) -> dict[str, Any]:
        """One ECS API call with the SDK's request model for `action`; its response body as the documented JSON.
        Retried with backoff while ECS throttles (every call is safe to repeat: RunInstances by its ClientToken)."""
        request = getattr(_ecs_models(), f"{action}Request")(region_id=region, **fields)
        method = "_".join(part.lower() for part in _words(action))
        for attempt in range(RETRIES):
            try:
                body: dict[str, Any] = getattr(self.client(region), method)(request).body.to_map()
                return body
            except Exception as error:
                if getattr(error, "code", None) not in RETRIED or attempt == RETRIES - 1:
                    raise
                self.sleep(0.5 * 2 ** attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    @staticmethod
    def _explain(error: Exception, doing: str) -> ProvisionError:
        if isinstance(error, GpuAssistError):
            return ProvisionError(f"{doing}: {error.message}", hint=error.hint)
        code = getattr(error, "code", None) or type(error).__name__
        message = getattr(error, "message", None) or str(error)
        hint = "check ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET (or the RAM role)" \
            if "Signature" in str(code) or "AccessKey" in str(code) else None
        return ProvisionError(f"Alibaba Cloud refused {doing}: {code}: {str(message).splitlines()[0][:200]}",
                              hint=hint)

    # ---- checks before approval -------------------------------------------------------------------------
    def dry_run(self, spec: LaunchSpec) -> str:
        """'ok' when ECS says the launch would succeed (`DryRunOperation`); otherwise the reason (never raises)."""
        try:
            zone = next(iter(self._zones(spec.region, spec.zone or None)), None)
            self._call(spec.region, "RunInstances", **self._launch_args(spec, zone), dry_run=True)
        except Exception as error:  # noqa: BLE001 - the SDK's and the network's errors all become the reason
            if getattr(error, "code", None) == "DryRunOperation":
                return "ok"
            if isinstance(error, GpuAssistError):
                return f"not checked: {error.message}"
            return f"refused: {self._explain(error, 'checking the launch (DryRun)').message}"
        return "ok"

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
            reason = error.message if isinstance(error, GpuAssistError) else self._explain(error, "").message
            return f"quota unknown ({name}): {reason}"
        needed = spec.vcpus * spec.instances
        if needed > limit:
            return f"quota too low: {needed} vCPUs needed, limit {limit} ({name}); ask Alibaba Cloud to raise it"
        return f"ok: {needed} vCPUs of {limit} ({name})"

    # ---- launch -----------------------------------------------------------------------------------------
    def _launch_args(self, spec: LaunchSpec, zone: str | None, token: str | None = None, *,
                     ends_at: str = "") -> dict[str, Any]:
        """RunInstances' fields for `spec` in `zone`, tagged with the request, its requester, its end and the cost
        tags (the launch's project over the policy's)."""
        image = self.policy.cloud(self.provider, "image_id")
        if not image:
            raise ProvisionError("no image configured for Alibaba Cloud launches",
                                 hint="set image_id in [policy.clouds.aliyun] (a GPU image of the region)")
        tags = {REQUEST_TAG: spec.request_id, REQUESTER_TAG: spec.requester, EXPIRES_TAG: ends_at,
                **self.policy.cost_tags, **({"project": spec.project} if spec.project else {})}
        args: dict[str, Any] = {
            "zone_id": zone, "instance_type": spec.instance_type, "image_id": image, "amount": spec.instances,
            "min_amount": spec.instances, "instance_name": f"gpu-assist-{spec.request_id}",
            "instance_charge_type": "PostPaid",
            "tag": [_ecs_models().RunInstancesRequestTag(key=k, value=v) for k, v in tags.items()]}
        if token:
            args["client_token"] = token
        for setting, field in (("vswitch_id", "v_switch_id"), ("security_group_id", "security_group_id")):
            if self.policy.cloud(self.provider, setting):
                args[field] = self.policy.cloud(self.provider, setting)
        if spec.pricing_model == PricingModel.SPOT:
            args.update(spot_strategy="SpotWithPriceLimit", spot_price_limit=float(_yuan(spec)))
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

    def find(self, request_id: str, regions: list[str]) -> tuple[str, list[dict[str, Any]]]:
        """(region, live instances) carrying the request's tag, in the first region that has any."""
        for region in regions:
            tag = [_ecs_models().DescribeInstancesRequestTag(key=REQUEST_TAG, value=request_id)]
            found = [i for i in self._describe(region, tag=tag) if i.get("Status") in _LIVE_STATES]
            if found:
                return region, found
        return "", []

    def _zones(self, region: str, zone: str | None) -> list[str]:
        if zone:
            return [zone]
        return [z["ZoneId"] for z in self._call(region, "DescribeZones").get("Zones", {}).get("Zone", [])]

    def launch(self, spec: LaunchSpec, *, ends_at: str, still_ours: Callable[[], bool]) -> LaunchOutcome:
        """As `provision.tencent.TencentProvisioner.launch`, on ECS."""
        regions = list(dict.fromkeys(c.region for c in spec.candidates)) or [spec.region]
        try:
            region, existing = self.find(spec.request_id, regions)
        except Exception as error:  # noqa: BLE001
            raise self._explain(error, "looking for the request's instances") from None
        if existing:
            existing = sorted(existing, key=lambda i: (i.get("CreationTime") or "", i["InstanceId"]))
            return LaunchOutcome([i["InstanceId"] for i in existing[:spec.instances]], region,
                                 existing[0].get("ZoneId"), reused=True)
        attempts: list[str] = []
        for candidate in spec.candidates:
            if candidate.hourly > spec.ceiling_hourly:
                attempts.append(f"{candidate.region}: {candidate.hourly}/h is above the ceiling, skipped")
                continue
            try:
                zones = self._zones(candidate.region, candidate.zone)
            except Exception as error:  # noqa: BLE001
                attempts.append(f"{candidate.region}: {self._explain(error, 'listing zones').message}")
                continue
            for zone in zones:
                outcome = self._run(spec, candidate.region, zone, ends_at, still_ours, attempts)
                if outcome is not None:
                    return outcome
        raise ProvisionError(f"no capacity for {spec.instances}x{spec.instance_type} within "
                             f"{spec.ceiling_hourly}/h: " + "; ".join(attempts))

    def _run(self, spec: LaunchSpec, region: str, zone: str, ends_at: str, still_ours: Callable[[], bool],
             attempts: list[str]) -> LaunchOutcome | None:
        if not still_ours():
            raise OwnershipLost(f"{spec.request_id} was taken over by another process before RunInstances")
        args = self._launch_args(spec, zone, client_token(spec.request_id, zone), ends_at=ends_at)
        try:
            body = self._call(region, "RunInstances", **args)
        except GpuAssistError:
            raise
        except Exception as error:  # noqa: BLE001
            if getattr(error, "code", None) in CAPACITY_ERRORS:
                attempts.append(f"{zone}: {getattr(error, 'code', '')}")
                return None
            raise self._explain(error, f"launching {spec.instance_type} in {region}") from None
        return LaunchOutcome(list(body["InstanceIdSets"]["InstanceIdSet"]), region, zone, attempts=attempts)

    def terminate_surplus(self, request_id: str, region: str, keep: list[str]) -> str:
        try:
            _, live = self.find(request_id, [region])
            surplus = [i["InstanceId"] for i in live if i["InstanceId"] not in keep]
            if surplus:
                self._call(region, "DeleteInstances", instance_id=surplus, force=True)
        except Exception as error:  # noqa: BLE001
            return f"could not check for duplicate instances: {self._explain(error, 'checking').message}"
        return f"terminated {len(surplus)} duplicate instance(s), keeping {', '.join(keep)}: {', '.join(surplus)}" \
            if surplus else ""

    # ---- stop -------------------------------------------------------------------------------------------
    def managed(self, instance_ids: list[str], region: str) -> dict[str, str | None]:
        try:
            found = self._describe(region, instance_ids=json.dumps(instance_ids))
        except Exception as error:  # noqa: BLE001
            raise self._explain(error, "looking up the instances to stop") from None
        tags = {i["InstanceId"]: {t["TagKey"]: t["TagValue"] for t in i.get("Tags", {}).get("Tag", [])}
                for i in found}
        return {i: tags.get(i, {}).get(REQUEST_TAG) for i in instance_ids}

    def require_managed(self, instance_ids: list[str], region: str) -> dict[str, str]:
        owners = self.managed(instance_ids, region)
        foreign = [i for i in instance_ids if not owners.get(i)]
        if foreign:
            raise PolicyError(f"not launched by gpu-assist: {', '.join(foreign)}",
                              hint=f"gpu-assist acts only on instances carrying its {REQUEST_TAG} tag")
        return {i: str(owners[i]) for i in instance_ids}

    def set_expiry(self, instance_ids: list[str], region: str, ends_at: str) -> None:
        """Move the `gpu-assist:expires-at` tag of instances gpu-assist launched (`TagResources`)."""
        self.require_managed(instance_ids, region)
        try:
            self._call(region, "TagResources", resource_type="instance", resource_id=instance_ids,
                       tag=[_ecs_models().TagResourcesRequestTag(key=EXPIRES_TAG, value=ends_at)])
        except Exception as error:  # noqa: BLE001
            raise self._explain(error, f"tagging {', '.join(instance_ids)}") from None

    def stop(self, instance_ids: list[str], region: str) -> list[str]:
        """Stop (no charging while stopped) or release, per policy, only instances gpu-assist launched."""
        self.require_managed(instance_ids, region)
        try:
            if self.policy.stop_action == "stop":
                self._call(region, "StopInstances", instance_id=instance_ids, stopped_mode="StopCharging")
            else:
                self._call(region, "DeleteInstances", instance_id=instance_ids, force=True)
        except Exception as error:  # noqa: BLE001
            raise self._explain(error, f"stopping {', '.join(instance_ids)}") from None
        return instance_ids


def _words(action: str) -> list[str]:
    """`RunInstances` → ["Run", "Instances"]: the SDK's method for an action is its words in snake case."""
    words, current = [], ""
    for char in action:
        if char.isupper() and current:
            words.append(current)
            current = ""
        current += char
    return [*words, current]
