"""One adapter module per cloud SDK (`aws`, `tencent`, `aliyun`, `huawei`), serving both the price sources
(`sources/`) and the provisioners (`clouds/launch/`): the client, the credential chain (the instance-role link only
where `host.cloud_host.metadata_allowed` says so), which errors are retried, and how a refusal reads. What they share
is here: `NoCredentials`, and the one backoff loop every SDK call that is retried goes through (botocore retries AWS's
calls itself, in its standard mode).

The China clouds' modules import their SDKs (the optional `china` extra) at the top, so the provisioners, built in
every process, load them on their first call (`_adapter()`); `aws` imports boto3 inside its functions, as every
verb's path imports it. A quote loads no SDK."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

from ...errors import GpuAssistError

RETRIES = 4
T = TypeVar("T")


class NoCredentials(GpuAssistError):
    """An SDK's credential chain found nothing: the CLI exits 2 with this one line, naming what to set."""


def with_backoff(call: Callable[[], T], retryable: Callable[[Exception], bool],
                 sleep: Callable[[float], None] = time.sleep, retries: int = RETRIES) -> T:
    """`call()`, retried after 0.5 s, 1 s, 2 s … while its error is `retryable` (throttling, a network error);
    the last error, or any other, is raised as it came. Every call it wraps is safe to repeat (a read, a launch by
    its idempotency token and the lookup by tag before it)."""
    for attempt in range(retries):
        try:
            return call()
        except Exception as error:
            if not retryable(error) or attempt == retries - 1:
                raise
            sleep(0.5 * 2 ** attempt)
    raise AssertionError("unreachable: the last attempt returns or raises")
