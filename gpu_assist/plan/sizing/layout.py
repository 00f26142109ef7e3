"""How a workload is laid out on each offer of a GPU type: how many instances a plan takes, serving's replicas
and tensor-parallel groups, training's instances for the deadline, and why an offer is refused. Pure."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from ...catalog.fabric import Link
from ...catalog.gpus import GpuSpec
from ...facts import Fact, GroupSpansHosts, MarketplaceHosts, NoFabric, Scaling, TooManyToHold, TooManyToServe
from ..workload import Workload
from .compute import missing_throughput, scaling, spot_overhead, training_hours
from .facts import GpuSizing, ServingLayout
from .memory import GB, GIB, SERVING_OVERHEAD, MemoryEstimate, Part, memory_needed, min_gpus, usable_gb


class HostFacts(NamedTuple):
    """What sizing knows of one offer besides its GPUs: its network, its spot rate, how many hosts it has."""

    link: Link | None
    spot_rate: float | None  # per instance-hour; None: no spot price to plan
    hosts_listed: int | None  # a marketplace listing's machines; None: a cloud's, no limit

    @property
    def trains(self) -> bool:
        return self.link is not None and self.link.trains


def _serving_layout(memory: MemoryEstimate, spec: GpuSpec, gpu_memory_gib: float, workload: Workload,
                    host_gpus: int) -> ServingLayout:
    """The fewest replicas whose power-of-two TP group fits inside one host (more replicas, each holding the KV
    cache of fewer users, rather than a group spanning hosts) and decodes at the target speed. A group wider than
    a host is left only when one user's replica needs it (the offer is then refused)."""
    a = workload.assumptions
    weights, kv_per_user = memory.part(Part.WEIGHTS), memory.part(Part.KV_CACHE) / workload.users
    usable = gpu_memory_gib * GIB * a.usable_memory

    def group(users: int) -> int:
        need = (weights + kv_per_user * users) * (1 + SERVING_OVERHEAD)
        return 1 << max(0, math.ceil(math.log2(max(1.0, need / usable))))

    # When not even one user's group fits a host, the offer is refused whatever the replicas: sized as before.
    host_limit = host_gpus if group(1) <= host_gpus else math.inf
    replicas = 1
    while True:
        # Replica counts giving the same users per replica give the same layout: only the first of each is tried
        # (about 2√users of them, not one per user).
        users = math.ceil(workload.users / replicas)
        tp = group(users)
        if tp <= host_limit:
            if not spec.memory_bandwidth_gbs:
                return ServingLayout(tp, replicas, users, None)
            step = (weights + kv_per_user * users) / (tp * spec.memory_bandwidth_gbs * 1e9 * a.bandwidth_efficiency)
            if 1 / step >= a.target_tokens_per_s or users == 1:
                return ServingLayout(tp, replicas, users, 1 / step)
        replicas = math.ceil(workload.users / (users - 1))  # the fewest replicas with fewer users each


@dataclass(frozen=True)
class OfferSizes:
    """One GPU type's offers sized for a workload, per offer in order: what a plan on each buys and for how long."""

    instances: list[int]
    gpus: list[int]  # GPUs the plan uses (serving: tensor-parallel group × replicas)
    duration_s: list[int]  # priced for
    job_hours: list[float | None]  # at full speed; None when the compute is unknown
    refusals: list[Fact | None]  # why a plan on this offer cannot run the job (None: it can)
    scaling: list[Scaling]  # training: how its hosts scale (serving: one host's, 1.0)


