"""Free text → `Query`: the quote grammar shared by the CLI, Slack and Jupyter.

Accepted, case-insensitive, in any order:

- GPUs and count: `8xA100`, `8x A100`, `8 x a100-80gb`, `A100:8`, `h100*8`, `2×H100`,
  `8 A100s`, `8卡A100`, `8张A100`; a bare `A100` means one GPU.
- memory selector: `A100-80GB`, or `A100 80GB`.
- duration: number + unit, `90m`, `72h`, `3d`, `1w`, `2mo`, `1y`, `72 hours`, `72小时`, `3天`, `1周`, `1个月`;
  a month is 730 hours (8760 / 12), as the clouds' monthly estimates use, a year 8760; 1 minute to 5 years (a
  duration in seconds is read, to say so). No duration means 1 hour.
- pricing models: `on-demand`, `spot`, `reserved` (both terms), `reserved-1y`, `reserved-3y`, `monthly`
  (also 按需, 竞价, 预留, 包月).
- filters: a provider name (`aws`, `gcp`, `azure`, `lambda`, `nebius`, `oci`, `vast`, … `regions.PROVIDERS`),
  `region=us-east-1,us-west-2` (or a group: `region=us`, `eu`, `asia`, `cn`; a region alone too: `us-east-1`, `eu`),
  `provider=aws,gcp`, `pricing=spot,on-demand`, `currency=CNY`.

Anything else raises `ParseError` naming the token, with a suggestion and an example.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Sequence

from ..catalog.gpus import GpuSpec, GpuTable, name_key
from ..catalog.providers import PROVIDERS
from ..catalog.regions import GROUPS
from ..errors import ParseError
from ..facts import PricingModel
from .query import CURRENCIES, HOUR_S, MAX_GPUS, MIN_DURATION_S, MONTH_S, PRICING_MODELS, YEAR_S, Query, is_duration_s

EXAMPLE = "8xA100 72h"

PROVIDER_WORDS = {
    "aws": "aws", "amazon": "aws", "ec2": "aws",
    "gcp": "gcp", "google": "gcp", "gce": "gcp",
    "azure": "azure", "microsoft": "azure",
    "lambda": "lambda", "lambdalabs": "lambda",
    "aliyun": "aliyun", "alibaba": "aliyun", "alicloud": "aliyun", "阿里云": "aliyun",
    "tencent": "tencent", "qcloud": "tencent", "腾讯云": "tencent",
    "huawei": "huawei", "huaweicloud": "huawei", "华为云": "huawei",
    "oracle": "oci", "datacrunch": "verda", "vastai": "vast", "vast.ai": "vast", "cudocompute": "cudo",
    "jarvis": "jarvislabs", "prime": "primeintellect", "prime-intellect": "primeintellect",
    **{name: name for name in PROVIDERS},  # every provider by its own name
}
_M = PricingModel
_PRICING_WORDS = {
    "on-demand": (_M.ON_DEMAND,), "ondemand": (_M.ON_DEMAND,), "od": (_M.ON_DEMAND,), "按需": (_M.ON_DEMAND,),
    "按量": (_M.ON_DEMAND,), "spot": (_M.SPOT,), "preemptible": (_M.SPOT,), "竞价": (_M.SPOT,),
    "reserved": (_M.RESERVED_1Y, _M.RESERVED_3Y), "预留": (_M.RESERVED_1Y, _M.RESERVED_3Y),
    "reserved-1y": (_M.RESERVED_1Y,), "ri-1y": (_M.RESERVED_1Y,), "reserved-3y": (_M.RESERVED_3Y,),
    "ri-3y": (_M.RESERVED_3Y,), "monthly": (_M.MONTHLY,), "subscription": (_M.MONTHLY,), "包月": (_M.MONTHLY,),
    "包年包月": (_M.MONTHLY,),
}
_FILLER = {"for", "of", "gpu", "gpus", "with", "using", "on", "x", "个", "的", "用"}
_UNITS_S = {
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": HOUR_S, "hr": HOUR_S, "hrs": HOUR_S, "hour": HOUR_S, "hours": HOUR_S,
    "d": 24 * HOUR_S, "day": 24 * HOUR_S, "days": 24 * HOUR_S,
    "w": 168 * HOUR_S, "wk": 168 * HOUR_S, "wks": 168 * HOUR_S, "week": 168 * HOUR_S, "weeks": 168 * HOUR_S,
    "mo": MONTH_S, "mon": MONTH_S, "month": MONTH_S, "months": MONTH_S,
    "y": YEAR_S, "yr": YEAR_S, "yrs": YEAR_S, "year": YEAR_S, "years": YEAR_S,
    # Read only to say that the shortest duration is a minute (`30s`), not "didn't understand".
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
}
# Chinese units become the ASCII ones before tokenising; longest first so 分钟 wins over 分.
_CHINESE = [("个小时", "h "), ("小时", "h "), ("分钟", "m "), ("个月", "mo "), ("星期", "w "), ("周", "w "),
            ("天", "d "), ("月", "mo "), ("卡", " x "), ("张", " x "), ("块", " x "), ("台", " x ")]
_NUMBER = r"\d+(?:\.\d+)?"
_DURATION_RE = re.compile(rf"^({_NUMBER})({'|'.join(sorted(_UNITS_S, key=len, reverse=True))})$")
_MEMORY_RE = re.compile(r"^(\d+)(?:gb|g|gib)$")
_SIZED_NAME_RE = re.compile(r"\d{2,3}(?:gb|g|gib)$")  # on a name_key: `v10032gb`, `a10040g`; not `a10g`
_COUNT_FIRST_RE = re.compile(r"^(\d+)x(.+)$")
_COUNT_LAST_RE = re.compile(r"^(.+?)[x:](\d+)$")
_INT_RE = re.compile(r"^\d+$")
# A count with a fraction: `1.5xA100`, `A100:1.5`, `h100x2.5`.
_FRACTIONAL_COUNT_RE = re.compile(r"^\d+\.\d+x.|^.+[x:]\d+\.\d+$")
_NEGATIVE_RE = re.compile(r"^-\d")
# A region's name written without `region=`: dashed, and with a digit or a continent's prefix (`us-east-1`,
# `europe-west4`, `cn-hangzhou`), so a misspelt option (`include-flaged`) is not taken for one.
_BARE_REGION_RE = re.compile(r"^[a-z]{2,}(?:-[a-z0-9]+)+$")
_REGION_PREFIXES = ("us-", "eu-", "ap-", "cn-", "me-", "sa-", "af-", "ca-", "asia-", "europe-", "australia-",
                    "northamerica-", "southamerica-", "africa-", "il-", "mx-")
_REQUEST_KEYS = ("region", "provider", "pricing", "currency")
NO_DURATION = "no duration given: quoting 1 hour"


def names_a_size(text: str) -> bool:
    """Whether a GPU's name as written says its memory (`V100-32GB`, `a100-40g`), not only the chip (`V100`)."""
    return bool(_SIZED_NAME_RE.search(name_key(text)))


