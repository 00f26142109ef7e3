"""Huawei Cloud ECS's operations for the one launcher (`launcher.Launcher`), through the official SDK
(huaweicloudsdkecs, ECS API v1 and v1.1, through `clouds/sdk/huawei.py`, as the price source):
- the lookup by tag: `ListServersDetails` (GET /v1/{project_id}/cloudservers/detail) with `tags=key=value`;
- the launch: `CreateServers` (POST /v1.1/{project_id}/cloudservers), pay-per-use (spot: `marketType` spot,
  `spotPrice` the approved ceiling in CNY), tagged by `server_tags`, with the API's idempotency header
  `X-Client-Token`: a UUID derived from the request and the zone alone (`ports.client_token`), so every process
  that launches the request there sends the same one;
- the dry run: the same call with `dry_run: true` (ECS answers 202 when the request would be accepted);
- the quota: `ShowServerLimits` (instances and vCPUs, pay-per-use or spot);
- zones: `ListServerAzInfo` (GET /v1/{project_id}/availability-zones); stop: `BatchStopServers`; terminate:
  `DeleteServers`; the expiry tag: `BatchCreateServerTags`, server by server.
Capacity: `CAPACITY_ERRORS` below. Throttling (HTTP 429, `APIGW.0308`) is retried with backoff.
Credentials: `clouds/sdk/huawei.chain`, which asks the metadata service only on a Huawei Cloud ECS; the SDK looks the
region's project up through IAM unless `HUAWEICLOUD_SDK_PROJECT_ID` names it. Nothing of them is stored or logged.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Callable

from ...errors import GpuAssistError, ProvisionError
from ...facts import PricingModel
from ...lifecycle.policy import Policy
from ...lifecycle.specs import LaunchSpec
from ..tags import EXPIRES_TAG, REQUEST_TAG, cny_ceiling, launch_tags
from .launcher import Found, Launcher, SdkOperations

# CreateServers' answers that mean "not here, try elsewhere" (the flavor sold out in the zone, or not sold there).
CAPACITY_ERRORS = ("Ecs.0047", "Ecs.0048", "Ecs.0213")
_GONE = ("DELETED", "SOFT_DELETED")
_PAGE = 100
TOKEN_SPACE = uuid.UUID("6f0d1c9e-2b1a-4c39-9d1e-8f3a2f5b7c10")  # X-Client-Token = uuid5(this, client_token)


def _sdk() -> Any:
    """The SDK's v2 module (its request models), loaded on the first call: every process builds this provisioner."""
    # the optional `china` extra
    from huaweicloudsdkecs import v2

    return v2


