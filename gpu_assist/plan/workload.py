"""Free text → `Workload`: what the recommender is asked to plan for.

    recommend train 7B tokens=20B deadline=72h budget=5000
    recommend finetune 70B lora
    recommend serve 70B fp8 users=50 context=8k
    recommend serve llama-3.1-70b users=500
    recommend train 175B bf16 deadline=2w region=cn
    recommend train 7B gpu_hours=576@A100 own=2xRTX3090 interruptible=no gpus=A100,H100 mfu=0.35

Kinds: `train` (full), `finetune` (`full`, `lora`, `qlora`), `serve`. Sizes: `350M`, `7B`, `1.5T`, or a model's
name from `models.csv` (`llama-3.1-70b`, `Meta-Llama-3.1-70B-Instruct`), which brings its real shape.
Precisions: fp32, bf16, fp16, fp8, int8, int4. Amounts, above 0: `5000`, `5k`, `5000usd`, `¥30000`, `30k元`,
`30000cny`, and `$5000` where no shell reads it first (Slack, the notebook): a shell takes `$5` for a variable
and passes `budget=000`, which is refused with that explanation.
Every assumption the estimates use (MFU, overheads, interruption rate…) can be set with `name=value`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from typing import Any, Callable

from ..catalog.gpus import GpuTable
from ..errors import ParseError
from ..pricing import spot_risk
from ..pricing.amounts import format_count, parse_amount, parse_count
from ..pricing.query_parser import (
    PROVIDER_WORDS,
    normalise,
    parse_currency,
    parse_duration,
    parse_providers,
    parse_regions,
)
from .models import ModelSpec, looks_like_model, model_context, model_named

METHODS = ("full", "lora", "qlora")
PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
TRAINING_PRECISIONS = ("fp32", "bf16", "fp16", "fp8")
EXAMPLE = "recommend train 7B tokens=20B deadline=72h budget=5000"  # no `$`: a shell passes it unchanged
DEFAULT_DEADLINE_S = 30 * 24 * 3600  # a month: what a team plans around when it names no deadline
LORA_TARGETS = ("all", "attention", "qv")
_KIND_WORDS = {"train": "train", "training": "train", "pretrain": "train", "训练": "train",
               "finetune": "finetune", "fine-tune": "finetune", "ft": "finetune", "微调": "finetune",
               "serve": "serve", "serving": "serve", "inference": "serve", "infer": "serve", "推理": "serve"}
_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?)([kmbt])$")


@dataclass(frozen=True)
class Assumptions:
    """Every constant the estimates use; each is printed with the result and can be overridden."""

    mfu: float = 0.4                      # model FLOPs utilisation of peak dense tensor throughput
    multi_host_efficiency: float = 0.9    # scaling over hosts when set, or when their bandwidth is unknown
    global_batch_tokens: float = 4e6      # tokens per optimizer step (Llama 2's 4M): one gradient all-reduce each
    comm_overlap: float = 0.25            # share of the all-reduce hidden behind compute (fitted, SOURCES-plans D4)
    link_efficiency: float = 0.83         # achieved all-reduce bus bandwidth / link rate (SOURCES-plans.txt D2)
    spot_overhead_limit: float = 0.25     # spot plans expected to run longer than this rank behind the rest
    runtime_overhead: float = 0.2         # activations, buffers, fragmentation, as a fraction of model states
    usable_memory: float = 0.9            # fraction of GPU memory a framework can use
    interruption_rate_per_h: float = spot_risk.INTERRUPTION_RATE_PER_H  # where the Spot Advisor gives no band
    checkpoint_interval_h: float = spot_risk.CHECKPOINT_INTERVAL_H
    checkpoint_write_h: float = spot_risk.CHECKPOINT_WRITE_H
    restart_h: float = spot_risk.RESTART_H
    spot_share: float = 0.8               # spot part of a mixed spot + on-demand fleet
    lora_rank: int = 16                   # LoRA rank r (the QLoRA paper used 64; PEFT examples 8-16)
    lora_targets: str = "all"             # adapted matrices: all (q,k,v,o + MLP), attention (q,k,v,o), qv
    batch_tokens: int = 4096              # tokens per micro-batch (activations, with gradient checkpointing)
    vocab: int = 32000                    # vocabulary: embeddings and LM head stay 16-bit under QLoRA
    kv_group: int = 8                     # attention heads per KV head (grouped-query attention)
    context_tokens: int = 4096
    target_tokens_per_s: float = 20.0     # decode speed each serving user should get
    bandwidth_efficiency: float = 0.6     # achieved fraction of peak memory bandwidth when decoding
    max_instances: int = 128


@dataclass(frozen=True)
class Workload:
    kind: str
    params: float
    precision: str = "bf16"
    method: str = "full"
    tokens: float | None = None
    reference_gpu_hours: float | None = None
    reference_gpu: str | None = None
    users: int = 1
    deadline_s: int | None = None
    budget: Decimal | None = None
    currency: str | None = None
    interruptible: bool | None = None
    regions: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    own: tuple[tuple[str, int], ...] = ()
    serve_hours: float = 730.0
    deadline_assumed: bool = False  # no deadline given: the default one (deadline=none lifts it)
    assumptions: Assumptions = Assumptions()
    overridden: tuple[str, ...] = ()  # the assumptions the user set (they win over sourced data)
    model: ModelSpec | None = None  # named by the user: its shape replaces the estimate from `params`

    @property
    def may_interrupt(self) -> bool:
        """Spot is considered for training unless the user says no; for serving only if they say yes."""
        return self.interruptible if self.interruptible is not None else self.kind != "serve"

    def describe(self) -> str:
        size = self.model.name if self.model is not None else format_count(self.params)
        what = {"train": "train", "finetune": f"fine-tune ({self.method})", "serve": "serve"}[self.kind]
        return f"{what} {size} {self.precision}"


_ASSUMPTION_KEYS = {f.name: f.type for f in fields(Assumptions)}
_ASSUMPTION_ALIASES = {"context": "context_tokens", "interruption_rate": "interruption_rate_per_h",
                       "checkpoint": "checkpoint_interval_h", "scaling": "multi_host_efficiency",
                       "overhead": "runtime_overhead", "tokens_per_s": "target_tokens_per_s",
                       "rank": "lora_rank", "lora_r": "lora_rank", "targets": "lora_targets"}


def parse_workload(text: str, gpus: GpuTable) -> Workload:
    """Read a workload from text (`gpu_assist.recommend("train 7B tokens=20B")`); raises ParseError (only) naming
    what it could not read."""
    return parse_workload_words(normalise(text).split() if isinstance(text, str) else [], gpus)


def parse_workload_words(words: list[str], gpus: GpuTable) -> Workload:
    """A workload from the words a face has already split and normalised (the grammar's)."""
    if words and words[0].lower() == "recommend":
        words = words[1:]
    if not words:
        raise ParseError("empty workload", hint="say what to run: train, finetune or serve, and the model size",
                         example=EXAMPLE)
    values: dict[str, Any] = {}
    overrides: dict[str, Any] = {}
    _read_words(words, values, overrides, gpus)
    return _workload(values, overrides, gpus)


def workload_of(kind: str, params: float, gpus: GpuTable, *, precision: str = "bf16", method: str = "full",
                words: list[str] | None = None) -> Workload:
    """A workload from values a form already holds (a notebook panel's kind, size, precision and method), its
    other options (`tokens=20B deadline=72h`) read from `words` as `parse_workload` reads them; ParseError
    (only) naming what it could not read or what does not go together."""
    if kind not in _KIND_WORDS.values():
        raise ParseError(f"unknown kind '{kind}'", hint="train, finetune or serve", example=EXAMPLE)
    if precision not in PRECISIONS:
        raise ParseError(f"unknown precision '{precision}'", hint="known: " + ", ".join(PRECISIONS), example=EXAMPLE)
    if method not in METHODS:
        raise ParseError(f"unknown method '{method}'", hint="known: " + ", ".join(METHODS),
                         example="recommend finetune 70B lora")
    values: dict[str, Any] = {"kind": kind, "params": params, "precision": precision, "method": method}
    overrides: dict[str, Any] = {}
    _read_words(words or [], values, overrides, gpus)
    return _workload(values, overrides, gpus)


def _read_words(words: list[str], values: dict[str, Any], overrides: dict[str, Any], gpus: GpuTable) -> None:
    """Each word into `values` (the workload's fields) or `overrides` (its assumptions)."""
    for original in words:
        word = original.lower()
        if "=" in word:
            key, _, value = original.partition("=")
            _set_option(key.lower(), value, original, values, overrides, gpus)
        elif word in _KIND_WORDS:
            values["kind"] = _KIND_WORDS[word]
        elif word in METHODS:
            values["method"] = word
        elif word in PRECISIONS:
            values["precision"] = word
        elif _SIZE_RE.match(word):
            values["params"] = parse_count(word, "model size", EXAMPLE)
            values.pop("model", None)
        elif word in PROVIDER_WORDS:
            values.setdefault("providers", []).append(PROVIDER_WORDS[word])
        elif looks_like_model(word):
            values["model"] = model_named(original)
            values["params"] = values["model"].params
        else:
            raise ParseError(f"didn't understand '{original}'",
                             hint="a workload is a kind (train, finetune, serve), a size (7B) or a model's name "
                                  "(llama-3.1-70b) and key=value options",
                             example=EXAMPLE)


def _workload(values: dict[str, Any], overrides: dict[str, Any], gpus: GpuTable) -> Workload:
    """The workload the values read say, checked whole: a kind and a size, in range, that go together."""
    if "kind" not in values:
        raise ParseError("say what to do: train, finetune or serve", example=EXAMPLE)
    if "params" not in values:
        raise ParseError("give the model size in parameters, e.g. 7B or 70B", example=EXAMPLE)
    if values["params"] < 1e6 or values["params"] > 1e14:
        raise ParseError(f"model size {format_count(values['params'])} is out of range (1M to 100T)", example=EXAMPLE)
    if values.get("method", "full") != "full" and values["kind"] != "finetune":
        raise ParseError(f"{values['method']} applies to finetune", example="recommend finetune 70B lora")
    if values["kind"] != "serve" and "deadline_s" not in values:
        values.update(deadline_s=DEFAULT_DEADLINE_S, deadline_assumed=True)
    precision = values.get("precision", "bf16")
    if values["kind"] != "serve" and precision not in TRAINING_PRECISIONS and values.get("method") != "qlora":
        raise ParseError(f"training in {precision} is not supported",
                         hint="train in fp32, bf16, fp16 or fp8 (or finetune with qlora)", example=EXAMPLE)
    reference = values.get("reference_gpu")
    if reference and gpus.specs[reference].dense_tflops(precision) is None:
        # Converting the reference run's GPU-hours to FLOPs needs its rate at the job's precision.
        known = [p for p in ("bf16", "fp16", "fp8") if gpus.specs[reference].dense_tflops(p) is not None]
        raise ParseError(f"gpus.csv gives no {precision} rate for {reference}, so gpu_hours@{reference} cannot be "
                         "turned into compute",
                         hint=f"name the precision it ran at ({', '.join(known)})" if known else
                         "give tokens=… instead", example="recommend train 7B gpu_hours=576@A100")
    if "providers" in values:
        values["providers"] = tuple(dict.fromkeys(values["providers"]))
    assumptions = replace(Assumptions(), **overrides)
    if values.get("model") is not None:  # no more context than the model reads
        assumptions = replace(assumptions, context_tokens=model_context(values["model"], assumptions, overrides))
    return Workload(assumptions=assumptions, overridden=tuple(overrides), **values)


def _set_option(key: str, raw: str, original: str, values: dict[str, Any], overrides: dict[str, Any],
                gpus: GpuTable) -> None:
    """One `key=value`; `raw` keeps the user's case for names and messages, `value` is lower-cased."""
    value = raw.lower()
    setter = _SETTERS.get(key)
    if not value and setter is not _budget:  # an empty budget is explained by parse_amount (`budget=$5`)
        raise ParseError(f"'{original}' has no value", example=EXAMPLE)
    if setter is not None:
        setter(values, value, raw, gpus)
    elif key in _ASSUMPTION_KEYS or key in _ASSUMPTION_ALIASES:
        name = _ASSUMPTION_ALIASES.get(key, key)
        overrides[name] = _assumption(name, key, value, raw)
    else:
        known = "tokens, gpu_hours, deadline, budget, currency, users, duration, interruptible, region, provider, " \
                "gpus, own, method, precision, " + ", ".join(sorted(_ASSUMPTION_KEYS))
        raise ParseError(f"unknown option '{key}'", hint=f"known: {known}", example=EXAMPLE)


def _assumption(name: str, key: str, value: str, raw: str) -> Any:
    """An override of one of the `Assumptions`: a fraction, a positive number, a duration or a LoRA target."""
    if name == "lora_targets":
        if value not in LORA_TARGETS:
            raise ParseError(f"unknown lora_targets '{raw}'", hint="known: " + ", ".join(LORA_TARGETS),
                             example="recommend finetune 7B lora lora_targets=qv")
        return value
    example = _assumption_example(name, key)
    if name == "checkpoint_interval_h" and not value.replace(".", "", 1).isdigit():
        return parse_duration(value, example=example) / 3600
    if name == "context_tokens":
        number = parse_count(value, "context", example, like="8k or 4096")
    else:
        try:
            number = float(value)
        except ValueError:
            raise ParseError(f"{key} must be a number, not '{value}'", example=example) from None
    if not number > 0 or number != number or number == float("inf"):
        raise ParseError(f"{key} must be a positive number, not '{value}'", example=example)
    if name in ("mfu", "multi_host_efficiency", "usable_memory", "spot_share", "bandwidth_efficiency", "comm_overlap",
                "link_efficiency") and number > 1:
        raise ParseError(f"{key} is a fraction between 0 and 1, not '{value}'", example=example)
    if _ASSUMPTION_KEYS[name] in (int, "int"):
        if number != int(number):  # `max_instances=0.5` must not become a cap of 0
            raise ParseError(f"{key} must be a whole number, not '{value}'", example=example)
        return int(number)
    return number


_SERVING_ASSUMPTIONS = ("context_tokens", "kv_group", "target_tokens_per_s", "bandwidth_efficiency")
_EXAMPLE_VALUES = {"checkpoint_interval_h": "15m", "context_tokens": "8k", "max_instances": "200"}


def _assumption_example(name: str, key: str) -> str:
    """A `recommend` line that sets `key` (the word the user wrote for assumption `name`) to a value that works."""
    value = _EXAMPLE_VALUES.get(name) or f"{getattr(Assumptions(), name):g}"
    workload = "finetune 7B lora" if name in ("lora_rank", "batch_tokens") else \
        "serve 70B" if name in _SERVING_ASSUMPTIONS else "train 7B tokens=20B"
    return f"recommend {workload} {key}={value}"


MIN_TOKENS = 1e6  # fewer is no training run: a unit left out (`tokens=20` for 20B)


def _tokens(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    example = "recommend train 7B tokens=20B"
    tokens = parse_count(value, "tokens", example, like="20B or 1T")
    if not tokens > 0:
        raise ParseError(f"tokens must be above 0, not '{raw}'",
                         hint="leave tokens= out when the job's length is unknown", example=example)
    if tokens < MIN_TOKENS:
        unit = "did you mean " + raw + "B?" if raw.replace(".", "", 1).isdigit() else \
            "tokens are counted in millions or more: 500M, 20B, 1T"
        raise ParseError(f"tokens={raw} is {tokens:,.0f} tokens", hint=unit, example=example)
    values["tokens"] = tokens


def _gpu_hours(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    example = "recommend train 7B gpu_hours=576@A100"
    hours, _, reference = raw.partition("@")
    values["reference_gpu_hours"] = parse_count(hours, "gpu_hours", example, like="576 or 2k")
    if not values["reference_gpu_hours"] > 0:
        raise ParseError(f"gpu_hours must be above 0, not '{hours}'", example=example)
    if not reference:
        raise ParseError("gpu_hours needs the GPU they were measured on", example="gpu_hours=576@A100")
    values["reference_gpu"] = _gpu(gpus, reference, example)


def _gpu(gpus: GpuTable, name: str, example: str) -> str:
    """The canonical name of GPU `name`; an unknown one is an error whose example is `recommend`'s, not a quote's."""
    try:
        return gpus.resolve(name).name
    except ParseError as error:
        raise ParseError(error.message, hint=error.hint, example=example) from None


def _deadline(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    values["deadline_s"] = None if value in ("none", "no", "off") else \
        parse_duration(value, example="recommend train 7B tokens=20B deadline=72h")


def _serve_duration(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    values["serve_hours"] = parse_duration(value, example="recommend serve 70B duration=1mo") / 3600


def _budget(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    amount, currency = parse_amount(value, example=EXAMPLE)
    values["budget"] = amount
    if currency:
        _one_currency(values, currency)


def _currency(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    _one_currency(values, parse_currency(raw, example="recommend train 7B currency=CNY"))


def _one_currency(values: dict[str, Any], currency: str) -> None:
    """The plans' currency, from `currency=` or the budget's own (`budget=¥2000`); two different ones are refused,
    as a budget in one currency read as a number of the other would mislead (¥2,000 is not $2,000)."""
    if values.get("currency", currency) != currency:
        raise ParseError(f"two currencies given ({values['currency']} and {currency})",
                         hint="a budget written in one (budget=¥2000) plans in it: write the budget in the plans' "
                              "currency, or leave currency= out",
                         example="recommend train 7B budget=15000 currency=CNY")
    values["currency"] = currency


def _users(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    example = "recommend serve 70B users=50"
    users = parse_count(value, "users", example, like="50 or 2k")
    if users < 1 or users != int(users):
        raise ParseError(f"users must be a whole number, at least 1, not '{raw}'", example=example)
    values["users"] = int(users)


def _interruptible(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    if value not in ("yes", "y", "true", "1", "是", "no", "n", "false", "0", "否"):
        raise ParseError(f"interruptible must be yes or no, not '{value}'",
                         example="recommend train 7B interruptible=no")
    values["interruptible"] = value in ("yes", "y", "true", "1", "是")


def _regions(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    values["regions"] = parse_regions(value)


def _providers(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    """Added to the provider words (`recommend train 7B aws provider=gcp` asks for both, as a quote does)."""
    values.setdefault("providers", []).extend(parse_providers(raw, example="recommend train 7B provider=aws"))


def _gpus(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    values["gpus"] = tuple(_gpu(gpus, name, "recommend train 7B gpus=A100,H100") for name in raw.split(",") if name)


def _owned(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    owned = []
    for part in filter(None, raw.split(",")):
        match = re.match(r"^(\d+)x(.+)$", part, flags=re.IGNORECASE)
        count, name = (int(match.group(1)), match.group(2)) if match else (1, part)
        owned.append((_gpu(gpus, name, "recommend finetune 7B qlora own=2xRTX3090"), count))
    values["own"] = tuple(owned)


def _method(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    if value not in METHODS:
        raise ParseError(f"unknown method '{raw}'", hint="known: full, lora, qlora", example=EXAMPLE)
    values["method"] = value


def _precision(values: dict[str, Any], value: str, raw: str, gpus: GpuTable) -> None:
    if value not in PRECISIONS:
        raise ParseError(f"unknown precision '{raw}'", hint="known: " + ", ".join(PRECISIONS), example=EXAMPLE)
    values["precision"] = value


_Setter = Callable[[dict[str, Any], str, str, GpuTable], None]
_SETTERS: dict[str, _Setter] = {
    "tokens": _tokens, "gpu_hours": _gpu_hours, "gpu-hours": _gpu_hours, "deadline": _deadline,
    "duration": _serve_duration, "for": _serve_duration, "budget": _budget, "currency": _currency, "users": _users,
    "interruptible": _interruptible, "region": _regions, "provider": _providers, "gpus": _gpus, "own": _owned,
    "method": _method, "precision": _precision, "dtype": _precision,
}
