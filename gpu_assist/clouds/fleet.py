"""The team's cloud GPU instances and what their GPUs do, from EC2 and CloudWatch; idle ones called out.

GPU metrics come from the CloudWatch agent's NVIDIA collector (namespace `CWAgent`, metrics
`nvidia_smi_utilization_gpu` and `nvidia_smi_memory_used`, dimensions `InstanceId`, `index`, `name`).
An instance is idle when its GPUs averaged below `threshold_pct` over the window, and the samples cover at
least `min_coverage` of that window (a new or silent instance is not called idle; it says why).
The hourly price being wasted comes from the catalog (spot price of its zone for spot instances).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from ..catalog import Catalog
from ..catalog.offers import Offer
from ..facts import PricingModel
from ..team.sharing import MeasuredUse, SharingAdvice, sharing_advice
from .sdk.aws import AwsObject, BotoClient, explain
from .tags import REQUEST_TAG

NAMESPACE = "CWAgent"
UTILIZATION = "nvidia_smi_utilization_gpu"
MEMORY_USED = "nvidia_smi_memory_used"
_PERIOD_S = 60


@dataclass(frozen=True)
class InstanceUsage:
    instance_id: str
    instance_type: str
    region: str
    zone: str
    lifecycle: str  # on-demand or spot
    request_id: str | None  # set when gpu-assist launched it
    gpus_reporting: int
    gpu_utilization_avg_pct: float | None
    gpu_memory_used_avg_mib: float | None
    coverage: float  # fraction of the window covered by samples
    idle: bool
    hourly_cost: Decimal | None
    currency: str
    note: str = ""
    sharing: SharingAdvice | None = None  # what would pack its work, when its GPUs are lightly used

@dataclass(frozen=True)
class FleetReport:
    region: str
    window_s: int
    threshold_pct: float
    instances: tuple[InstanceUsage, ...]

    @property
    def idle(self) -> tuple[InstanceUsage, ...]:
        return tuple(i for i in self.instances if i.idle)

    @property
    def wasted_per_hour(self) -> Decimal:
        return sum((i.hourly_cost or Decimal(0) for i in self.idle), Decimal(0))


@dataclass
class Series:
    """One CloudWatch metric's samples in the window, gathered from get_metric_data's pages."""

    timestamps: list[dt.datetime] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


def find_instances(ec2: BotoClient, instance_ids: list[str] | None = None) -> list[AwsObject]:
    """Running instances: the given ids, else those carrying gpu-assist's request tag."""
    kwargs: dict[str, object]
    if instance_ids:
        kwargs = {"InstanceIds": list(instance_ids)}
    else:
        kwargs = {"Filters": [{"Name": "tag-key", "Values": [REQUEST_TAG]},
                              {"Name": "instance-state-name", "Values": ["running"]}]}
    found: list[AwsObject] = []
    for page in ec2.get_paginator("describe_instances").paginate(**kwargs):
        for reservation in page["Reservations"]:
            found.extend(reservation["Instances"])
    return found


def _gpu_metrics(cloudwatch: BotoClient, instance_id: str) -> list[AwsObject]:
    metrics: list[AwsObject] = []
    for name in (UTILIZATION, MEMORY_USED):
        paginator = cloudwatch.get_paginator("list_metrics")
        for page in paginator.paginate(Namespace=NAMESPACE, MetricName=name,
                                       Dimensions=[{"Name": "InstanceId", "Value": instance_id}]):
            metrics.extend(page["Metrics"])
    return metrics


def _metric_values(cloudwatch: BotoClient, metrics: list[AwsObject], start: dt.datetime,
                   end: dt.datetime) -> dict[int, Series]:
    """{metric index: {"timestamps": [...], "values": [...]}} via get_metric_data, 500 queries a call."""
    results: dict[int, Series] = {}
    for offset in range(0, len(metrics), 500):
        batch = metrics[offset:offset + 500]
        queries = [{"Id": f"m{offset + i}", "ReturnData": True,
                    "MetricStat": {"Metric": metric, "Period": _PERIOD_S, "Stat": "Average"}}
                   for i, metric in enumerate(batch)]
        token = None
        while True:
            kwargs: dict[str, object] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
            if token:
                kwargs["NextToken"] = token
            page = cloudwatch.get_metric_data(**kwargs)
            for result in page["MetricDataResults"]:
                slot = results.setdefault(int(result["Id"][1:]), Series())
                slot.timestamps += result.get("Timestamps", [])
                slot.values += result.get("Values", [])
            token = page.get("NextToken")
            if not token:
                break
    return results


