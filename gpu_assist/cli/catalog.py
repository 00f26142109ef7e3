"""`gpu-assist catalog …`: validate, list, import and refresh the price catalogs."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from ..catalog import default_catalog_dir, load_catalog, source_disagreements, validate_directory
from ..catalog.data_prices import FILE_NAME, replace_rows
from ..catalog.files import RowFacts, corrected_rows, dropped_rows, offer_files, read_offer_file
from ..catalog.gpus import load_gpus
from ..catalog.regions import default_region
from ..catalog.report import (
    CAUGHT_COLUMNS,
    UNDATED,
    UNDATED_FOOTNOTE,
    billing_footnote,
    caught_table,
    gpu_summary,
    provider_status,
)
from ..clouds.sdk.aws import explain, require_credentials
from ..errors import CatalogError, GpuAssistError, ParseError
from ..plural import plural
from ..render.comparison import wrap
from ..render.freshness import refresh_table
from ..render.money import format_rate, restate_money
from ..render.notes import words
from ..render.tables import table, text_table
from ..sources import aws_account as aws_api
from ..sources import aws_public, china, public, sanity, skypilot
from ..sources.committed import WithCommittedPrices
from ..sources.ecb import write_fx
from ..sources.freshness import read_ledger
from ..sources.refresh import PriceSource, refresh

if TYPE_CHECKING:
    import pandas as pd

# What a refresh under a progress bar calls after each region: (region, regions done, regions in all).
Advance = Callable[[str, int, int], None]


def answer(args: argparse.Namespace) -> int:
    directory = getattr(args, "catalog_dir", None) or getattr(args, "directory", None) or default_catalog_dir()
    if args.catalog_command == "validate":
        return _validate(directory, verbose=getattr(args, "verbose", False))
    if args.catalog_command == "import-skypilot":
        return _import_skypilot(args, directory)
    if args.catalog_command == "import-china":
        return _import_china(args, directory)
    if args.catalog_command == "refresh" and args.provider in _CHINA_REFRESH:
        try:
            return _CHINA_REFRESH[args.provider](args, directory)
        except ModuleNotFoundError as missing:
            raise GpuAssistError(f"catalog refresh {args.provider} needs its cloud's SDK ({missing.name} is not "
                                 "installed)", hint="pip install 'gpu-assist[china]'") from None
    if args.catalog_command == "refresh" and args.provider == "gcp":
        return _refresh_gcp(directory)
    if args.catalog_command == "refresh" and args.provider in ("aws-public", "azure", "skypilot"):
        return _refresh_public(args, directory)
    if args.catalog_command == "refresh":
        return _refresh_aws(args, directory)
    if args.catalog_command == "import-fx":
        print(write_fx(directory / "fx.csv"))
        return 0
    return _report(args, directory)


def _validate(directory: Path, *, verbose: bool = False) -> int:
    """Every defect; then, for a valid folder, a summary per provider, and with `verbose` the rows behind it."""
    _require_directory(directory, "catalog directory", "gpu-assist catalog validate catalogs")
    defects = validate_directory(directory)
    for defect in defects:
        print(defect)
    print(f"{directory}: {plural(len(defects), 'defect')}" if defects else f"{directory}: OK")
    if defects:
        return 1
    disagreements = source_disagreements(directory)
    corrected, dropped = corrected_rows(directory), dropped_rows(directory)
    print(_validate_summary(directory, disagreements, corrected, dropped))
    if not verbose:
        if disagreements or corrected or dropped:
            print("gpu-assist catalog validate --verbose lists each of them")
        return 0
    if disagreements:
        print(f"{plural(len(disagreements), 'offer')} where two sources disagree (kept, labelled in quotes):")
        # the committed-use datasets' figures are dollars (sources/committed.py), shown as quotes show them
        print("\n".join(folded for line in disagreements
                        for folded in wrap(f"  {restate_money(line, 'USD', 'USD')}", "    ")))
    _print_corrected_and_dropped(directory)
    return 0


def _validate_summary(directory: Path, disagreements: list[str], corrected: list[RowFacts],
                      dropped: list[RowFacts]) -> str:
    """Per provider: its offer rows, the offers two sources disagree on, the rows corrected and dropped; a total."""
    counts: dict[str, list[int]] = {}
    for path in offer_files(directory):
        for _, row in read_offer_file(path).rows:
            counts.setdefault(row.get("provider", ""), [0, 0, 0, 0])[0] += 1
    for column, providers in ((1, [line.split(" ", 1)[0] for line in disagreements]),
                              (2, [row.name[0] for row in corrected]), (3, [row.name[0] for row in dropped])):
        for provider in providers:
            counts.setdefault(provider, [0, 0, 0, 0])[column] += 1
    rows = [[provider, *(str(n) for n in numbers)] for provider, numbers in sorted(counts.items())]
    totals = [sum(numbers[i] for numbers in counts.values()) for i in range(4)]
    return "\n".join([text_table(["provider", "rows", "disagree", "corrected", "dropped"], rows),
                      f"{plural(len(counts), 'provider')}, {plural(totals[0], 'row')}: "
                      f"{plural(totals[1], 'offer')} where two sources disagree, {totals[2]} corrected,",
                      f"{totals[3]} dropped (flagged: every price has a known defect)"])


def _print_corrected_and_dropped(directory: Path) -> None:
    """The rows the import corrected (and on what source), and the rows no quote ranks (and why)."""
    for heading, rows in (("corrected (kept, with the correction labelled in quotes)", corrected_rows(directory)),
                          ("dropped (every price has a known defect; include-flagged shows them)",
                           dropped_rows(directory))):
        if rows:
            print(f"{plural(len(rows), 'row')} {heading}:")
        for row in rows:
            name = " ".join(part for part in row.name if part)
            said = "; ".join(restate_money(words(fact), "USD", "USD") for fact in row.facts)
            print("\n".join(wrap(f"  {name}: {said}", "    ")))


def _import_skypilot(args: argparse.Namespace, directory: Path) -> int:
    _check_imported(args.imported)
    example = "gpu-assist catalog import-skypilot catalogs/sources --imported 2026-12-02"
    _require_directory(args.path, "SkyPilot extract folder", example)
    for name in (*(extract.file for extract in skypilot.EXTRACTS.values()), skypilot.AZURE_SPECS_FILE):
        _require_file(args.path / name, f"the extract {name}", example)
    gpus = load_gpus(directory / "gpus.csv")
    sources = [WithCommittedPrices(skypilot.SkyPilotSource(provider, args.path, gpus, args.imported), args.path)
               for provider in skypilot.EXTRACTS]
    rows = {source.provider: list(source.rows()) for source in sources}
    sanity.check(rows)  # the rules that compare providers and zones see every row before any is written
    for source in sources:
        print(refresh(public.FixedRows(source, rows[source.provider]), directory).summary())
    return 0


def _import_china(args: argparse.Namespace, directory: Path) -> int:
    """`catalog import-china`: aliyun.csv, tencent.csv, huawei.csv from the providers' documented specs, Tencent's
    published list prices and the articles' claims (rerunnable: the same sources give the same files)."""
    example = "gpu-assist catalog import-china catalogs/sources"
    _require_directory(args.path, "sources folder", example)
    for name in (china.SPECS_FILE, china.PRICES_FILE):
        _require_file(args.path / name, f"the extract {name}", example)
    gpus = load_gpus(directory / "gpus.csv")
    for provider in china.PROVIDERS:
        print(refresh(china.ChinaSource(provider, args.path, gpus), directory).summary())
    return 0


