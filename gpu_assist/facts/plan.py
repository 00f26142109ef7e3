"""Why a plan is what it is (`Plan.reasons`): its spot strategy, the network between its hosts, capacity and quota,
the user's own hardware, a deadline or budget it misses, and why an offer cannot run the job at all. Pure.
"""

from __future__ import annotations

from decimal import Decimal

from .fact import Fact


class Fastest(Fact):
    """The fastest trusted plan, listed although it is not among the cheapest."""


class Checkpointing(Fact):
    """A spot plan checkpoints every `interval_min` minutes, which costs `overhead` more time."""

    interval_min: float
    overhead: float


class MixedFleet(Fact):
    """Part of the fleet on spot, part on demand, which keeps the job alive through interruptions."""

    spot: int
    on_demand: int


# Interconnect, fleet-scale spot risk, capacity and quota: what a plan can run on, and get.
class Fabric(Fact):
    """The network between a plan's hosts, as `instance_network.csv` states it: `fabric` at `gbps` (None: not
    stated); `fabric` "" when no source states it (a marketplace row, an instance type not in the file)."""

    instance_type: str
    hosts: int
    fabric: str
    gbps: float | None
    trains: bool  # RDMA (EFA, InfiniBand, RoCE, GPUDirect) at ≥ 100 Gbps
    scaling: Scaling | None = None  # over more than one host: how they scale
    source: str = ""  # instance_network.csv's source ids (SOURCES-plans.txt)


class Scaling(Fact):
    """Data-parallel scaling over `hosts` hosts (`sizing.scaling`): per optimizer step `compute_s` of compute
    against `comm_s` of ring all-reduce of the gradients, `overlap` of it hidden behind compute. `basis`:
    "network" (the model), "override" (the user's multi_host_efficiency=), "assumed" (bandwidth unknown)."""

    hosts: int
    gbps: float | None
    compute_s: float
    comm_s: float
    overlap: float
    efficiency: float
    basis: str


class NoFabric(Fact):
    """Sharded training over more than two hosts whose network is no training fabric (or is unknown)."""

    hosts: int
    fabric: str  # "" when no source states it
    gbps: float | None


class FleetSpotRisk(Fact):
    """A synchronous job on `instances` spot instances restarts whenever any one is taken back: the job's rate is
    `instances` × `rate_per_h`; the Spot Advisor's `band` in `region` as of `as_of` gave the rate (None: the
    default rate). `overhead`: expected extra time (checkpoint writes, lost work, restarts); `chance`: of finishing
    by the deadline (None: no deadline)."""

    instances: int
    rate_per_h: float
    band: int | None
    region: str
    as_of: str
    interval_min: float
    overhead: float
    chance: float | None


class SpotOverheadHigh(Fact):
    """Expected spot overhead above the stated limit: the plan ranks behind those that are not."""

    overhead: float
    limit: float


class MarketplaceHosts(Fact):
    """A marketplace listing is `listed` machine(s): a plan cannot take `instances` of it."""

    instances: int
    listed: int


class QuotaNeeded(Fact):
    """The vCPU quota a plan needs in its AWS quota family (`code`, `name`); `granted` None: not checked."""

    code: str
    name: str
    vcpus: int
    granted: int | None = None


class CapacityBlock(Fact):
    """Reserved for `days` days as an AWS Capacity Block, at a price labelled `as_of` (`source`); a block holds at
    most `per_block` instances, so `instances` may take several."""

    days: int
    instances: int
    per_block: int
    as_of: str
    source: str


class Folded(Fact):
    """Plans the same as this one but for the host split (same GPUs, price and time), folded into it."""

    splits: tuple[str, ...]


class OwnHardware(Fact):
    """The user's own GPUs: marginal cost 0."""


class Hybrid(Fact):
    """Develop on the user's own GPUs, burst to the cloud for deadlines."""


class OwnTooSmall(Fact):
    """The user's GPUs hold less memory than the job needs."""

    count: int
    gpu: str
    usable_gb: float
    needed_gb: float


class OverDeadline(Fact):
    """The plan takes longer than the deadline."""

    hours: float
    deadline_h: float


class OverBudget(Fact):
    """The plan costs more than the budget."""

    total: Decimal
    budget: Decimal
    currency: str


class TooManyToHold(Fact):
    """Holding the job's memory takes more instances than `max_instances` allows."""

    instances: int
    host_gpus: int
    gpu: str
    gpus: int
    needed_gb: float
    max_instances: int


class TooManyToServe(Fact):
    """Serving `users` takes more instances than `max_instances` allows."""

    instances: int
    host_gpus: int
    gpu: str
    gpus: int
    users: int
    max_instances: int


class GroupSpansHosts(Fact):
    """A serving tensor-parallel group of `tp` GPUs is wider than a host of `host_gpus`."""

    tp: int
    host_gpus: int


class Refused(Fact):
    """Why the user's own GPUs cannot run the job at its precision (`sizing.missing_throughput`'s words, which the
    reasoning lines share)."""

    text: str
