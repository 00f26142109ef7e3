"""Tencent Cloud CVM through the official SDK (tencentcloud-sdk-python, CVM API 2017-03-12): dry runs, quota
checks, exactly-once launches and stops of gpu-assist's own instances, as `provision.aws` does on EC2.

Exactly once: before any launch, instances tagged with the request id are looked up in every candidate region
(`DescribeInstances` filtered by `tag:gpu-assist:request-id`), and each `RunInstances` carries the request id and
the zone as its `ClientToken` (CVM returns the same instances for a token it has seen), so a retried call after a
crash, or a second owner's call, starts nothing new. The caller's ownership is checked (its lease renewed) right
before each RunInstances; instances tagged with the request beyond the ones the store records are terminated
only by the caller (`terminate_surplus`).
Capacity: sold-out errors move on to the next zone, then the next allowed region, never above the approved hourly
ceiling (spot: `InstanceMarketOptions.SpotOptions.MaxPrice` is that ceiling).
Credentials: the SDK's own chain as `sources.tencent.chain` builds it (`TENCENTCLOUD_SECRET_ID`/
`TENCENTCLOUD_SECRET_KEY`, the profile file, a CVM role on a CVM instance or where one is named), resolved on the
first call; nothing of them is stored or logged.
What CVM cannot do here: move a tag (tags are written by the Tag API, another SDK package), so an extension
moves the request's end in the store, which the reaper reads, and leaves the instances' `expires-at` tag as
launched.
"""

from __future__ import annotations

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

# RunInstances' errors that mean "not here, try elsewhere": sold out in the zone, or the type not sold there.
CAPACITY_ERRORS = ("ResourceInsufficient.SpecifiedInstanceType", "ResourcesSoldOut.SpecifiedInstanceType",
                   "ResourceInsufficient.ZoneSoldOutForSpecifiedInstance", "ResourcesSoldOut.AvailableZone",
                   "InvalidParameterValue.InstanceTypeNotSupportedInZone")
_LIVE_STATES = ("PENDING", "LAUNCH_FAILED", "RUNNING", "STOPPING", "STOPPED", "STARTING", "REBOOTING")
_CHARGE = {"on-demand": "POSTPAID_BY_HOUR", "spot": "SPOTPAID"}
_PAGE = 100  # DescribeInstances' largest page
ENDPOINT_VARIABLE = "GPU_ASSIST_TENCENT_ENDPOINT"
# Retried with backoff, here rather than by the SDK's StandardRetryer, which (3.0.x) keeps the first error after a
# later attempt succeeds and raises it. Every call is safe to repeat: RunInstances by its ClientToken.
RETRIED = ("RequestLimitExceeded", "RequestLimitExceeded.UinLimitExceeded", "ClientNetworkError",
           "ServerNetworkError", "InternalError")
RETRIES = 4


def _yuan_ceiling(spec: LaunchSpec) -> Decimal:
    """The approved hourly ceiling in CNY, as CVM's MaxPrice takes it: ProvisionError when the spec has none (a
    spot price in another currency must never be sent as yuan)."""
    if spec.native_currency == "CNY" and spec.native_ceiling_hourly is not None:
        return spec.native_ceiling_hourly
    if spec.currency == "CNY":
        return spec.ceiling_hourly
    raise ProvisionError(f"no CNY ceiling for the spot launch {spec.request_id}", hint="ask for it again")


def _default_client(region: str) -> Any:
    """A CvmClient for `region` with the SDK's own credential chain; `GPU_ASSIST_TENCENT_ENDPOINT` (a URL: a VPC's
    internal endpoint, or a local fake in tests) replaces the public one, as AWS_ENDPOINT_URL does for boto3."""
    # the SDK (the optional `china` extra) with its importer, on the first call: every process builds this provisioner
    from ...sources.tencent import cvm_client

    url = urllib.parse.urlsplit(os.environ.get(ENDPOINT_VARIABLE, ""))
    return cvm_client(region, url.netloc or None, scheme=url.scheme or "https")