def _refresh_tencent(args: argparse.Namespace, directory: Path) -> int:
    """`catalog refresh tencent`: the account's CVM API (on-demand, spot and monthly per zone); the catalog's
    published list and article rows stay, and nothing changes on failure."""
    # the `china` extra's SDK, imported by its importer: absent, `answer` says which extra to install
    from ..sources import tencent as tencent_api

    tencent_api.credential()  # no keys: one line naming the variables, before any progress bar
    regions = _names(args.regions, tencent_api.DEFAULT_REGIONS)
    with (directory / "tencent.csv").open(newline="", encoding="utf-8") as handle:
        documented = tencent_api.documented_families(csv.DictReader(handle))
    return _refresh_with_progress("Tencent Cloud CVM prices", regions, directory,
                                  lambda progress: tencent_api.TencentPriceSource(
                                      regions, documented, today=dt.date.today(), progress=progress))


def _refresh_aliyun(args: argparse.Namespace, directory: Path) -> int:
    """`catalog refresh aliyun`: the account's ECS API (pay-as-you-go and monthly per region); the articles' rows
    stay, and nothing changes on failure."""
    # the `china` extra's SDK, imported by its importer: absent, `answer` says which extra to install
    from ..sources import aliyun as aliyun_api

    aliyun_api.credential()  # no keys: one line naming the variables, before any progress bar
    regions = _names(args.regions, aliyun_api.DEFAULT_REGIONS)
    gpus = load_gpus(directory / "gpus.csv")
    return _refresh_with_progress("Alibaba Cloud ECS prices", regions, directory,
                                  lambda progress: aliyun_api.AliyunPriceSource(
                                      regions, gpus, today=dt.date.today(), progress=progress))


