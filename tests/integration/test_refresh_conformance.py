"""Every price source with a refresher (`catalog/providers.py` declares each provider's `catalog refresh` verb) keeps
the same promises, each run against that source's local fake in its API's documented format (`refresh_fakes.py`,
moto for EC2, the recorded Azure retail pages, Google's SKU pages):
- a refresh writes typed rows, each with its source and the day it was observed;
- a refresh that fails keeps the last good catalog, byte for byte, and leaves no temporary file;
- throttling is retried, and the refresh then completes;
- without credentials, `catalog refresh` exits 2 with one line naming what to set (a public list needs none).
A refresher the registry declares without a harness here fails the suite."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from refresh_fakes import SKUS_PATH, CvmServer, EcsServer, HuaweiServer, PricingServer, aliyun_environment, gcp_skus
from support import CATALOGS, FIXTURES, SOURCES, TODAY, running, serving

from gpu_assist.catalog import validate_directory
from gpu_assist.catalog.gpus import load_gpus
from gpu_assist.catalog.providers import BY_NAME, REGISTRY
from gpu_assist.cli import main
from gpu_assist.sources.offer_row import OfferRow, read_rows
from gpu_assist.sources.refresh import PriceSource, refresh

Sleep = Callable[[float], None]


class Harness:
    """One refresher against its fake: `fake()` serves it with keys set; `source(fake, catalog, sleep)` is the price
    source pointed at it; `throttle(fake, n)` makes its next `n` answers throttled; `fail(fake)` makes the refresh
    fail; `without_keys(monkeypatch, home)` clears every way to its keys (None: a public list needs none), and
    `keys` is what its one line must name."""

    verb: str
    file: str
    files: tuple[str, ...] = ("gpus.csv", "fx.csv", "SOURCES.md")
    sdk: str | None = None  # the module a refresh needs installed
    keys = ""
    backoff: list[float] | None = [0.5, 1.0]  # the pauses two throttled answers cost (None: the library's own)

    def fake(self, monkeypatch: pytest.MonkeyPatch) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def source(self, fake: Any, catalog: Path, sleep: Sleep) -> PriceSource:
        raise NotImplementedError

    def throttle(self, fake: Any, times: int) -> None:
        fake.throttle = times

    def fail(self, fake: Any) -> None:
        fake.throttle = 100

    def throttled(self, fake: Any) -> bool:
        """Whether every throttled answer asked for was given."""
        return bool(fake.throttle == 0)

    def without_keys(self, monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
        raise NotImplementedError


class Tencent(Harness):
    verb, file, sdk, keys = "tencent", "tencent.csv", "tencentcloud.cvm.v20170312", \
        "TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY"

    @contextlib.contextmanager
    def fake(self, monkeypatch):
        monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", "AKIDtest")
        monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "testkey")
        with running(CvmServer()) as server:
            yield server

    def source(self, fake, catalog, sleep):
        from gpu_assist.clouds.sdk.tencent import cvm_client
        from gpu_assist.sources.tencent import TencentPriceSource

        endpoint = f"127.0.0.1:{fake.server_port}"
        return TencentPriceSource(["ap-guangzhou"], {"GT4": ("A100", "40"), "GN7": ("T4", "16")}, today=TODAY,
                                  client=lambda region: cvm_client(region, endpoint), sleep=sleep)

    def without_keys(self, monkeypatch, home):
        for name in ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY"):
            monkeypatch.delenv(name, raising=False)


class Aliyun(Harness):
    verb, file, sdk, keys = "aliyun", "aliyun.csv", "alibabacloud_ecs20140526", \
        "ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET"

    @contextlib.contextmanager
    def fake(self, monkeypatch):
        aliyun_environment(monkeypatch, access_key_id="LTAItest", access_key_secret="testsecret")
        with running(EcsServer()) as server:
            yield server

    def source(self, fake, catalog, sleep):
        from gpu_assist.clouds.sdk.aliyun import ecs_client
        from gpu_assist.sources.aliyun import AliyunPriceSource

        endpoint = f"127.0.0.1:{fake.server_port}"
        return AliyunPriceSource(["cn-hangzhou"], load_gpus(catalog / "gpus.csv"), today=TODAY,
                                 client=lambda region: ecs_client(region, endpoint), sleep=sleep)

    def without_keys(self, monkeypatch, home):
        aliyun_environment(monkeypatch, access_key_id=None, access_key_secret=None, security_token=None,
                           credentials_uri=None, credentials_file=None, ecs_metadata=None,
                           ecs_metadata_disabled="true")
        monkeypatch.setattr("alibabacloud_credentials.utils.auth_util.enable_oidc_credential", False)


class Huawei(Harness):
    verb, file, sdk, keys = "huawei", "huawei.csv", "huaweicloudsdkbss.v2", "HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK"

    @contextlib.contextmanager
    def fake(self, monkeypatch):
        # the SDK caches a project per access key and region for the process: a key of this test's own
        monkeypatch.setenv("HUAWEICLOUD_SDK_AK", f"HPUA{id(self):08X}"[:12])
        monkeypatch.setenv("HUAWEICLOUD_SDK_SK", "testsecret")
        for name in ("HUAWEICLOUD_SDK_PROJECT_ID", "HUAWEICLOUD_SDK_DOMAIN_ID"):
            monkeypatch.delenv(name, raising=False)
        with running(HuaweiServer()) as server:
            monkeypatch.setenv("HUAWEICLOUD_SDK_IAM_ENDPOINT", server.endpoint)
            yield server

    def source(self, fake, catalog, sleep):
        from gpu_assist.clouds.sdk.huawei import bss_client, ecs_client
        from gpu_assist.sources.china import SPECS_FILE, read_specs
        from gpu_assist.sources.huawei import HuaweiPriceSource

        return HuaweiPriceSource(["cn-north-4"], read_specs(SOURCES / SPECS_FILE)["huawei"],
                                 load_gpus(catalog / "gpus.csv"), today=TODAY,
                                 ecs=lambda region: ecs_client(region, fake.endpoint),
                                 bss=lambda: bss_client(fake.endpoint), sleep=sleep)

    def without_keys(self, monkeypatch, home):
        for name in ("HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK", "HUAWEICLOUD_SDK_CREDENTIALS_FILE"):
            monkeypatch.delenv(name, raising=False)


class Aws(Harness):
    """EC2 from moto; the Price List Query API from `PricingServer` (moto has none); botocore's standard retry mode
    is what retries a throttled call, with its own pauses."""

    verb, file, keys, backoff = "aws", "aws.csv", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", None

    def __init__(self, request: pytest.FixtureRequest):
        self.request = request

    @contextlib.contextmanager
    def fake(self, monkeypatch):
        self.request.getfixturevalue("aws")  # moto, and keys for it
        with running(PricingServer()) as server:
            monkeypatch.setenv("AWS_ENDPOINT_URL_PRICING", server.endpoint)
            yield server

    def source(self, fake, catalog, sleep):
        from gpu_assist.sources.aws_account import AwsPriceSource

        return AwsPriceSource(["us-east-1"], load_gpus(catalog / "gpus.csv"), families=("p4d",), today=TODAY,
                              progress=lambda _message: None)

    def fail(self, fake):
        fake.denied = True

    def without_keys(self, monkeypatch, home):
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                     "AWS_ENDPOINT_URL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "none"))
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "none"))


def _azure_pages(path: str, query: str, base: str) -> bytes | None:
    if path != "/api/retail/prices":
        return None
    name = "retail_prices_page2.json" if "skip=3" in query else "retail_prices_page1.json"
    return (FIXTURES / "azure" / name).read_text().replace("{base}", base).encode()


class Azure(Harness):
    """The public Retail Prices API (no account), from its recorded pages; the HTTP library retries a 429."""

    verb, file, backoff = "azure", "azure.csv", None

    @contextlib.contextmanager
    def fake(self, monkeypatch):
        with serving(_azure_pages) as server:
            yield server

    def source(self, fake, catalog, sleep):
        from gpu_assist.sources import public

        return public.AzureRetailSource(catalog, TODAY, http=public.session(retries=2, backoff_s=0),
                                        url=f"{fake.base}/api/retail/prices")

    def throttle(self, fake, times):
        fake.faults["/api/retail/prices"] = [429] * times

    def fail(self, fake):
        fake.broken.add("skip=3")

    def throttled(self, fake):
        return not fake.faults["/api/retail/prices"]

    without_keys = None  # type: ignore[assignment]


class Gcp(Harness):
    """Google's Cloud Billing Catalog through its own client over REST, an API key set; google-api-core's retry
    rides out a throttled page, with its own pauses."""

    verb, file, sdk, keys, backoff = "gcp", "gcp.csv", "google.cloud.billing_v1", "GPU_ASSIST_GCP_API_KEY", None

    @contextlib.contextmanager
    def fake(self, monkeypatch):
        with serving(gcp_skus) as server:
            yield server

    def source(self, fake, catalog, sleep):
        from gpu_assist.sources import gcp_billing

        return gcp_billing.GcpBillingSource(catalog, TODAY,
                                            gcp_billing.catalog_client(api_key="test-key", endpoint=fake.base))

    def throttle(self, fake, times):
        fake.faults[SKUS_PATH] = [429] * times

    def fail(self, fake):
        fake.broken.add("pageToken=page-2")

    def throttled(self, fake):
        return not fake.faults[SKUS_PATH]

    def without_keys(self, monkeypatch, home):
        from gpu_assist.sources import gcp_billing

        monkeypatch.delenv(gcp_billing.API_KEY_VARIABLE, raising=False)
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(home / "absent.json"))
        monkeypatch.setenv("CLOUDSDK_CONFIG", str(home / "gcloud"))


HARNESSES = {"tencent": Tencent, "aliyun": Aliyun, "huawei": Huawei, "aws": Aws, "azure": Azure, "gcp": Gcp}
VERBS = [p.refresh for p in REGISTRY if p.refresh]


def test_every_refresher_the_registry_declares_has_a_harness():
    assert sorted(VERBS) == sorted(HARNESSES)


@pytest.fixture(params=VERBS)
def harness(request) -> Harness:
    made = HARNESSES[request.param]
    chosen = made(request) if made is Aws else made()
    if chosen.sdk:
        pytest.importorskip(chosen.sdk)
    return chosen


@pytest.fixture
def catalog(harness, tmp_path) -> Path:
    directory = tmp_path / "catalogs"
    (directory / "sources").mkdir(parents=True)
    for name in (*harness.files, harness.file):
        shutil.copy(CATALOGS / name, directory / name)
    shutil.copy(SOURCES / "cn_gpu_specs.csv", directory / "sources" / "cn_gpu_specs.csv")
    return directory


@pytest.fixture
def fake(harness, monkeypatch) -> Iterator[Any]:
    with harness.fake(monkeypatch) as server:
        yield server


def _fresh(harness: Harness, catalog: Path) -> list[OfferRow]:
    """The rows of the harness's file that its source wrote (its source key)."""
    keys = set(BY_NAME[harness.verb].price_sources)
    return [row for row in read_rows(catalog / harness.file) if row.source in keys and row.as_of == TODAY]


