"""The background articles' claims about Alibaba, Tencent and Huawei instances (`catalogs/sources/seeds/`), as
written, and what each is checked against. `sources/china.py` checks every claim against the providers' own
documentation (`cn_gpu_specs.csv`) and writes the rows.

A claim names an instance (a family or a size) and its GPU; `family` is the documentation's name it is checked
against (the instance types that start with it). No claim here has a traceable price: every price stays
`verified=no`, source the article. A claim the documentation contradicts is corrected to the family's GPU where
the documentation names one, and flagged (`Flag.ARTICLE_CLAIM_CONTRADICTED`) with the source that contradicts
it, so quotes show it only when asked (`include-unverified`).
"""

from __future__ import annotations

from typing import NamedTuple


class SeedClaim(NamedTuple):
    """One article row: the instance and GPU the article names, its price, and where it says so."""

    provider: str
    instance_type: str  # as the article writes it
    gpu: str  # the article's GPU, in gpus.csv's names
    gpu_count: str  # the article's count ("1" where it states none)
    gpu_memory_gib: str  # per GPU, as the article implies
    vcpus: str
    memory_gib: str
    on_demand_hourly: str
    monthly: str
    source: str  # seed-000 … (SOURCES.md)
    source_detail: str  # the article's sentence
    family: str  # the documented family the claim is checked against ("" when the name is no documented family)
    refuted_by: str  # the documentation source that contradicts the claim ("" when it confirms it)


_NOT_STATED = "GPU count and region not stated (1 GPU assumed)"

SEED_CLAIMS = (
    SeedClaim("aliyun", "ebmgn6i", "A100", "1", "40", "", "", "", "12000", "seed-000",
              f"seed 000 §二.3: 'ebmgn6i（A100，40GB显存）包年包月约¥12,000/月'; {_NOT_STATED}",
              "ecs.ebmgn6i", "AL-SPEC-EBM-20210608"),
    SeedClaim("aliyun", "gn7i", "A10", "1", "24", "", "", "3.5", "", "seed-000",
              f"seed 000 §二.3: 'gn7i（A10，24GB显存）按需价格约¥3.5/小时'; {_NOT_STATED}",
              "ecs.gn7i-", ""),
    SeedClaim("aliyun", "gn7i-c12g1", "A100", "1", "40", "", "", "9.8", "", "seed-002",
              "seed 002 §二.1 table: 'gn7i-c12g1 | 1 | 40GB | 9.8 元/小时' (listed under A100/H100); region not "
              "stated", "ecs.gn7i-", "AL-SPEC-GPU-20210701"),
    SeedClaim("aliyun", "gn8i", "A100-80GB", "4", "80", "96", "384", "85.2", "", "seed-001",
              "seed 001 §二.2: 'GN8i实例（4xA100 80GB，96vCPU，384GB内存）按量付费¥85.2/小时'; monthly given only as "
              "'包年包月优惠30%' (a discount, not a price); region not stated", "", "AL-SPEC-EN-IDX59137736427"),
    SeedClaim("tencent", "GN10Xp", "A100", "2", "40", "", "", "18.5", "", "seed-002",
              "seed 002 §二.1 table: 'GN10Xp | 2 | 80GB | 18.5 元/小时' (80GB in total, listed under A100/H100); "
              "region not stated", "GN10Xp.", "TC-SPEC-20211110"),
    SeedClaim("tencent", "GN10Xp", "A100-80GB", "8", "80", "", "", "28", "15000", "seed-000",
              "seed 000 §二.2: 'GN10Xp（8张A100，80GB显存）按需价格约¥28/小时（约$4），包年包月约¥15,000/月'; region "
              "not stated", "GN10Xp.", "TC-SPEC-20211110"),
    SeedClaim("tencent", "GN7", "A10", "1", "24", "", "", "3", "", "seed-000",
              f"seed 000 §二.2: 'GN7（A10，24GB显存）按需约¥3/小时'; {_NOT_STATED}", "GN7.", "TC-SPEC-20211110"),
    SeedClaim("huawei", "GPU-F16", "A10", "1", "24", "", "", "", "8000", "seed-000",
              f"seed 000 §二.4: 'GPU-F16（A10，24GB显存）包年包月约¥8,000/月'; {_NOT_STATED}",
              "", "HW-SPEC-EN-IDX8158082554"),
    SeedClaim("huawei", "GPU-F32", "A100", "1", "40", "", "", "30", "", "seed-000",
              f"seed 000 §二.4: 'GPU-F32（A100，40GB显存）按需价格约¥30/小时'; {_NOT_STATED}",
              "", "HW-SPEC-EN-IDX8158082554"),
    SeedClaim("huawei", "gpu-accel-a100", "A100", "4", "40", "", "", "35.2", "", "seed-002",
              "seed 002 §二.1 table: 'gpu-accel-a100 | 4 | 160GB | 35.2 元/小时'; region not stated",
              "", "HW-SPEC-EN-IDX8158082554"),
)
# Left out: seed 001's "GN10Xp（8张NVIDIA L40，256vCPU，1TB内存）竞价¥38.6/小时" — corrected to the documented
# 8× V100-32GB it would be the same offer as seed 000's GN10Xp row, and no GN10Xp size has that host.