def _refresh_huawei(args: argparse.Namespace, directory: Path) -> int:
    """`catalog refresh huawei`: the account's ECS flavors and BSS ratings (pay-per-use and monthly per region),
    GPUs from the documentation in `sources/cn_gpu_specs.csv`; the articles' rows stay, nothing changes on failure."""
    # the `china` extra's SDK, imported by its importer: absent, `answer` says which extra to install
    from ..sources import huawei as huawei_api

    huawei_api.credential()  # no keys: one line naming the variables, before any progress bar
    regions = _names(args.regions, huawei_api.DEFAULT_REGIONS)
    specs = directory / "sources" / china.SPECS_FILE
    documented = china.read_specs(specs)["huawei"] if specs.exists() else []
    gpus = load_gpus(directory / "gpus.csv")
    return _refresh_with_progress("Huawei Cloud ECS prices", regions, directory,
                                  lambda progress: huawei_api.HuaweiPriceSource(
                                      regions, documented, gpus, today=dt.date.today(), progress=progress))


_CHINA_REFRESH = {"tencent": _refresh_tencent, "aliyun": _refresh_aliyun, "huawei": _refresh_huawei}


def _refresh_with_progress(label: str, regions: list[str], directory: Path,
                            make_source: Callable[[Advance], PriceSource]) -> int:
    """Refresh a provider region by region under a progress bar on stderr, then say what was written."""
    progress, task = public._progress(f"{label}: regions", total=len(regions))

    def advance(region: str, done: int, _total: int) -> None:
        progress.update(task, completed=done, description=f"{label}: {region or 'done'}")

    with progress:
        report = refresh(make_source(advance), directory)
    print(report.summary())
    return 0


def _refresh_aws(args: argparse.Namespace, directory: Path) -> int:
    """`catalog refresh aws`: the account's Price List and EC2 APIs."""
    regions = _names(args.regions, [default_region()])
    families = tuple(_names(args.families, aws_api.DEFAULT_FAMILIES))
    aws = aws_api.AwsPriceSource(regions, load_gpus(directory / "gpus.csv"), families=families, today=dt.date.today())
    try:
        require_credentials(regions[0])  # no keys: one line naming the variables, before any progress line
        print(refresh(aws, directory).summary())
    except GpuAssistError:
        raise
    except Exception as error:  # noqa: BLE001 - botocore's failures, as one line; the old file stays
        raise explain(error, "refreshing AWS prices (the previous catalog is unchanged)") from None
    return 0