class TencentProvisioner:
    """A `provision.Provisioner` on Tencent Cloud CVM. `client(region)` gives a CvmClient (tests point it at a
    local server)."""

    provider = "tencent"

    def __init__(self, policy: Policy, client: Callable[[str], Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.policy = policy
        self.client = client or _default_client
        self.sleep = sleep

    def __repr__(self) -> str:
        return f"TencentProvisioner(account={self.policy.cloud(self.provider, 'account')!r})"

    def _call(self, region: str, action: str, params: dict[str, Any]) -> dict[str, Any]:
        """One CVM API call's `Response`, retried with backoff while throttled or the network fails; otherwise
        the SDK's error (code and message) as it raised it."""
        for attempt in range(RETRIES):
            try:
                response: dict[str, Any] = self.client(region).call_json(action, params)["Response"]
                return response
            except Exception as error:
                if getattr(error, "code", None) not in RETRIED or attempt == RETRIES - 1:
                    raise
                self.sleep(0.5 * 2 ** attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    @staticmethod
    def _explain(error: Exception, doing: str) -> ProvisionError:
        """A cloud error as one line a user can act on (never the credentials, which the SDK does not print)."""
        if isinstance(error, GpuAssistError):
            return ProvisionError(f"{doing}: {error.message}", hint=error.hint)
        code = getattr(error, "code", None) or type(error).__name__
        message = getattr(error, "message", None) or str(error)
        hint = "check TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY (or the CVM role)" \
            if str(code).startswith("AuthFailure") else None
        return ProvisionError(f"Tencent Cloud refused {doing}: {code}: {message}", hint=hint)

    # ---- checks before approval -------------------------------------------------------------------------
    def dry_run(self, spec: LaunchSpec) -> str:
        """'ok' when CVM says the launch would succeed (`DryRunOperation`); otherwise the reason (never raises)."""
        try:
            zone = next(iter(self._zones(spec.region, spec.zone or None)), None)
            self._call(spec.region, "RunInstances", {**self._launch_args(spec, spec.region, zone), "DryRun": True})
        except Exception as error:  # noqa: BLE001 - the SDK's and the network's errors all become the reason
            if getattr(error, "code", None) == "DryRunOperation":
                return "ok"
            if isinstance(error, GpuAssistError):
                return f"not checked: {error.message}"
            return f"refused: {self._explain(error, 'checking the launch (DryRun)').message}"
        return "ok"

    def quota(self, spec: LaunchSpec) -> str:
        """Whether the account's instance quota for the charge type covers the request, from
        `DescribeAccountQuota` (per zone: post-paid or spot instances remaining); 'quota unknown' otherwise."""
        kind = "SpotPaidQuotaSet" if spec.pricing_model == PricingModel.SPOT else "PostPaidQuotaSet"
        try:
            overview = self._call(spec.region, "DescribeAccountQuota", {})["AccountQuotaOverview"]
            quotas = overview["AccountQuota"][kind]
        except Exception as error:  # noqa: BLE001
            reason = error.message if isinstance(error, GpuAssistError) else self._explain(error, "").message
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
        """RunInstances' parameters for `spec` in `zone`, tagged with the request, its requester, its end and the
        cost tags (the launch's project over the policy's)."""
        image = self.policy.cloud(self.provider, "image_id")
        if not image:
            raise ProvisionError("no image configured for Tencent Cloud launches",
                                 hint="set image_id in [policy.clouds.tencent] (a GPU image of the region)")
        tags = {REQUEST_TAG: spec.request_id, REQUESTER_TAG: spec.requester, EXPIRES_TAG: ends_at,
                **self.policy.cost_tags, **({"project": spec.project} if spec.project else {})}
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
                "MaxPrice": format(_yuan_ceiling(spec).normalize(), "f"), "SpotInstanceType": "one-time"}}
        return args

    def _describe(self, region: str, **params: Any) -> list[dict[str, Any]]:
        """Every instance DescribeInstances returns for `params`, page by page."""
        found: list[dict[str, Any]] = []
        while True:
            page = self._call(region, "DescribeInstances", {**params, "Offset": len(found), "Limit": _PAGE})
            found += page.get("InstanceSet", [])
            if not page.get("InstanceSet") or len(found) >= int(page.get("TotalCount", 0)):
                return found

    def find(self, request_id: str, regions: list[str]) -> tuple[str, list[dict[str, Any]]]:
        """(region, live instances) carrying the request's tag, in the first region that has any."""
        for region in regions:
            found = [i for i in self._describe(region, Filters=[{"Name": f"tag:{REQUEST_TAG}",
                                                                  "Values": [request_id]}])
                     if i.get("InstanceState") in _LIVE_STATES]
            if found:
                return region, found
        return "", []

    def _zones(self, region: str, zone: str | None) -> list[str]:
        """Zones to try in `region`: the offer's zone when the catalog names one, else every available zone."""
        if zone:
            return [zone]
        zones = self._call(region, "DescribeZones", {}).get("ZoneSet", [])
        return [z["Zone"] for z in zones if z.get("ZoneState") == "AVAILABLE"]

    def launch(self, spec: LaunchSpec, *, ends_at: str, still_ours: Callable[[], bool]) -> LaunchOutcome:
        """Start the request's instances once, tagged to end at `ends_at`: the ones tagged with it when there are,
        else a RunInstances per candidate zone until one has capacity. `still_ours()` is asked right before each
        RunInstances: OwnershipLost when it says no. ProvisionError when no candidate has capacity."""
        regions = list(dict.fromkeys(c.region for c in spec.candidates)) or [spec.region]
        try:
            region, existing = self.find(spec.request_id, regions)
        except Exception as error:  # noqa: BLE001
            raise self._explain(error, "looking for the request's instances") from None
        if existing:
            existing = sorted(existing, key=lambda i: (i.get("CreatedTime") or "", i["InstanceId"]))
            return LaunchOutcome([i["InstanceId"] for i in existing[:spec.instances]], region,
                                 existing[0].get("Placement", {}).get("Zone"), reused=True)
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
        """One RunInstances in `zone` with the request's ClientToken; None (the reason in `attempts`) when the zone
        has no capacity."""
        if not still_ours():
            raise OwnershipLost(f"{spec.request_id} was taken over by another process before RunInstances")
        args = self._launch_args(spec, region, zone, client_token(spec.request_id, zone), ends_at=ends_at)
        try:
            ids = self._call(region, "RunInstances", args)["InstanceIdSet"]
        except GpuAssistError:
            raise
        except Exception as error:  # noqa: BLE001
            if getattr(error, "code", None) in CAPACITY_ERRORS:
                attempts.append(f"{zone}: {getattr(error, 'code', '')}")
                return None
            raise self._explain(error, f"launching {spec.instance_type} in {region}") from None
        return LaunchOutcome(list(ids), region, zone, attempts=attempts)

    def terminate_surplus(self, request_id: str, region: str, keep: list[str]) -> str:
        """Terminate instances tagged with this request beyond `keep` (the ones the store records). What it did,
        in words ("" for nothing)."""
        try:
            _, live = self.find(request_id, [region])
            surplus = [i["InstanceId"] for i in live if i["InstanceId"] not in keep]
            if surplus:
                self._call(region, "TerminateInstances", {"InstanceIds": surplus})
        except Exception as error:  # noqa: BLE001
            return f"could not check for duplicate instances: {self._explain(error, 'checking').message}"
        return f"terminated {len(surplus)} duplicate instance(s), keeping {', '.join(keep)}: {', '.join(surplus)}" \
            if surplus else ""

    # ---- stop -------------------------------------------------------------------------------------------
    def managed(self, instance_ids: list[str], region: str) -> dict[str, str | None]:
        """instance id → gpu-assist request id (None when gpu-assist did not launch it, or CVM has no such one)."""
        try:
            found = self._describe(region, InstanceIds=instance_ids)
        except Exception as error:  # noqa: BLE001
            raise self._explain(error, "looking up the instances to stop") from None
        tags = {i["InstanceId"]: {t["Key"]: t["Value"] for t in i.get("Tags") or []} for i in found}
        return {i: tags.get(i, {}).get(REQUEST_TAG) for i in instance_ids}

    def require_managed(self, instance_ids: list[str], region: str) -> dict[str, str]:
        """instance id → gpu-assist request id; PolicyError naming any instance gpu-assist did not launch."""
        owners = self.managed(instance_ids, region)
        foreign = [i for i in instance_ids if not owners.get(i)]
        if foreign:
            raise PolicyError(f"not launched by gpu-assist: {', '.join(foreign)}",
                              hint=f"gpu-assist acts only on instances carrying its {REQUEST_TAG} tag")
        return {i: str(owners[i]) for i in instance_ids}

    def set_expiry(self, instance_ids: list[str], region: str, ends_at: str) -> None:
        """An extension on CVM: checks the instances are gpu-assist's; the new end lives in the store (the reaper
        reads it), since CVM's API writes no tags after launch (module docstring)."""
        self.require_managed(instance_ids, region)

    def stop(self, instance_ids: list[str], region: str) -> list[str]:
        """Stop (no charging while stopped) or terminate, per policy, only instances gpu-assist launched."""
        self.require_managed(instance_ids, region)
        try:
            if self.policy.stop_action == "stop":
                self._call(region, "StopInstances", {"InstanceIds": instance_ids, "StopType": "SOFT_FIRST",
                                                     "StoppedMode": "STOP_CHARGING"})
            else:
                self._call(region, "TerminateInstances", {"InstanceIds": instance_ids})
        except Exception as error:  # noqa: BLE001
            raise self._explain(error, f"stopping {', '.join(instance_ids)}") from None
        return instance_ids