def hourly_price(catalog: Catalog, instance: AwsObject, region: str, currency: str) -> Decimal | None:
    """What a running instance costs an hour: its catalog price in its region (spot: in its zone when the catalog
    has that zone, else the region's cheapest), converted to `currency`; None when the catalog has no price."""
    offers = [o for o in catalog.offers_of_type("aws", instance["InstanceType"]) if o.region == region]
    spot = instance.get("InstanceLifecycle") == "spot"
    if spot:
        in_zone = [o for o in offers if o.zone == instance.get("Placement", {}).get("AvailabilityZoneId", "")]
        offers = in_zone or offers
    prices = [(price, o.currency) for o in offers
              for price in [o.spot_hourly if spot else o.on_demand_hourly] if price is not None]
    if not prices:
        return None
    price, price_currency = min(prices, key=lambda p: p[0])
    return catalog.fx.convert(price, price_currency, currency)


def fleet_usage(ec2: BotoClient, cloudwatch: BotoClient, catalog: Catalog, *, region: str, now: dt.datetime,
                window_s: int = 1800, threshold_pct: float = 10.0, instance_ids: list[str] | None = None,
                currency: str = "USD", min_coverage: float = 0.8) -> FleetReport:
    """Average GPU use per instance over the window ending `now`; raises ProvisionError on AWS failures."""
    start = now - dt.timedelta(seconds=window_s)
    try:
        instances = find_instances(ec2, instance_ids)
        usages = []
        for instance in instances:
            metrics = _gpu_metrics(cloudwatch, instance["InstanceId"])
            values = _metric_values(cloudwatch, metrics, start, now) if metrics else {}
            usages.append(_usage(instance, metrics, values, catalog, region, currency, window_s, threshold_pct,
                                 min_coverage))
    except Exception as error:  # noqa: BLE001 - botocore's errors become one message for the user
        if type(error).__module__.startswith("botocore"):
            raise explain(error, "reading the GPU fleet") from None
        raise
    return FleetReport(region=region, window_s=window_s, threshold_pct=threshold_pct, instances=tuple(usages))


def _usage(instance: AwsObject, metrics: list[AwsObject], values: dict[int, Series], catalog: Catalog, region: str,
           currency: str, window_s: int, threshold_pct: float, min_coverage: float) -> InstanceUsage:
    utilization: list[float] = []
    memory: list[float] = []
    stamps: list[dt.datetime] = []
    gpus: set[str] = set()
    for index, metric in enumerate(metrics):
        series = values.get(index, Series())
        dims = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
        if series.values:
            gpus.add(dims.get("index", "0"))
        target = utilization if metric["MetricName"] == UTILIZATION else memory
        target.extend(series.values)
        if metric["MetricName"] == UTILIZATION:
            stamps.extend(series.timestamps)
    coverage = 0.0
    if stamps:
        span = (max(stamps) - min(stamps)).total_seconds() + _PERIOD_S
        coverage = min(1.0, span / window_s)
    average = sum(utilization) / len(utilization) if utilization else None
    idle = average is not None and average < threshold_pct and coverage >= min_coverage
    note = ""
    if not metrics:
        note = "no NVIDIA metrics: install the CloudWatch agent with its nvidia_gpu section"
    elif average is None:
        note = "no GPU samples in the window"
    elif coverage < min_coverage:
        note = f"samples cover {coverage:.0%} of the window: too little to call it idle"
    tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
    hourly = hourly_price(catalog, instance, region, currency)
    sharing = _sharing(catalog, instance, region, currency, hourly, average, max(memory) if memory else None,
                       window_s)
    return InstanceUsage(
        instance_id=instance["InstanceId"], instance_type=instance["InstanceType"], region=region,
        zone=instance.get("Placement", {}).get("AvailabilityZone", ""),
        lifecycle="spot" if instance.get("InstanceLifecycle") == "spot" else "on-demand",
        request_id=tags.get(REQUEST_TAG), gpus_reporting=len(gpus), gpu_utilization_avg_pct=average,
        gpu_memory_used_avg_mib=sum(memory) / len(memory) if memory else None, coverage=coverage, idle=idle,
        hourly_cost=hourly, currency=currency, note=note, sharing=sharing,
    )


def _sharing(catalog: Catalog, instance: AwsObject, region: str, currency: str, hourly: Decimal | None,
             utilization: float | None, memory_mib: float | None, window_s: int) -> SharingAdvice | None:
    """Sharing advice for an instance whose GPUs reported use and memory, at its own pricing model."""
    offers = catalog.offers_of_type("aws", instance["InstanceType"])
    gpu = catalog.gpus.find(offers[0].gpu) if offers else None
    if gpu is None or utilization is None or memory_mib is None:
        return None
    model = PricingModel.SPOT if instance.get("InstanceLifecycle") == "spot" else PricingModel.ON_DEMAND

    def price_of(offer: Offer) -> Decimal | None:
        price = offer.price(model)
        return None if price is None else catalog.fx.convert(price, offer.currency, currency)

    use = MeasuredUse(gpu, int(offers[0].gpu_count), memory_mib / 1024, utilization, window_s)
    return sharing_advice(use, catalog.offers_in("aws", region), catalog.gpus, model=model, price_of=price_of,
                          current_hourly=hourly)