def _report(args: argparse.Namespace, directory: Path) -> int:
    """`catalog list-gpus` and `catalog status`: a table, or JSON records."""
    catalog = load_catalog(directory)
    if args.catalog_command == "list-gpus":
        frame = gpu_summary(catalog)
    else:
        documented = [provider for provider, extract in skypilot.EXTRACTS.items() if not extract.billing_assumed]
        frame = provider_status(catalog, dt.date.today(), billing_documented=documented)
    if args.format == "json":
        print(json.dumps(frame.to_dict(orient="records"), ensure_ascii=False, indent=2, default=str))
    elif args.catalog_command == "list-gpus":
        print(_gpu_table(frame))
    else:
        shown = frame.drop(columns=["billing", *CAUGHT_COLUMNS], errors="ignore")
        sources = list(shown.columns).index("sources")  # a provider with several sources folds them after commas
        print(text_table(list(shown.columns), [[str(v) for v in row] for row in shown.itertuples(index=False)],
                         fold={sources}, narrow=[(sources, 30)]))
        if any(f" {UNDATED}" in said for said in frame["sources"]):
            print("\n".join(wrap(UNDATED_FOOTNOTE)))
        if "billing" in frame:
            print("\n".join(wrap(billing_footnote(frame))))
        if "resale" in frame:
            _print_caught(frame)
        refreshed = read_ledger(directory)
        if refreshed:
            print("\n" + refresh_table(refreshed, dt.datetime.now(dt.timezone.utc)))
    return 0


CAUGHT_LEGEND = ("defects caught at import (rows): corrected = a value corrected on a named source; (a) below its "
                 "GPUs' list price; (b) on-demand replaced by the provider's billing catalog; b_spot = spot more than "
                 "10 % from the billing catalog's; (c) GCP Flex-start "
                 "rate billed as on-demand; (d) below a fifth of the GPU's median; (e) spot outlier among its zones; "
                 "resale = resold upstream offer with a defect, or below the upstream's own price")


def _print_caught(frame: pd.DataFrame) -> None:
    """Under `catalog status`: per provider, the rows each price sanity rule caught at import (`sources/sanity.py`)."""
    print()
    print("\n".join(wrap(CAUGHT_LEGEND)))
    print(table(["provider", *CAUGHT_COLUMNS], caught_table(frame)))


# `catalog list-gpus` in text: short headers for gpu_summary's columns (JSON keeps the long names).
_GPU_HEADERS = {"gpu": "gpu", "memory_gib": "GiB", "architecture": "architecture", "bf16_tflops": "bf16 TFLOPS",
                "offers": "offers", "providers": "providers",
                "min_verified_on_demand_per_gpu_hour_usd": "from/GPU-h"}


def _gpu_table(frame: pd.DataFrame) -> str:
    """The GPUs within 100 columns: numbers whole, the providers folded after a comma."""
    columns = list(_GPU_HEADERS)
    rows = [[str(value) for value in row] for row in frame[columns].itertuples(index=False)]
    price = columns.index("min_verified_on_demand_per_gpu_hour_usd")
    for row in rows:  # as prices read everywhere else
        if row[price]:
            row[price] = format_rate(Decimal(row[price]), "USD")
    providers = columns.index("providers")
    return "\n".join([text_table(list(_GPU_HEADERS.values()), rows, right={1, 3, 4, 6}, fold={providers},
                                 whole=set(range(len(columns))) - {providers}, narrow=[(providers, 0)]),
                      "from/GPU-h: the cheapest verified on-demand price of one GPU-hour"])