def accepted_gpus(gpus: GpuTable, text: str, *, memory_gib: float | None = None,
                  sized: bool = False) -> tuple[str, tuple[str, ...]]:
    """The GPU `text` names (with `memory_gib`, that size of it) and the other memory sizes a request for it
    accepts where its own size is not offered: all of them when neither the name nor a memory selector says a size
    (`V100`: 32 GB too), none otherwise (`V100-32GB`, `V100 16GB`). Every face reads a GPU's name through here."""
    spec = gpus.resolve(text, memory_gib=memory_gib)
    if sized or memory_gib is not None or names_a_size(text):
        return spec.name, ()
    return spec.name, memory_variants(gpus, spec)


def memory_variants(gpus: GpuTable, spec: GpuSpec) -> tuple[str, ...]:
    """The other memory sizes of `spec`'s GPU (`V100` → `V100-32GB`; `A100-80GB` → `A100`): the same chip with more
    or less memory, what a user naming the GPU without a size accepts. Not other editions (`H100-NVL`)."""
    base = spec.name.split("-")[0]
    sizes = re.compile(rf"{re.escape(base)}(?:-\d+GB)?")
    return tuple(s.name for s in gpus.family(spec) if s.name != spec.name and sizes.fullmatch(s.name)
                 and sizes.fullmatch(spec.name))