def size_offers(workload: Workload, spec: GpuSpec, host_gpus: list[int], gpu_memory_gib: list[float],
                memory: MemoryEstimate, flops: float | None,
                hosts: list[HostFacts] | None = None) -> tuple[GpuSizing, OfferSizes | None]:
    """How one GPU type holds and runs the job, and how many of each offer's instances a plan takes (None: this
    GPU cannot be planned, `GpuSizing.missing` says why). `host_gpus` and `gpu_memory_gib` are each offer's GPUs
    per instance and memory per GPU: an offer that lists less memory than the GPU's datasheet needs more of them."""
    a = workload.assumptions
    smallest, largest = min(gpu_memory_gib), max(gpu_memory_gib)
    need = min_gpus(memory, smallest, a.usable_memory)
    biggest = max(host_gpus)
    held = (spec.name, smallest, largest, memory.total_bytes / GB, need, min_gpus(memory, largest, a.usable_memory),
            biggest, usable_gb(biggest, smallest, a.usable_memory))
    facts = hosts or [HostFacts(None, None, None)] * len(host_gpus)
    if workload.kind == "serve":
        layout, sizes = _serving_sizes(workload, spec, host_gpus, gpu_memory_gib, memory, facts)
        return GpuSizing(*held, layout=layout), sizes
    missing = missing_throughput(spec, workload.precision)
    if missing is not None:
        return GpuSizing(spec.name, missing=missing), None
    per_gpu = training_hours(flops, 1, spec, workload, 1) if flops else None
    sizes = _training_sizes(workload, spec, host_gpus, gpu_memory_gib, memory, flops, per_gpu, facts)
    return GpuSizing(*held, gpu_hours=per_gpu, tflops=spec.dense_tflops(workload.precision), mfu=a.mfu,
                     precision=workload.precision, compute_precision=spec.compute_precision(workload.precision)), sizes


def _serving_sizes(workload: Workload, spec: GpuSpec, host_gpus: list[int], gpu_memory_gib: list[float],
                   memory: MemoryEstimate, hosts: list[HostFacts]) -> tuple[ServingLayout, OfferSizes]:
    """Each offer's instances for the serving layout (and the last offer's layout); a tensor-parallel group wider
    than the offer's host is refused (tensor parallelism across hosts is too slow to serve from), and so are more
    replicas' hosts than a marketplace listing has."""
    layouts: dict[tuple[int, float], ServingLayout] = {}
    instances: list[int] = []
    gpus: list[int] = []
    refusals: list[Fact | None] = []
    layout = ServingLayout(0, 0, 0, None)
    for g, memory_gib, host in zip(host_gpus, gpu_memory_gib, hosts):
        layout = layouts.get((g, memory_gib)) or \
            layouts.setdefault((g, memory_gib), _serving_layout(memory, spec, memory_gib, workload, g))
        tp, replicas = layout.tp, layout.replicas
        total_gpus = tp * replicas
        needed = math.ceil(total_gpus / g) if tp <= g else replicas * math.ceil(tp / g)
        instances.append(needed)
        gpus.append(total_gpus)
        if tp > g:
            refusals.append(GroupSpansHosts(tp, g))
        elif needed > workload.assumptions.max_instances:
            refusals.append(TooManyToServe(needed, g, spec.name, total_gpus, workload.users,
                                           workload.assumptions.max_instances))
        elif host.hosts_listed is not None and needed > host.hosts_listed:
            refusals.append(MarketplaceHosts(needed, host.hosts_listed))
        else:
            refusals.append(None)
    count = len(host_gpus)
    one = Scaling(1, None, 0.0, 0.0, workload.assumptions.comm_overlap, 1.0, "one host")
    sizes = OfferSizes(instances, gpus, [math.ceil(workload.serve_hours * 3600)] * count,
                       [workload.serve_hours] * count, refusals, [one] * count)
    return layout, sizes


