"""A job's data, in the grammar's words: `disk=2TB`, `data-in=2TB`, `data-out=140GB`, `checkpoints=140GB every
30m`, `from=aws:us-east-1`. Pure: words → `JobData`, parsed once at the edge for every face.

Sizes are decimal (`GB` = 10^9 bytes, `TB` = 10^12, as the price pages print them) or binary (`GiB`, `TiB`);
`JobData` keeps them in GB. None of the words given means no `JobData` at all: a quote is then what it always was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ..errors import ParseError
from .query import is_duration_s
from .query_parser import normalise, parse_duration, parse_providers

EXAMPLE = "quote 8xA100 72h disk=2TB data-in=2TB from=aws:us-east-1 data-out=140GB checkpoints=140GB every 30m"
WORDS = ("disk=", "data-in=", "data-out=", "checkpoints=", "from=")
MAX_GB = Decimal(10) ** 9  # an exabyte: beyond that a size is a typo
_UNITS_GB = {"mb": Decimal("0.001"), "gb": Decimal(1), "tb": Decimal(1000), "pb": Decimal(1000000),
             "mib": Decimal(2**20) / 10**9, "gib": Decimal(2**30) / 10**9, "tib": Decimal(2**40) / 10**9}
_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?)(mb|gb|tb|pb|mib|gib|tib)$")


@dataclass(frozen=True)
class Place:
    """Where data is: a provider's region (`aws:us-east-1`)."""

    provider: str
    region: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.region}"


@dataclass(frozen=True)
class JobData:
    """The job's data besides its GPUs, in GB (10^9 bytes); 0 for what was not said."""

    disk_gb: Decimal = Decimal(0)          # block storage attached for the job's duration (all its hosts)
    data_in_gb: Decimal = Decimal(0)       # pulled in once per job
    data_out_gb: Decimal = Decimal(0)      # sent out to the internet once per job
    checkpoint_gb: Decimal = Decimal(0)    # one checkpoint's size, written to the provider's object storage
    checkpoint_every_s: int | None = None  # how often one is written
    data_from: Place | None = None         # where data-in comes from; None: the internet

    def to_fields(self) -> dict[str, Any]:
        """Plain JSON values (sizes as decimal strings), defaults left out: what a Slack button carries."""
        values: dict[str, Any] = {name: str(value) for name, value in (
            ("disk_gb", self.disk_gb), ("data_in_gb", self.data_in_gb), ("data_out_gb", self.data_out_gb),
            ("checkpoint_gb", self.checkpoint_gb)) if value}
        if self.checkpoint_every_s:
            values["checkpoint_every_s"] = self.checkpoint_every_s
        if self.data_from:
            values["data_from"] = str(self.data_from)
        return values

    @classmethod
    def from_fields(cls, values: object) -> JobData:
        """The job data `to_fields` gave; ValueError for anything it would not have written."""
        sizes = ("disk_gb", "data_in_gb", "data_out_gb", "checkpoint_gb")
        if not isinstance(values, dict) or not set(values) <= {*sizes, "checkpoint_every_s", "data_from"}:
            raise ValueError("not the fields of job data")
        read: dict[str, Any] = {}
        try:
            for name in sizes:
                if name in values:
                    read[name] = _checked_gb(Decimal(str(values[name])))
            if "checkpoint_every_s" in values:
                every = values["checkpoint_every_s"]
                if not is_duration_s(every):
                    raise ValueError("bad checkpoint interval")
                read["checkpoint_every_s"] = every
            if "data_from" in values:
                read["data_from"] = parse_place(str(values["data_from"]))
        except (InvalidOperation, ParseError, TypeError, ValueError) as error:
            raise ValueError("bad job data") from error
        return cls(**read)


def _checked_gb(value: Decimal) -> Decimal:
    if not value.is_finite() or value <= 0 or value > MAX_GB:
        raise ValueError("size out of range")
    return value


def parse_size(value: str, *, name: str = "disk") -> Decimal:
    """`2TB`, `140GB`, `500GiB`, `1.5tb` → GB (10^9 bytes), else ParseError with an example that works."""
    text = "".join(normalise(value).lower().split())
    match = _SIZE_RE.match(text)
    if not match:
        raise ParseError(f"{name}={value[:40]} is not a size", hint="a number and MB, GB, TB, GiB or TiB",
                         example=EXAMPLE)
    gb = Decimal(match.group(1)) * _UNITS_GB[match.group(2)]
    if gb <= 0 or gb > MAX_GB:
        raise ParseError(f"{name}={value[:40]} is out of range", hint="more than 0, at most 1,000 PB", example=EXAMPLE)
    return gb


def parse_place(value: str) -> Place:
    """`aws:us-east-1` → Place; the provider through `request.parse_providers`, so `amazon:us-east-1` works too."""
    provider, colon, region = normalise(value).strip().partition(":")
    if not colon or not provider or not region.strip():
        raise ParseError(f"from={value[:40]} is not a place", hint="a provider and its region, provider:region",
                         example="quote 8xA100 72h data-in=2TB from=aws:us-east-1")
    (name,) = parse_providers(provider, token=f"from={value}",
                              example="quote 8xA100 72h data-in=2TB from=aws:us-east-1")[:1]
    return Place(name, region.strip().lower())


def take_job_data(words: list[str]) -> tuple[list[str], JobData | None]:
    """Split the job-data words (`checkpoints=140GB every 30m` is three) from the others; None when none is given.
    A word given twice, `from=` without `data-in=`, or checkpoints without `every` is a ParseError."""
    rest: list[str] = []
    values: dict[str, Any] = {}
    at = 0
    while at < len(words):
        word = words[at]
        key, has_value, value = word.partition("=")
        key = key.lower().removeprefix("--")
        at += 1
        if not has_value or f"{key}=" not in WORDS:
            rest.append(word)
            continue
        field = {"disk": "disk_gb", "data-in": "data_in_gb", "data-out": "data_out_gb",
                 "checkpoints": "checkpoint_gb", "from": "data_from"}[key]
        if field in values:
            raise ParseError(f"{key}= given twice", example=EXAMPLE)
        if key == "from":
            values[field] = parse_place(value)
            continue
        values[field] = parse_size(value, name=key)
        if key == "checkpoints":
            if at + 1 >= len(words) or words[at].lower() != "every":
                raise ParseError(f"say how often checkpoints are written: {word} every 30m", example=EXAMPLE)
            values["checkpoint_every_s"] = parse_duration(words[at + 1], example=EXAMPLE,
                                                          token=f"every {words[at + 1]}")
            at += 2
    if "data_from" in values and "data_in_gb" not in values:
        raise ParseError("from= says where data-in comes from: give data-in= too",
                         example="quote 8xA100 72h data-in=2TB from=aws:us-east-1")
    return rest, (JobData(**values) if values else None)