def normalise(text: str) -> str:
    """NFKC (full-width → ASCII), Chinese units to ASCII, multiplication signs to 'x'. Case is kept
    so that messages quote the user's own words; matching is case-insensitive."""
    text = unicodedata.normalize("NFKC", text)
    for chinese, ascii_ in _CHINESE:
        text = text.replace(chinese, ascii_)
    return text.replace("×", "x").replace("✕", "x").replace("*", "x")


def tokens_of(text: str) -> list[str]:
    """Whitespace-separated words; a comma between words separates too, one inside `key=a,b` does not."""
    words = []
    for word in normalise(text).split():
        words.extend([word] if "=" in word else [part for part in word.split(",") if part])
    return words


def parse_duration(text: str, *, example: str = EXAMPLE, token: str | None = None) -> int:
    """`72h`, `3d`, `90m`, `2mo`, `72 hours`, `72小时` → seconds (1 minute to 5 years), else ParseError."""
    match = _DURATION_RE.match("".join(normalise(text).lower().split()))
    if not match:
        raise ParseError(f"'{token or text}' is not a duration", hint="use a number and m, h, d, w, mo or y",
                         example=example)
    seconds = float(match.group(1)) * _UNITS_S[match.group(2)]
    if 0 < seconds < MIN_DURATION_S:
        raise ParseError(f"duration '{token or text}' is too short: the shortest is 1 minute", example=example)
    if not is_duration_s(int(math.ceil(seconds))):
        raise ParseError(f"duration '{token or text}' is out of range", hint="use 1 minute to 5 years",
                         example=example)
    return int(math.ceil(seconds))


def parse_currency(value: str, *, example: str = EXAMPLE) -> str:
    """`usd`, `CNY` → the currency code, else ParseError listing the known ones."""
    code = value.strip().upper()
    if code not in CURRENCIES:
        raise ParseError(f"unknown currency '{value}'", hint="known: " + ", ".join(CURRENCIES), example=example)
    return code


def parse_providers(value: str, *, token: str | None = None, example: str = "8xA100 72h provider=aws") \
        -> tuple[str, ...]:
    """`aws,gcp`, `amazon` → canonical provider names (`PROVIDERS`), else ParseError naming the unknown one."""
    names = []
    for word in _listed(value, token or f"provider={value}"):
        if word.lower() not in PROVIDER_WORDS:
            raise ParseError(f"unknown provider '{word}'", hint="known: " + ", ".join(PROVIDERS), example=example)
        names.append(PROVIDER_WORDS[word.lower()])
    return tuple(names)


def parse_pricing_models(value: str, *, token: str | None = None) -> tuple[PricingModel, ...]:
    """`spot,on-demand`, `reserved` (both terms), `包月` → pricing models (`PRICING_MODELS`), else ParseError."""
    models: list[PricingModel] = []
    for word in _listed(value, token or f"pricing={value}"):
        if word.lower() not in _PRICING_WORDS:
            raise ParseError(f"unknown pricing model '{word}'", hint="known: " + ", ".join(PRICING_MODELS),
                             example="8xA100 72h pricing=spot,on-demand")
        models.extend(_PRICING_WORDS[word.lower()])
    return tuple(models)


def parse_regions(value: str, *, token: str | None = None) -> tuple[str, ...]:
    """`us-east-1,us-west-2`, `eu` → region selectors, lower-cased (the catalog checks them: `regions`)."""
    return tuple(word.lower() for word in _listed(value, token or f"region={value}"))


def _listed(value: str, token: str) -> list[str]:
    """The comma-separated values of an option; an option with none is an error."""
    values = [part.strip() for part in normalise(value).split(",") if part.strip()]
    if not values:
        raise ParseError(f"'{token}' has no value", example="8xA100 72h region=us-east-1")
    return values


