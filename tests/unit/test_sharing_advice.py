"""Sharing advice from measured use, against NVIDIA's published MIG profiles (MIG User Guide, "Supported MIG
Profiles": on an 80 GB A100 or H100, 1g.10gb is 1 of 7 compute slices with 10 GB, 7 to a GPU; 2g.20gb is 2 slices
with 20 GB, 3 to a GPU; on an H200, 1g.18gb, 7 to a GPU)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpu_assist.facts import PricingModel
from gpu_assist.render.sharing import sharing_line
from gpu_assist.team.sharing import MeasuredUse, mig_fit, mps_processes, sharing_advice


def _use(catalog, gpu: str, memory_gib: float, pct: float, gpus: int = 1) -> MeasuredUse:
    return MeasuredUse(catalog.gpus.find(gpu), gpus, memory_gib, pct, 3600)


@pytest.mark.parametrize(("gpu", "memory_gib", "pct", "profile", "copies"), [
    ("H100", 8, 15, "2g.20gb", 3),     # 1/7 of the SMs is 14 %: too little for 15 % with headroom
    ("H100", 6, 10, "1g.10gb", 7),
    ("A100-80GB", 12, 10, "1g.20gb", 4),  # 12 GB with headroom is over 10 GB
    ("A100", 8, 15, "2g.10gb", 3),
    ("H200", 14, 10, "1g.18gb", 7),
])
def test_the_smallest_profile_that_holds_the_memory_and_the_compute(catalog, gpu, memory_gib, pct, profile,
                                                                     copies):
    fit = mig_fit(_use(catalog, gpu, memory_gib, pct))
    assert fit is not None and (fit.profile.name, fit.copies) == (profile, copies)


def test_a_busy_gpu_gets_no_advice_and_a_gpu_without_mig_gets_mps(catalog):
    no_price = lambda offer: None  # noqa: E731
    busy = sharing_advice(_use(catalog, "H100", 60, 80), (), catalog.gpus, model=PricingModel.ON_DEMAND,
                          price_of=no_price, current_hourly=None)
    assert busy is None
    t4 = sharing_advice(_use(catalog, "T4", 3, 10), (), catalog.gpus, model=PricingModel.ON_DEMAND,
                        price_of=no_price, current_hourly=None)
    assert t4 is not None and t4.mig is None and t4.mps_processes == mps_processes(t4.use) == 4
    assert sharing_line(t4, "USD") == "1×T4 at 10% use, 3.0 GiB at most: MPS up to 4 such processes per GPU"


def test_the_smaller_instance_is_the_cheapest_that_holds_the_work_and_saves_a_730_hour_month(catalog):
    offers = catalog.offers_in("aws", "us-east-1")
    use = _use(catalog, "A100", 8, 15, gpus=8)
    price_of = lambda offer: offer.price(PricingModel.ON_DEMAND)  # noqa: E731
    advice = sharing_advice(use, offers, catalog.gpus, model=PricingModel.ON_DEMAND, price_of=price_of,
                            current_hourly=Decimal("21.957642"))
    assert advice is not None and advice.smaller is not None
    smaller = advice.smaller
    assert smaller.offer.gpu_count == 8 and smaller.hourly < Decimal("21.957642")
    assert smaller.saving_per_month == (Decimal("21.957642") - smaller.hourly) * 730
    holding = [o for o in offers if o.gpu_count == 8 and o.verified and o.on_demand_hourly is not None
               and not o.flagged(PricingModel.ON_DEMAND)
               and (o.gpu_memory_gib or catalog.gpus.find(o.gpu).memory_gib) >= 8 * 1.2
               and ((catalog.gpus.find(o.gpu).bf16_tflops or catalog.gpus.find(o.gpu).fp16_tflops or 0) * 0.8
                    >= 0.15 * 312 * 1.2)]
    assert smaller.hourly == min(o.on_demand_hourly for o in holding)