class HuaweiEcs(SdkOperations):
    """Huawei Cloud ECS's operations; `client(region)` gives an EcsClient (tests point it at a local server)."""

    provider = "huawei"

    def _call(self, region: str, method: str, request: Any) -> Any:
        """One SDK call, retried with backoff while the gateway throttles."""
        return self.retried(lambda: getattr(self.client(region), method)(request))

    # ---- checks before approval -------------------------------------------------------------------------
    def dry_call(self, spec: LaunchSpec) -> None:
        """CreateServers with `dry_run`: ECS answers 202 when the request would be accepted."""
        zone = next(iter(self.zones(spec.region, spec.zone or None)), None)
        body = _sdk().CreateServersRequestBody(dry_run=True, server=self._server(spec, zone, ""))
        self._call(spec.region, "create_servers", _sdk().CreateServersRequest(body=body))

    def dry_run_passed(self, error: Exception) -> bool:
        return False  # the check's success is the 202 itself

    def quota(self, spec: LaunchSpec) -> str:
        """Whether the project's instance (or, with the type's vCPUs known, vCPU) limit covers the request, from
        `ShowServerLimits`; 'quota unknown' when unanswered."""
        spot = spec.pricing_model == PricingModel.SPOT
        what, per = ("cores", spec.vcpus) if spec.vcpus else ("instances", 1)
        name = f"maxTotalSpot{what.title()}" if spot else f"maxTotal{what.title()}"
        try:
            limits = self._call(spec.region, "show_server_limits", _sdk().ShowServerLimitsRequest()).absolute
            limit = getattr(limits, f"max_total_spot_{what}" if spot else f"max_total_{what}")
            used = getattr(limits, f"total_spot_{what}_used" if spot else f"total_{what}_used") or 0
        except Exception as error:  # noqa: BLE001
            reason = error.message if isinstance(error, GpuAssistError) else self.explain(error, "").message
            return f"quota unknown ({name}): {reason}"
        if limit is None or limit < 0:
            return f"ok: no {what} limit ({name})"
        needed, left = per * spec.instances, int(limit) - int(used)
        if needed > left:
            return f"quota too low: {needed} {what} needed, {left} of {limit} left ({name}); " \
                   "ask Huawei Cloud to raise it"
        return f"ok: {needed} {what} of {left} left ({name})"

    # ---- launch -----------------------------------------------------------------------------------------
    def _server(self, spec: LaunchSpec, zone: str | None, ends_at: str) -> Any:
        """CreateServers' `server` for `spec` in `zone`, tagged (`tags.launch_tags`)."""
        sdk = _sdk()

        def setting(name: str) -> str | None:
            return self.policy.cloud(self.provider, name)
        if not setting("image_id") or not setting("vpc_id") or not setting("subnet_id"):
            raise ProvisionError("no image or network configured for Huawei Cloud launches",
                                 hint="set image_id, vpc_id and subnet_id in [policy.clouds.huawei]")
        extend = sdk.PrePaidServerExtendParam(charging_mode="postPaid")
        if spec.pricing_model == PricingModel.SPOT:
            extend = sdk.PrePaidServerExtendParam(charging_mode="postPaid", market_type="spot",
                                                  spot_price=format(cny_ceiling(spec).normalize(), "f"))
        groups = [sdk.PrePaidServerSecurityGroup(id=setting("security_group_id"))] \
            if setting("security_group_id") else None
        return sdk.PrePaidServer(
            image_ref=setting("image_id"), flavor_ref=spec.instance_type, name=f"gpu-assist-{spec.request_id}",
            vpcid=setting("vpc_id"), nics=[sdk.PrePaidServerNic(subnet_id=setting("subnet_id"))],
            root_volume=sdk.PrePaidServerRootVolume(volumetype="SSD"), availability_zone=zone,
            count=spec.instances, extendparam=extend, security_groups=groups,
            server_tags=[sdk.PrePaidServerTag(key=k, value=v)
                         for k, v in launch_tags(spec, self.policy, ends_at).items()])

    def _details(self, region: str, **query: Any) -> list[Any]:
        """Every server ListServersDetails returns for `query`, page by page (`offset` is a page number)."""
        found: list[Any] = []
        page = 1
        while True:
            answer = self._call(region, "list_servers_details",
                                _sdk().ListServersDetailsRequest(offset=page, limit=_PAGE, **query))
            found += answer.servers or []
            if not answer.servers or len(found) >= int(answer.count or 0):
                return found
            page += 1

    def find_tagged(self, region: str, request_id: str) -> list[Found]:
        return [Found(s.id, s.os_ext_a_zavailability_zone, s.created or "")
                for s in self._details(region, tags=f"{REQUEST_TAG}={request_id}") if s.status not in _GONE]

    def zones(self, region: str, zone: str | None) -> list[str | None]:
        if zone:
            return [zone]
        listed = self._call(region, "list_server_az_info", _sdk().ListServerAzInfoRequest()).availability_zones
        return [z.availability_zone_id for z in listed or []]

    def run(self, spec: LaunchSpec, region: str, zone: str | None, token: str, ends_at: str
            ) -> tuple[list[str], str | None]:
        request = _sdk().CreateServersRequest(x_client_token=str(uuid.uuid5(TOKEN_SPACE, token)),
                                              body=_sdk().CreateServersRequestBody(
                                                  server=self._server(spec, zone, ends_at)))
        return list(self._call(region, "create_servers", request).server_ids or []), zone

    def is_capacity(self, error: Exception) -> str | None:
        code: str = self.adapter().code(error)
        return code if code in CAPACITY_ERRORS else None

    # ---- ownership, stop, extend ------------------------------------------------------------------------
    def owners(self, region: str, instance_ids: list[str]) -> dict[str, str | None]:
        found = self._details(region, server_id=",".join(instance_ids))
        tags = {s.id: dict(t.split("=", 1) for t in s.tags or [] if "=" in t) for s in found if s.status}
        return {i: tags.get(i, {}).get(REQUEST_TAG) for i in instance_ids}

    def _servers(self, instance_ids: list[str]) -> list[Any]:
        return [_sdk().ServerId(id=i) for i in instance_ids]

    def terminate(self, region: str, instance_ids: list[str]) -> None:
        body = _sdk().DeleteServersRequestBody(servers=self._servers(instance_ids), delete_publicip=True,
                                               delete_volume=True)
        self._call(region, "delete_servers", _sdk().DeleteServersRequest(body=body))

    def stop(self, region: str, instance_ids: list[str]) -> None:
        option = _sdk().BatchStopServersOption(servers=self._servers(instance_ids), type="SOFT")
        self._call(region, "batch_stop_servers",
                   _sdk().BatchStopServersRequest(body=_sdk().BatchStopServersRequestBody(os_stop=option)))

    def tag_expiry(self, region: str, instance_ids: list[str], ends_at: str) -> None:
        for instance_id in instance_ids:
            body = _sdk().BatchCreateServerTagsRequestBody(
                action="create", tags=[_sdk().BatchAddServerTag(key=EXPIRES_TAG, value=ends_at)])
            self._call(region, "batch_create_server_tags",
                       _sdk().BatchCreateServerTagsRequest(server_id=instance_id, body=body))


class HuaweiProvisioner(Launcher):
    """The launcher on Huawei Cloud ECS."""

    def __init__(self, policy: Policy, client: Callable[[str], Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        super().__init__(HuaweiEcs(policy, client, sleep))