class _Builder:
    """Collects the parts of a request while tokens are read."""

    def __init__(self, gpus: GpuTable, also_known: tuple[str, ...] = ()):
        self.gpus = gpus
        self.also_known = also_known
        self.gpu: str | None = None
        self.count: int | None = None
        self.memory_gib: float | None = None
        self.sized = False  # the GPU's name itself says its memory (`V100-32GB`, `a100-40g`)
        self.duration_s: int | None = None
        self.pricing: list[PricingModel] = []
        self.regions: list[str] = []
        self.providers: list[str] = []
        self.currency: str | None = None

    def read(self, tokens: list[str], at: int) -> int:
        """Read the token at `at` (and the next one for `72 hours`); returns how many were read."""
        original = tokens[at]
        token = original.lower()
        following = tokens[at + 1].lower() if at + 1 < len(tokens) else None
        if "=" in token:
            key, _, value = original.partition("=")
            self.set_option(key.lower(), value, original)
        elif self.read_word(token):
            pass
        elif _NEGATIVE_RE.match(token):
            what = "durations" if _DURATION_RE.match(token[1:]) else "GPU counts"
            raise ParseError(f"'{original}': {what} are positive", example=EXAMPLE)
        elif self.read_measure(token):
            pass
        elif _INT_RE.match(token) and following is not None and following in _UNITS_S:  # "72 hours"
            self.set_duration(token, following, f"{token} {following}")
            return 2
        elif _INT_RE.match(token) and self.count is not None and self.gpu is not None:  # "8xA100 72"
            raise ParseError(f"'{original}': a duration needs a unit: {token}h, 3d, 1w",
                             hint="a GPU count was given already", example=f"{EXAMPLE[:-3]} {token}h")
        elif _INT_RE.match(token):  # "8 A100s", "8 x A100"
            self.set_count(int(token), token)
        elif _FRACTIONAL_COUNT_RE.match(token):
            raise ParseError(f"'{original}': a GPU count is a whole number", example=EXAMPLE)
        elif not self.read_counted_gpu(token, original) and not self.read_bare_region(token):
            raise self.not_understood(token, original)
        return 1

    def read_word(self, token: str) -> bool:
        """A pricing model, a provider, a currency or a filler word."""
        if token in _PRICING_WORDS:
            self.pricing.extend(_PRICING_WORDS[token])
        elif token in PROVIDER_WORDS:
            self.providers.append(PROVIDER_WORDS[token])
        elif token.upper() in CURRENCIES:
            self.currency = token.upper()
        return token in _PRICING_WORDS or token in PROVIDER_WORDS or token.upper() in CURRENCIES or token in _FILLER

    def read_measure(self, token: str) -> bool:
        """A duration (`72h`), a memory size (`80gb`) or a GPU's name."""
        match = _DURATION_RE.match(token)
        if match:
            self.set_duration(match.group(1), match.group(2), token)
            return True
        match = _MEMORY_RE.match(token)
        if match:
            self.memory_gib = float(match.group(1))
            return True
        name = self.gpu_name(token)
        if name:
            self.set_gpu(name, token)
        return name is not None

    def read_counted_gpu(self, token: str, original: str) -> bool:
        """`8xa100`, `8x` (the GPU follows), `a100:8`, `h100x8`."""
        match = _COUNT_FIRST_RE.match(token)
        if match:
            self.set_count(int(match.group(1)), token)
            name = self.gpu_name(match.group(2))
            if name is None:
                bad = original[len(match.group(1)) + 1:]
                raise ParseError(f"unknown GPU '{bad}'", hint=self.gpus.suggest(bad), example=EXAMPLE)
            self.set_gpu(name, match.group(2))
            return True
        if token.endswith("x") and _INT_RE.match(token[:-1]):
            self.set_count(int(token[:-1]), token)
            return True
        match = _COUNT_LAST_RE.match(token)
        named = self.gpu_name(match.group(1)) if match else None
        if match and named:
            self.set_gpu(named, match.group(1))
            self.set_count(int(match.group(2)), token)
            return True
        return False

    def read_bare_region(self, token: str) -> bool:
        """A region or a residency group without `region=` (`us-east-1`, `eu`): whether the catalog has it is the
        quote's check, which suggests the nearest names of every cloud for one it does not have."""
        shaped = bool(_BARE_REGION_RE.match(token)) and (any(c.isdigit() for c in token)
                                                         or token.startswith(_REGION_PREFIXES))
        if token in GROUPS or (shaped and not self.looks_like_gpu(token)):
            self.regions.extend(parse_regions(token))
            return True
        return False

    def looks_like_gpu(self, token: str) -> bool:
        """A name then a digit (`a10g`, `h100-sxm`), or a word close to a GPU's name while none is named yet."""
        return (bool(re.match(r"^[a-z]+[-]?\d", token)) and not _DURATION_RE.match(token)) or \
            (self.gpu is None and self.gpus.suggest(token).startswith("did you"))

    def not_understood(self, token: str, original: str) -> ParseError:
        """An unknown GPU when the token looks like one (a name then a digit) or is close to one; else a word."""
        if self.looks_like_gpu(token):
            return ParseError(f"unknown GPU '{original}'", hint=self.gpus.suggest(token), example=EXAMPLE)
        return ParseError(f"didn't understand '{original}'",
                          hint="a request is GPUs, a duration and optional filters: a provider, spot, region=…",
                          example=EXAMPLE)

    def set_gpu(self, name: str, token: str) -> None:
        if self.gpu is not None and self.gpu != name:
            raise ParseError(f"two GPUs named ('{self.gpu}' and '{token}')", hint="quote one GPU type at a time",
                             example=EXAMPLE)
        self.gpu = name
        self.sized = self.sized or names_a_size(token)

    def set_count(self, count: int, token: str) -> None:
        if self.count is not None and self.count != count:
            raise ParseError(f"two GPU counts given ({self.count} and '{token}')", example=EXAMPLE)
        if not 1 <= count <= MAX_GPUS:
            raise ParseError(f"GPU count must be between 1 and {MAX_GPUS}, got {count}", example=EXAMPLE)
        self.count = count

    def set_duration(self, amount: str, unit: str, token: str) -> None:
        if self.duration_s is not None:
            raise ParseError(f"two durations given (second: '{token}')", example=EXAMPLE)
        self.duration_s = parse_duration(amount + unit, example=EXAMPLE, token=token)

    def gpu_name(self, token: str) -> str | None:
        """Canonical name when `token` names a GPU (plural 's' allowed)."""
        spec = self.gpus.find(token)
        if spec is None and token.endswith("s"):
            spec = self.gpus.find(token[:-1])
        return spec.name if spec else None

    def set_option(self, key: str, value: str, token: str) -> None:
        if key not in _REQUEST_KEYS:
            known = [*(f"{k}=" for k in _REQUEST_KEYS), *self.also_known]
            raise ParseError(f"unknown option '{key}'", hint="known: " + ", ".join(known),
                             example="8xA100 72h region=us-east-1")
        _listed(value, token)
        if key == "region":
            self.regions.extend(parse_regions(value, token=token))
        elif key == "provider":
            self.providers.extend(parse_providers(value, token=token))
        elif key == "pricing":
            self.pricing.extend(parse_pricing_models(value, token=token))
        else:
            self.currency = parse_currency(value, example="8xA100 72h currency=CNY")

    def request(self) -> Query:
        """The request read, or ParseError when no GPU was named; no duration means one hour, said so."""
        if self.gpu is None:
            raise ParseError("no GPU named", hint="say which GPU and how many", example=EXAMPLE)
        gpu, variants = accepted_gpus(self.gpus, self.gpu, memory_gib=self.memory_gib, sized=self.sized)
        return Query(
            gpu=gpu,
            variants=variants,
            count=self.count or 1,
            duration_s=self.duration_s or HOUR_S,
            pricing_models=tuple(dict.fromkeys(self.pricing)),
            regions=tuple(dict.fromkeys(self.regions)),
            providers=tuple(dict.fromkeys(self.providers)),
            currency=self.currency,
            assumptions=() if self.duration_s is not None else (NO_DURATION,),
            duration_given=self.duration_s is not None,
        )


def parse_request(text: str, gpus: GpuTable, *, also_known: tuple[str, ...] = ()) -> Query:
    """Read a quote request from text (`8xA100 72h`, without a command's own words); raises ParseError (and only
    ParseError) on anything it cannot read. `also_known`: the words a command reads besides the request's (`top=`,
    `list`), for an unknown option's error to list."""
    if not isinstance(text, str):
        raise ParseError("a request must be text", example=EXAMPLE)
    return parse_request_words([text], gpus, also_known=also_known)


def parse_request_words(words: Sequence[str], gpus: GpuTable, *, also_known: tuple[str, ...] = ()) -> Query:
    """A request from the words a face has already split (the grammar's, the CLI's arguments), each read once."""
    tokens = [token for word in words for token in tokens_of(word)]
    if not tokens:
        raise ParseError("empty request", hint="name a GPU, a count and a duration", example=EXAMPLE)
    build = _Builder(gpus, also_known)
    at = 0
    while at < len(tokens):
        at += build.read(tokens, at)
    return build.request()