def _refresh_public(args: argparse.Namespace, directory: Path) -> int:
    """`catalog refresh azure|skypilot`: public price lists, no account; the catalog is unchanged on failure."""
    today = dt.date.today()
    if args.provider == "aws-public":
        return _refresh_aws_public(args, directory, today)
    if args.provider == "azure":
        print(refresh(public.AzureRetailSource(directory, today), directory).summary())
        return 0
    if not args.commit or not re.fullmatch(r"[0-9a-f]{40}", args.commit):
        raise GpuAssistError("refresh skypilot needs --commit with a full 40-digit commit hash",
                             hint="example: gpu-assist catalog refresh skypilot --commit "
                                  "00148f2af3672e2229b4f7bf8157d5a3f36e3c35 --providers aws")
    providers = _names(args.providers, public.SKYPILOT_PATHS)
    unknown = [p for p in providers if p not in public.SKYPILOT_PATHS]
    if unknown:
        raise GpuAssistError(f"unknown SkyPilot cloud '{unknown[0]}'",
                             hint="known: " + ", ".join(public.SKYPILOT_PATHS))
    for line in public.refresh_skypilot(args.commit, providers, directory, today):
        print(line)
    return 0


def _refresh_gcp(directory: Path) -> int:
    """`catalog refresh gcp`: Google's Cloud Billing Catalog (an API key or application-default credentials)."""
    try:  # the `gcp` extra's client, imported by its refresher
        from ..sources import gcp_billing
    except ModuleNotFoundError as missing:
        raise GpuAssistError(f"catalog refresh gcp needs Google's client ({missing.name} is not installed)",
                             hint="pip install 'gpu-assist[gcp]'") from None
    client = gcp_billing.default_client()  # no credentials: one line, before anything else
    today = dt.date.today()
    print(refresh(gcp_billing.GcpBillingSource(directory, today, client), directory).summary())
    public.append_refresh_log(directory / "SOURCES.md", [
        f"| {today.isoformat()} | `{gcp_billing.SOURCE_KEY}` | cloudbilling.googleapis.com/v1/"
        f"{gcp_billing.COMPUTE_SERVICE}/skus | API | gcp rows |"])
    return 0


def _refresh_aws_public(args: argparse.Namespace, directory: Path, today: dt.date) -> int:
    """`catalog refresh aws-public`: the public EC2 and Savings Plans price list files of some regions."""
    stray = next((flag for flag, value in (("--commit", args.commit), ("--providers", args.providers),
                                           ("--families", args.families)) if value), None)
    if stray:
        raise GpuAssistError(f"refresh aws-public takes --regions, not {stray}",
                             hint="example: gpu-assist catalog refresh aws-public --regions us-east-1,us-west-2")
    regions = _names(args.regions, [default_region()])
    source = aws_public.AwsPublicPriceSource(directory, regions)
    report = refresh(source, directory)
    print(report.summary())
    if source.gp3:  # the whole bill: EBS gp3 storage from the same files
        written = replace_rows(directory / FILE_NAME, aws_public.data_price_rows(source.gp3))
        print(f"{FILE_NAME}: {written} EBS gp3 rows")
    print("read: " + ", ".join(f"{k} {v}" for k, v in sorted(source.counts.items())))
    public.append_refresh_log(directory / "SOURCES.md", [
        f"| {today.isoformat()} | `{aws_public.SOURCE_KEY}` | {url} | streamed | {report.rows_written} aws rows |"
        for url in source.urls])
    return 0


def _names(flag: str | None, default: Iterable[str]) -> list[str]:
    """A comma-separated flag's names (`--regions us-east-1,us-west-2`), else the default ones."""
    return [name.strip() for name in flag.split(",") if name.strip()] if flag else list(default)


def _require_directory(path: Path, what: str, example: str) -> None:
    if not path.exists():
        raise CatalogError(f"{what} {path} not found", example=example)
    if not path.is_dir():
        raise CatalogError(f"{what} {path} is a file, not a folder", example=example)


def _require_file(path: Path, what: str, example: str) -> None:
    if not path.is_file():
        raise CatalogError(f"{what} not found in {path.parent}" if not path.exists() else
                           f"{path} is not a regular file", example=example)


def _check_imported(text: str) -> None:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        raise ParseError(f"--imported '{text}' is not a date", example="--imported 2026-12-02") from None
