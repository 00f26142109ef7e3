"""EC2 through boto3: dry runs, quota checks, exactly-once launches and stops of gpu-assist's own instances.

Exactly once: before any launch, instances tagged with the request id are looked up in every candidate region
(moto does not enforce `ClientToken`; real AWS does, for about 24 hours), and each RunInstances' `ClientToken` is
the request id and the zone (`client_token`), the same key as the tag's, so a retried call after a crash or a
second owner's call returns the same instances on real AWS. The caller's ownership is checked (and its lease
renewed) right before each RunInstances, and surplus instances are terminated only by the caller, keeping the
ones the store records (`terminate_surplus`).
Capacity: `InsufficientInstanceCapacity` and friends move on to the next zone, then the next region, never
above the approved hourly ceiling (spot: `MaxPrice` is that ceiling). Throttling and transient errors are
botocore's standard retry mode (`gpu_assist.clouds.aws.client`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Callable

from botocore.exceptions import BotoCoreError, ClientError

from ...errors import PolicyError, ProvisionError
from ...lifecycle.policy import Policy
from ...lifecycle.ports import LaunchOutcome, OwnershipLost, client_token
from ...lifecycle.specs import LaunchSpec
from .. import aws
from ..aws import EXPIRES_TAG, REQUEST_TAG, REQUESTER_TAG, AwsObject, BotoClient

CAPACITY_ERRORS = ("InsufficientInstanceCapacity", "InsufficientCapacity", "Unsupported",
                   "InsufficientHostCapacity", "SpotMaxPriceTooLow", "MaxSpotInstanceCountExceeded")
# Service Quotas codes for running instances, in vCPUs: (on-demand, spot) by instance family letter.
QUOTA_CODES = {"p": ("L-417A185B", "L-7212CCBC"), "g": ("L-DB2E81BA", "L-3819A6DF"), "v": ("L-DB2E81BA", "L-3819A6DF")}
_LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]
DEEP_LEARNING_AMI_PARAMETER = \
    "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
ARM64_FAMILIES = ("g5g.",)


def _dollar_ceiling(spec: LaunchSpec) -> Decimal | str:
    """The approved ceiling in USD, as EC2's MaxPrice takes it: the catalog's own dollar figure when the team
    counts in another currency (a CNY policy), else the ceiling itself."""
    if spec.native_currency == "USD" and spec.native_ceiling_hourly is not None:
        return format(spec.native_ceiling_hourly.normalize(), "f")
    return spec.ceiling_hourly


def _code(error: Exception) -> str:
    code: str = getattr(error, "response", {}).get("Error", {}).get("Code", "")
    return code


class AwsProvisioner:
    def __init__(self, policy: Policy, client: Callable[[str, str], BotoClient] = aws.client):
        self.policy = policy
        self.client = client

    # ---- checks before approval -------------------------------------------------------------------------
    def dry_run(self, spec: LaunchSpec) -> str:
        """'ok' when EC2 says the launch would succeed; otherwise the reason (never raises)."""
        try:
            self.client("ec2", spec.region).run_instances(DryRun=True, **self._launch_args(spec, spec.region))
        except ClientError as error:
            if _code(error) == "DryRunOperation":
                return "ok"
            return f"refused: {aws.explain(error, 'checking the launch (DryRun)').message}"
        except (BotoCoreError, ProvisionError) as error:
            reason = getattr(error, "message", None) or aws.explain(error, "checking the launch").message
            return f"not checked: {reason}"
        return "ok"

    def quota(self, spec: LaunchSpec, *, quotas_client: BotoClient | None = None) -> str:
        """Whether the account's vCPU quota for this family covers the request; 'quota unknown' when unanswered."""
        codes = QUOTA_CODES.get(spec.instance_type[0])
        if codes is None or not spec.vcpus:
            return "quota unknown (no quota code for this family)"
        code = codes[1] if spec.pricing_model == "spot" else codes[0]
        needed = spec.vcpus * spec.instances
        client = quotas_client or self.client("service-quotas", spec.region)
        try:
            value = client.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"]
        except ClientError as error:
            return f"quota unknown ({code}: {_code(error)})"
        except BotoCoreError as error:  # no credentials, no network: say which, as the dry run does
            return f"quota unknown ({code}): {aws.explain(error, 'reading the vCPU quota').message}"
        if needed > value:
            return f"quota too low: {needed} vCPUs needed, limit {value:g} ({code}); ask AWS to raise it"
        return f"ok: {needed} vCPUs of {value:g} ({code})"

    # ---- launch -----------------------------------------------------------------------------------------
    def _ami(self, region: str, instance_type: str) -> str:
        """The configured AMI, else the one an SSM parameter names: the configured parameter, or by default the
        public parameter of AWS's Deep Learning Base OSS Nvidia Driver AMI (x86_64; Graviton types need config)."""
        if self.policy.ami_id:
            return self.policy.ami_id
        name = self.policy.ami_ssm_parameter
        if name is None and not instance_type.startswith(ARM64_FAMILIES):
            name = DEEP_LEARNING_AMI_PARAMETER
        if name is None:
            raise ProvisionError(f"no AMI configured for {instance_type} (arm64)",
                                 hint="set GPU_ASSIST_AMI_ID or GPU_ASSIST_AMI_SSM_PARAMETER to an arm64 GPU AMI")
        try:
            ami: str = self.client("ssm", region).get_parameter(Name=name)["Parameter"]["Value"]
            return ami
        except Exception as error:  # noqa: BLE001
            raise aws.explain(error, f"reading the AMI from SSM parameter {name}") from None

    def _launch_args(self, spec: LaunchSpec, region: str, zone: str | None = None, token: str | None = None, *,
                     ends_at: str = "") -> dict[str, Any]:
        """RunInstances' arguments for `spec` in `region` (and `zone`), tagged with the request, its requester,
        its end and the cost tags (the launch's project over the policy's)."""
        args: dict[str, Any] = {"ImageId": self._ami(region, spec.instance_type), "InstanceType": spec.instance_type,
                "MinCount": spec.instances, "MaxCount": spec.instances}
        tags = [{"Key": REQUEST_TAG, "Value": spec.request_id}, {"Key": REQUESTER_TAG, "Value": spec.requester},
                {"Key": EXPIRES_TAG, "Value": ends_at}]
        cost_tags = {**self.policy.cost_tags, **({"project": spec.project} if spec.project else {})}
        tags += [{"Key": k, "Value": v} for k, v in cost_tags.items()]
        args["TagSpecifications"] = [{"ResourceType": "instance", "Tags": tags}]
        if token:
            args["ClientToken"] = token
        if zone:
            args["Placement"] = {"AvailabilityZone": zone}
            if zone in self.policy.subnet_ids:
                args["SubnetId"] = self.policy.subnet_ids[zone]
        if self.policy.security_group_ids:
            args["SecurityGroupIds"] = list(self.policy.security_group_ids)
        if self.policy.key_name:
            args["KeyName"] = self.policy.key_name
        if spec.pricing_model == "spot":
            args["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": {
                "MaxPrice": str(_dollar_ceiling(spec)), "SpotInstanceType": "one-time",
                "InstanceInterruptionBehavior": "terminate"}}
        return args

    def find(self, request_id: str, regions: list[str]) -> tuple[str, list[AwsObject]]:
        """(region, live instances) carrying the request's tag, in the first region that has any."""
        for region in regions:
            paginator = self.client("ec2", region).get_paginator("describe_instances")
            found = [i for page in paginator.paginate(Filters=[
                {"Name": f"tag:{REQUEST_TAG}", "Values": [request_id]},
                {"Name": "instance-state-name", "Values": _LIVE_STATES}])
                for reservation in page["Reservations"] for i in reservation["Instances"]]
            if found:
                return region, found
        return "", []

    def _zones(self, region: str, zone_id: str | None) -> list[str | None]:
        """Zone names to try in `region`: the spot offer's zone when known, else every available zone."""
        zones = self.client("ec2", region).describe_availability_zones(
            Filters=[{"Name": "state", "Values": ["available"]}])["AvailabilityZones"]
        if zone_id:
            named = [z["ZoneName"] for z in zones if z.get("ZoneId") == zone_id]
            return named or [None]
        return [z["ZoneName"] for z in zones] or [None]

    def launch(self, spec: LaunchSpec, *, ends_at: str, still_ours: Callable[[], bool]) -> LaunchOutcome:
        """Start the request's instances once, tagged to end at `ends_at`: the ones tagged with it when there are
        (a crash or another owner launched them), else a RunInstances per candidate zone until one has capacity.
        `still_ours()` is asked (and renews the caller's lease) right before each RunInstances: OwnershipLost when
        it says no. Raises ProvisionError when no candidate has capacity. Instances beyond the ones returned are
        the caller's to terminate (`terminate_surplus`), once it has recorded which it keeps."""
        regions = list(dict.fromkeys(c.region for c in spec.candidates))
        try:
            region, existing = self.find(spec.request_id, regions)
        except (ClientError, BotoCoreError) as error:
            raise aws.explain(error, "looking for the request's instances") from None
        if existing:
            existing = sorted(existing, key=lambda i: (i.get("LaunchTime") or "", i["InstanceId"]))
            return LaunchOutcome([i["InstanceId"] for i in existing[:spec.instances]], region,
                                 existing[0].get("Placement", {}).get("AvailabilityZone"), reused=True)
        attempts: list[str] = []
        for candidate in spec.candidates:
            if candidate.hourly > spec.ceiling_hourly:
                attempts.append(f"{candidate.region}: {candidate.hourly}/h is above the ceiling, skipped")
                continue
            try:
                zones = self._zones(candidate.region, candidate.zone)
            except (ClientError, BotoCoreError) as error:
                attempts.append(f"{candidate.region}: {aws.explain(error, 'listing zones').message}")
                continue
            for zone in zones:
                outcome = self._run(spec, candidate.region, zone, ends_at, still_ours, attempts)
                if outcome is not None:
                    return outcome
        raise ProvisionError(f"no capacity for {spec.instances}x{spec.instance_type} within "
                             f"{spec.ceiling_hourly}/h: " + "; ".join(attempts))

    def _run(self, spec: LaunchSpec, region: str, zone: str | None, ends_at: str, still_ours: Callable[[], bool],
             attempts: list[str]) -> LaunchOutcome | None:
        """One RunInstances in `zone`; None (and the reason in `attempts`) when it has no capacity.

        Its ClientToken is the request id and the zone: the same in every process that launches the request there,
        so on AWS two owners' calls (one taken over while its call was under way) get the same instances."""
        if not still_ours():
            raise OwnershipLost(f"{spec.request_id} was taken over by another process before RunInstances")
        args = self._launch_args(spec, region, zone, client_token(spec.request_id, zone or region), ends_at=ends_at)
        try:
            reservation = self.client("ec2", region).run_instances(**args)
        except ClientError as error:
            if _code(error) in CAPACITY_ERRORS:
                attempts.append(f"{zone or region}: {_code(error)}")
                return None
            raise aws.explain(error, f"launching {spec.instance_type} in {region}") from None
        except BotoCoreError as error:
            raise aws.explain(error, f"launching {spec.instance_type}") from None
        instances = reservation["Instances"]
        return LaunchOutcome([i["InstanceId"] for i in instances], region,
                             instances[0].get("Placement", {}).get("AvailabilityZone", zone), attempts=attempts)

    def terminate_surplus(self, request_id: str, region: str, keep: list[str]) -> str:
        """Terminate instances tagged with this request beyond `keep` (the ones the store records): what a retried
        RunInstances leaves when its first answer was lost, or an owner that was taken over launched (real AWS
        dedupes by ClientToken; moto and misbehaving proxies do not). What it did, in words ("" for nothing)."""
        try:
            _, live = self.find(request_id, [region])
            surplus = [i["InstanceId"] for i in live if i["InstanceId"] not in keep]
            if surplus:
                self.client("ec2", region).terminate_instances(InstanceIds=surplus)
        except (ClientError, BotoCoreError) as error:
            return f"could not check for duplicate instances: {aws.explain(error, 'checking').message}"
        return f"terminated {len(surplus)} duplicate instance(s), keeping {', '.join(keep)}: {', '.join(surplus)}" \
            if surplus else ""

    # ---- stop -------------------------------------------------------------------------------------------
    def managed(self, instance_ids: list[str], region: str) -> dict[str, str | None]:
        """instance id → gpu-assist request id (None when gpu-assist did not launch it)."""
        try:
            pages = self.client("ec2", region).get_paginator("describe_instances").paginate(InstanceIds=instance_ids)
            found = {}
            for page in pages:
                for reservation in page["Reservations"]:
                    for instance in reservation["Instances"]:
                        tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
                        found[instance["InstanceId"]] = tags.get(REQUEST_TAG)
        except (ClientError, BotoCoreError) as error:
            raise aws.explain(error, "looking up the instances to stop") from None
        return found

    def require_managed(self, instance_ids: list[str], region: str) -> dict[str, str]:
        """instance id → gpu-assist request id; PolicyError naming any instance gpu-assist did not launch."""
        owners = self.managed(instance_ids, region)
        foreign = [i for i in instance_ids if not owners.get(i)]
        if foreign:
            raise PolicyError(f"not launched by gpu-assist: {', '.join(foreign)}",
                              hint=f"gpu-assist acts only on instances carrying its {REQUEST_TAG} tag")
        return {i: str(owners[i]) for i in instance_ids}

    def set_expiry(self, instance_ids: list[str], region: str, ends_at: str) -> None:
        """Move the `gpu-assist:expires-at` tag of instances gpu-assist launched (an approved extension)."""
        self.require_managed(instance_ids, region)
        try:
            self.client("ec2", region).create_tags(Resources=instance_ids, Tags=[{"Key": EXPIRES_TAG,
                                                                                 "Value": ends_at}])
        except (ClientError, BotoCoreError) as error:
            raise aws.explain(error, f"tagging {', '.join(instance_ids)}") from None

    def stop(self, instance_ids: list[str], region: str) -> list[str]:
        """Stop (or terminate, per policy) only instances gpu-assist launched; refuses any other."""
        self.require_managed(instance_ids, region)
        ec2 = self.client("ec2", region)
        try:
            if self.policy.stop_action == "stop":
                ec2.stop_instances(InstanceIds=instance_ids)
            else:
                ec2.terminate_instances(InstanceIds=instance_ids)
        except (ClientError, BotoCoreError) as error:
            raise aws.explain(error, f"stopping {', '.join(instance_ids)}") from None
        return instance_ids