def _training_sizes(workload: Workload, spec: GpuSpec, host_gpus: list[int], gpu_memory_gib: list[float],
                    memory: MemoryEstimate, flops: float | None, per_gpu: float | None,
                    hosts: list[HostFacts]) -> OfferSizes:
    """The smallest multiple of each instance that fits the memory and meets the deadline (`per_gpu`: the job's
    GPU-hours) at the scaling its network gives (`scaling`), sized for spot with its fleet-scale overhead when the
    offer has a spot price and spot can meet the deadline at all, else for on-demand speed.
    At most `max_instances` instances: more for the deadline are cut to it (the plan then says it is late); an
    offer that needs more only to hold the job is refused, as fewer instances could not run it at all. Refused
    too: pretraining or a full fine-tune over more than two hosts without a training fabric (`NoFabric`), and more
    hosts than a marketplace listing has (`MarketplaceHosts`)."""
    a = workload.assumptions
    sizes = OfferSizes([], [], [], [], [], [])
    needs: dict[float, int] = {}  # GPUs needed per memory size: offers share a few
    sharded = workload.kind == "train" or (workload.kind == "finetune" and workload.method == "full")
    for g, memory_gib, host in zip(host_gpus, gpu_memory_gib, hosts):
        need = needs.get(memory_gib) or needs.setdefault(memory_gib, min_gpus(memory, memory_gib, a.usable_memory))
        holding = math.ceil(need / g)
        count = holding

        def efficiency(n: int, g: int = g, host: HostFacts = host) -> float:
            return scaling(workload, spec, g, n, host.link).efficiency

        if per_gpu is not None and workload.deadline_s:
            deadline_h = workload.deadline_s / 3600
            count = _fewest(holding, per_gpu, g, efficiency, lambda n: 1.0, deadline_h, a.max_instances)
            rate = host.spot_rate
            if rate is not None:
                def slowdown(n: int, rate: float = rate) -> float:
                    return 1 + spot_overhead(a, n, rate)

                spot = _fewest(holding, per_gpu, g, efficiency, slowdown, deadline_h, a.max_instances)
                if per_gpu / (spot * g * efficiency(spot)) * slowdown(spot) <= deadline_h:
                    count = spot
        refusal: Fact | None = None
        if holding > a.max_instances:
            refusal = TooManyToHold(holding, g, spec.name, need, memory.total_bytes / GB, a.max_instances)
        else:
            count = min(count, a.max_instances)
        if refusal is None and host.hosts_listed is not None and count > host.hosts_listed:
            refusal = MarketplaceHosts(count, host.hosts_listed)
        # No pretraining or full fine-tune over more than two hosts without a sourced fabric; a user who sets
        # multi_host_efficiency= vouches for hosts whose network no source states (not for a known slow one).
        vouched = host.link is None and "multi_host_efficiency" in workload.overridden
        if refusal is None and sharded and count > 2 and not host.trains and not vouched:
            link = host.link
            refusal = NoFabric(count, link.fabric if link else "", link.gbps if link else None)
        scaled = scaling(workload, spec, g, count, host.link)
        hours = training_hours(flops, count * g, spec, workload, count, scaled.efficiency) if flops else None
        sizes.instances.append(count)
        sizes.gpus.append(count * g)
        sizes.job_hours.append(hours)
        sizes.duration_s.append(math.ceil((hours if hours else 1) * 3600))
        sizes.refusals.append(refusal)
        sizes.scaling.append(scaled)
    return sizes


def _fewest(start: int, per_gpu: float, g: int, efficiency: Callable[[int], float],
            slowdown: Callable[[int], float], deadline_h: float, cap: int) -> int:
    """The fewest instances from `start` (at most `cap`) whose expected hours meet `deadline_h`: per_gpu / (n × g ×
    efficiency(n)) × slowdown(n); each try jumps to the count the last one's time asks for."""
    n = start
    while n < cap:
        expected = per_gpu / (n * g * efficiency(n)) * slowdown(n)
        if expected <= deadline_h:
            break
        n = min(cap, max(n + 1, math.ceil(n * expected / deadline_h)))
    return n


def block_size(workload: Workload, spec: GpuSpec, g: int, memory_gib: float, flops: float, link: Link | None,
               cap: int) -> tuple[int, float, Scaling] | None:
    """(instances, hours, scaling) of a reserved block of hosts of `g` GPUs: the fewest that hold the job and meet
    its deadline, at most `cap` (the reservation's own limit, not `max_instances`); None when none can (too big,
    no training fabric beyond two hosts, no rate for the precision)."""
    a = workload.assumptions
    per_gpu = training_hours(flops, 1, spec, workload, 1)
    if per_gpu is None:
        return None
    holding = math.ceil(min_gpus(memory_needed(workload), memory_gib, a.usable_memory) / g)
    if holding > cap:
        return None

    def efficiency(n: int) -> float:
        return scaling(workload, spec, g, n, link).efficiency

    n = _fewest(holding, per_gpu, g, efficiency, lambda n: 1.0, workload.deadline_s / 3600, cap) \
        if workload.deadline_s else holding
    sharded = workload.kind == "train" or workload.method == "full"
    if sharded and n > 2 and not (link and link.trains) and not (link is None and "multi_host_efficiency" in
                                                                  workload.overridden):
        return None
    scaled = scaling(workload, spec, g, n, link)
    return n, per_gpu / (n * g * scaled.efficiency), scaled


