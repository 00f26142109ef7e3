"""Properties every recommendation keeps, for random workloads over random catalogs: a plan listed as feasible
holds the job in its GPUs' memory, meets the deadline it says it meets, and states its money in one unit each
(an hourly rate per hour, a total for the whole job) that agree: the total is the hourly rate × the plan's own
hours billed (rounded up to the offer's billing unit), mixed spot + on-demand fleets included."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import TODAY, offer

from gpu_assist.catalog import Catalog
from gpu_assist.catalog.files import offer_values
from gpu_assist.plan.recommendation import recommend
from gpu_assist.plan.sizing import GIB
from gpu_assist.plan.workload import parse_workload

# GPUs with dense TFLOPS for every training precision or a bf16 fallback, small to large memory.
GPUS = ("T4", "A10", "L4", "RTX4090", "V100-32GB", "A100", "A100-80GB", "H100", "H200", "B200", "MI300X")


@st.composite
def offers(draw):
    """One offer row: a GPU, 1-8 per instance, memory as the datasheet says, as a cloud lists it, or blank;
    an on-demand price and maybe spot, reserved and monthly ones; verified or not."""
    price = st.decimals(min_value=Decimal("0.05"), max_value=Decimal("120"), places=2)
    maybe = st.one_of(st.just(""), price.map(str))
    return offer(
        provider=draw(st.sampled_from(("aws", "gcp", "vast", "huawei"))), region=draw(st.sampled_from(
            ("us-east-1", "europe-west4", "cn-north-4"))), instance_type=f"t-{draw(st.integers(0, 10**6))}",
        gpu=draw(st.sampled_from(GPUS)), gpu_count=draw(st.sampled_from((1, 2, 4, 8))),
        gpu_memory_gib=draw(st.one_of(st.just(""), st.sampled_from((6, 15.99, 22.35, 40, 44.7, 79.65, 80, 140.4)))),
        on_demand_hourly=draw(price), spot_hourly=draw(maybe), reserved_1y_hourly=draw(maybe),
        reserved_3y_hourly=draw(maybe), monthly=draw(st.one_of(st.just(""), price.map(lambda p: str(p * 500)))),
        billing_granularity_s=draw(st.sampled_from((1, 60, 3600))), verified=draw(st.sampled_from(("yes", "no"))))


@st.composite
def workloads(draw):
    """`recommend`'s words: a kind, a size from 1B to 400B, and options that move the sizing: tokens (or none,
    so no job length), a deadline (or none), the instance cap, spot or not, users to serve."""
    kind = draw(st.sampled_from(("train", "finetune full", "finetune lora", "finetune qlora", "serve")))
    words = [kind, f"{draw(st.integers(1, 400))}B"]
    if kind == "serve":
        words += [draw(st.sampled_from(("bf16", "fp8", "int4"))), f"users={draw(st.integers(1, 64))}"]
    else:
        words.append(draw(st.sampled_from(("bf16", "fp16", "fp8"))))
        tokens = draw(st.one_of(st.none(), st.sampled_from(("100M", "2B", "50B", "1T"))))
        if tokens:
            words.append(f"tokens={tokens}")
        words.append(f"deadline={draw(st.sampled_from(('6h', '3d', '2w', 'none')))}")
    words.append(f"max_instances={draw(st.integers(1, 64))}")
    words.append(f"interruptible={draw(st.sampled_from(('yes', 'no')))}")
    return " ".join(words)


def _catalog(rows, real: Catalog) -> Catalog:
    """The offers `rows` with the real GPU table and FX rates, in memory."""
    strings: dict[str, str] = {}
    return Catalog([offer_values(row, strings) for row in rows], real.gpus, real.fx, real.directory)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(offers(), min_size=1, max_size=12), words=workloads())
def test_every_listed_plan_can_run_the_job_and_says_so_in_one_unit_per_figure(catalog, rows, words):
    workload = parse_workload(words, catalog.gpus)
    result = recommend(workload, _catalog(rows, catalog), today=TODAY, top=1000)
    needed = result.memory.total_bytes
    usable = workload.assumptions.usable_memory
    for plan in result.plans:
        assert plan.fits and plan.feasible
        # The plan's GPUs hold what its own reasoning says the job needs.
        assert plan.gpu_count * plan.gpu_memory_gib * GIB * usable >= needed, plan
        assert plan.instances * plan.gpus_per_instance >= plan.gpu_count
        if workload.kind != "serve":
            assert plan.instances <= workload.assumptions.max_instances
        # The deadline: met when it says so, and said whenever a time and a deadline are known.
        if plan.meets_deadline:
            assert plan.hours is not None and plan.hours <= workload.deadline_s / 3600
        if workload.deadline_s and plan.hours is not None and workload.kind != "serve":
            assert plan.meets_deadline is True
        # Money: a total for the whole job exactly when the job has a length; never less than its hours cost.
        assert (plan.total is None) == (plan.hours is None)
        assert plan.hourly >= 0
        if plan.total is not None:
            assert plan.total >= plan.hourly * Decimal(plan.hours) * Decimal("0.999999"), plan
            # What the total bills: its own hours at its own rate, rounded up to whole billing units only.
            assert plan.billed_hours is not None and abs(plan.total - plan.hourly * plan.billed_hours) <= \
                plan.total * Decimal("1e-12"), plan
            assert plan.billed_hours >= Decimal(plan.hours) * Decimal("0.999999"), plan
            if plan.pricing_model not in ("reserved-1y", "reserved-3y", "monthly"):
                assert plan.billed_hours - Decimal(plan.hours) < Decimal("1.001"), plan  # at most an hour's unit
    for plan in result.rejected:
        assert not plan.feasible and (plan.reasons or not plan.fits)