def test_a_refresh_writes_typed_rows_with_their_source_and_date(harness, fake, catalog):
    before = {row for row in read_rows(catalog / harness.file)}
    report = refresh(harness.source(fake, catalog, lambda _s: None), catalog)
    written = [row for row in read_rows(catalog / harness.file) if row not in before]
    assert written and report.rows_written >= len(written)
    assert all(isinstance(row, OfferRow) and row.provider == harness.verb for row in written)
    assert {row.source for row in written} <= set(BY_NAME[harness.verb].price_sources)  # a source the registry declares
    assert {row.as_of for row in written} == {TODAY}
    assert validate_directory(catalog) == []


def test_a_failed_refresh_keeps_the_last_good_catalog(harness, fake, catalog):
    before = (catalog / harness.file).read_bytes()
    harness.fail(fake)
    with pytest.raises(Exception) as failed:  # noqa: B017, PT011 - each source's own error; the outcome is the file
        refresh(harness.source(fake, catalog, lambda _s: None), catalog)
    assert "\n" not in str(failed.value).strip()
    assert (catalog / harness.file).read_bytes() == before
    assert [p.name for p in catalog.iterdir() if p.name.startswith(".")] == []


def test_throttling_is_retried_and_the_refresh_completes(harness, fake, catalog):
    waits: list[float] = []
    harness.throttle(fake, 2)
    refresh(harness.source(fake, catalog, waits.append), catalog)
    assert harness.throttled(fake) and _fresh(harness, catalog)
    if harness.backoff is not None:  # ours: 0.5 s, then twice as long
        assert waits == harness.backoff


@pytest.mark.clock
def test_without_credentials_the_refresh_says_what_to_set_in_one_line(harness, catalog, tmp_path, monkeypatch,
                                                                      capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GPU_ASSIST_CLOUD_HOST", "none")  # whatever machine runs the suite: no metadata service call
    if harness.without_keys is None:  # a public list: no account, no keys
        with harness.fake(monkeypatch) as server:
            assert refresh(harness.source(server, catalog, lambda _s: None), catalog).rows_written
        return
    harness.without_keys(monkeypatch, tmp_path)
    assert main(["catalog", "refresh", harness.verb, "--catalog-dir", str(catalog)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and harness.keys in err[0], err
