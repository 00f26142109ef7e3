"""EC2's operations for the one launcher (`launcher.Launcher`), through boto3: dry runs, quota checks, the lookup
by tag, RunInstances with its `ClientToken` (real AWS returns the same instances for a token it has seen, for about
24 hours; moto keeps the token but does not deduplicate by it, so there the lookup by tag is what holds), stops,
terminations and the expiry tag.
Capacity: `InsufficientInstanceCapacity` and friends are capacity errors (spot: `MaxPrice` is the approved
ceiling). Throttling and transient errors are botocore's standard retry mode (`gpu_assist.clouds.sdk.aws.client`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Callable

from botocore.exceptions import BotoCoreError, ClientError

from ...errors import ProvisionError
from ...lifecycle.policy import Policy
from ...lifecycle.specs import LaunchSpec
from ..sdk import aws
from ..sdk.aws import BotoClient
from ..tags import EXPIRES_TAG, REQUEST_TAG, launch_tags
from .launcher import Found, Launcher

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


class Ec2:
    """EC2's operations; `client(service, region)` gives a boto3 client (tests: moto's)."""

    provider = "aws"

    def __init__(self, policy: Policy, client: Callable[[str, str], BotoClient] = aws.client):
        self.policy = policy
        self.client = client

    def explain(self, error: Exception, doing: str) -> ProvisionError:
        return aws.explain(error, doing)

    # ---- checks before approval -------------------------------------------------------------------------
    def dry_run(self, spec: LaunchSpec) -> str:
        """'ok' when EC2 says the launch would succeed; otherwise the reason (never raises)."""
        try:
            self.client("ec2", spec.region).run_instances(DryRun=True, **self.launch_args(spec, spec.region))
        except ClientError as error:
            if _code(error) == "DryRunOperation":
                return "ok"
            return f"refused: {aws.explain(error, 'checking the launch (DryRun)').message}"
        except (BotoCoreError, ProvisionError) as error:
            reason = getattr(error, "message", None) or aws.explain(error, "checking the launch").message
            return f"not checked: {reason}"
        return "ok"

    def quota(self, spec: LaunchSpec) -> str:
        """Whether the account's vCPU quota for this family covers the request; 'quota unknown' when unanswered."""
        codes = QUOTA_CODES.get(spec.instance_type[0])
        if codes is None or not spec.vcpus:
            return "quota unknown (no quota code for this family)"
        code = codes[1] if spec.pricing_model == "spot" else codes[0]
        needed = spec.vcpus * spec.instances
        try:
            value = self.client("service-quotas", spec.region).get_service_quota(
                ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"]
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

    def launch_args(self, spec: LaunchSpec, region: str, zone: str | None = None, token: str | None = None, *,
                    ends_at: str = "") -> dict[str, Any]:
        """RunInstances' arguments for `spec` in `region` (and `zone`), tagged (`tags.launch_tags`)."""
        args: dict[str, Any] = {"ImageId": self._ami(region, spec.instance_type), "InstanceType": spec.instance_type,
                                "MinCount": spec.instances, "MaxCount": spec.instances}
        tags = [{"Key": k, "Value": v} for k, v in launch_tags(spec, self.policy, ends_at).items()]
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

    def _instances(self, region: str, **params: Any) -> list[dict[str, Any]]:
        pages = self.client("ec2", region).get_paginator("describe_instances").paginate(**params)
        return [i for page in pages for reservation in page["Reservations"] for i in reservation["Instances"]]

    def find_tagged(self, region: str, request_id: str) -> list[Found]:
        found = self._instances(region, Filters=[{"Name": f"tag:{REQUEST_TAG}", "Values": [request_id]},
                                                 {"Name": "instance-state-name", "Values": _LIVE_STATES}])
        return [Found(i["InstanceId"], i.get("Placement", {}).get("AvailabilityZone"), str(i.get("LaunchTime", "")))
                for i in found]

    def zones(self, region: str, zone: str | None) -> list[str | None]:
        """Zone names to try in `region`: the spot offer's zone (an id) when known, else every available zone."""
        zones = self.client("ec2", region).describe_availability_zones(
            Filters=[{"Name": "state", "Values": ["available"]}])["AvailabilityZones"]
        if zone:
            named: list[str | None] = [z["ZoneName"] for z in zones if z.get("ZoneId") == zone]
            return named or [None]
        return [z["ZoneName"] for z in zones] or [None]

    def run(self, spec: LaunchSpec, region: str, zone: str | None, token: str, ends_at: str
            ) -> tuple[list[str], str | None]:
        args = self.launch_args(spec, region, zone, token, ends_at=ends_at)
        instances = self.client("ec2", region).run_instances(**args)["Instances"]
        return [i["InstanceId"] for i in instances], instances[0].get("Placement", {}).get("AvailabilityZone", zone)

    def is_capacity(self, error: Exception) -> str | None:
        return _code(error) if isinstance(error, ClientError) and _code(error) in CAPACITY_ERRORS else None

    # ---- ownership, stop, extend ------------------------------------------------------------------------
    def owners(self, region: str, instance_ids: list[str]) -> dict[str, str | None]:
        tags = {i["InstanceId"]: {t["Key"]: t["Value"] for t in i.get("Tags", [])}
                for i in self._instances(region, InstanceIds=instance_ids)}
        return {i: tags[i].get(REQUEST_TAG) for i in tags}

    def terminate(self, region: str, instance_ids: list[str]) -> None:
        self.client("ec2", region).terminate_instances(InstanceIds=instance_ids)

    def stop(self, region: str, instance_ids: list[str]) -> None:
        self.client("ec2", region).stop_instances(InstanceIds=instance_ids)

    def tag_expiry(self, region: str, instance_ids: list[str], ends_at: str) -> None:
        self.client("ec2", region).create_tags(Resources=instance_ids, Tags=[{"Key": EXPIRES_TAG, "Value": ends_at}])


class AwsProvisioner(Launcher):
    """The launcher on EC2."""

    def __init__(self, policy: Policy, client: Callable[[str, str], BotoClient] = aws.client):
        self.ec2 = Ec2(policy, client)
        super().__init__(self.ec2)

    @property
    def client(self) -> Callable[[str, str], BotoClient]:
        """The boto3 client builder EC2's operations use (a test hands it moto's, or a stubbed one)."""
        return self.ec2.client

    @client.setter
    def client(self, client: Callable[[str, str], BotoClient]) -> None:
        self.ec2.client = client
