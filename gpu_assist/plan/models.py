"""Open models by name: the bundled table `models.csv` (each row cites the config it was read from) and the KV
cache each attention kind keeps per token. Pure once loaded.

A name is matched whatever its case and punctuation (`llama-3.1-70b`, `llama3.1-70b`,
`Meta-Llama-3.1-70B-Instruct` are one row): the organisation prefix (`meta-llama/`), a leading `meta-` and
the training-stage suffixes (`-instruct`, `-chat`, `-hf`, `-it`, `-pt`, `-base`) are dropped, then every
character that is not a letter, a digit or a dot.
"""

from __future__ import annotations

import csv
import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from ..errors import CatalogError, ParseError

TABLE = Path(__file__).with_name("models.csv")
ATTENTION_KINDS = ("mha", "mqa", "gqa", "mla")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)b\b", re.I)  # the size a name gives, `70b` in `llama-4-70b`
_SUFFIXES = re.compile(r"([-_ ](instruct|chat|hf|it|pt|base))+$")
# The families a word must start with to be read as a model name (a typo in one gets suggestions, not "didn't
# understand"): the table's own, and the names people type for them.
_FAMILY = re.compile(r"^(meta-?)?(llama|mistral|mixtral|qwen|gemma|deepseek|phi|falcon|mpt|bloom|opt)", re.I)


def name_key(name: str) -> str:
    """The form two spellings of one model share (see the module docstring)."""
    text = name.strip().lower().rsplit("/", 1)[-1]
    text = _SUFFIXES.sub("", text)
    text = re.sub(r"^meta[-_ ]?(?=llama)", "", text)
    return re.sub(r"[^a-z0-9.]", "", text)


@dataclass(frozen=True)
class ModelSpec:
    """One row of `models.csv`: a model's published shape. `params` are all the weights (what memory holds);
    `active_params` those one token runs through (a mixture of experts' routed share; a dense model's all)."""

    name: str
    aliases: tuple[str, ...]
    params: float
    active_params: float
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    head_dim: int
    context_tokens: int
    attention: str  # mha, mqa (one KV head), gqa or mla
    kv_latent: int | None  # MLA: kv_lora_rank + qk_rope_head_dim, the values cached per layer and token
    window_tokens: int | None  # sliding-window layers attend to (and cache) at most this many tokens
    windowed_layers: int  # how many of `layers` use the window; the others attend to the whole context
    config_url: str
    read_from: str
    read_on: str

    @property
    def mixture_of_experts(self) -> bool:
        return self.active_params < self.params

    def kv_bytes_per_token(self, context_tokens: int, value_bytes: float = 2) -> float:
        """KV cache per token of a `context_tokens` context, averaged over it (a windowed layer keeps only its
        window's tokens): multi-head, multi-query and grouped-query attention keep K and V per KV head, 2 × layers
        × KV heads × head size × bytes; multi-head latent attention keeps one compressed latent per layer, layers
        × latent × bytes."""
        if self.attention == "mla" and self.kv_latent:
            return self.layers * self.kv_latent * value_bytes
        per_layer = 2 * self.kv_heads * self.head_dim * value_bytes
        windowed = self.windowed_layers if self.window_tokens else 0
        share = min(1.0, (self.window_tokens or context_tokens) / max(1, context_tokens))
        return per_layer * ((self.layers - windowed) + windowed * share)


@dataclass(frozen=True)
class ModelTable:
    models: tuple[ModelSpec, ...]
    keys: dict[str, ModelSpec] = field(init=False, repr=False, compare=False)  # every spelling's key → its row

    def __post_init__(self) -> None:
        keys: dict[str, ModelSpec] = {}
        for model in self.models:
            for name in (model.name, *model.aliases):
                keys.setdefault(name_key(name), model)
        object.__setattr__(self, "keys", keys)

    def find(self, word: str) -> ModelSpec | None:
        """The model `word` names, or None."""
        return self.keys.get(name_key(word))

    def nearest(self, word: str, count: int = 3, cutoff: float = 0.5) -> list[str]:
        """The names of the models whose spelling is closest to `word`'s (at least `cutoff` alike), those of the
        size it names first (`llama-4-70b`: the 70B ones)."""
        size = named_size(word)
        close = difflib.get_close_matches(name_key(word), list(self.keys), n=len(self.keys), cutoff=cutoff)
        ranked = sorted(close, key=lambda k: self.keys[k].params != size)
        return list(dict.fromkeys(self.keys[k].name for k in ranked))[:count]


def named_size(word: str) -> float | None:
    """The parameters a name states (`llama-4-70b`: 70e9), None when it states none."""
    size = _SIZE.search(word)
    return float(size.group(1)) * 1e9 if size else None


def looks_like_model(word: str) -> bool:
    """Whether `word` reads as a model name: one the table knows, or a family it knows or a spelling close to one
    of its names with a version or size (unknown, then: suggestions follow)."""
    models = load_models()
    if models.find(word) is not None:
        return True
    return any(c.isdigit() for c in word) and (bool(_FAMILY.match(word)) or bool(models.nearest(word, 1, 0.8)))


def model_named(word: str, table: ModelTable | None = None) -> ModelSpec:
    """The model `word` names; ParseError (only) suggesting the nearest names and the size form otherwise."""
    models = table or load_models()
    found = models.find(word)
    if found is not None:
        return found
    near = models.nearest(word)
    size = named_size(word)
    hint = (f"nearest known: {', '.join(near)}; " if near else "") + \
        f"or give the model's size in parameters ({f'{size / 1e9:g}B' if size else '70B'})"
    raise ParseError(f"unknown model '{word}'", hint=hint, example="recommend serve llama-3.1-70b users=500")


class _Sized(Protocol):
    @property
    def context_tokens(self) -> int: ...


def model_context(model: ModelSpec, assumptions: _Sized, overrides: Mapping[str, object]) -> int:
    """The context to size `model` for: the assumptions', cut to what the model reads when it is the default; one
    the user set (in `overrides`) beyond it is an error."""
    asked, stated = assumptions.context_tokens, "context_tokens" in overrides
    if asked <= model.context_tokens:
        return asked
    if stated:
        raise ParseError(f"{model.name} reads at most {model.context_tokens:,} tokens of context",
                         example=f"recommend serve {model.name.lower()} context={model.context_tokens // 1024}k")
    return model.context_tokens


def _number(value: str) -> float | None:
    return float(value) if value else None


def _row(row: dict[str, str]) -> ModelSpec:
    params = float(row["params_b"]) * 1e9
    active = _number(row["active_params_b"])
    latent, window = _number(row["kv_latent"]), _number(row["window_tokens"])
    return ModelSpec(
        name=row["model"], aliases=tuple(filter(None, row["aliases"].split("|"))), params=params,
        active_params=active * 1e9 if active else params, layers=int(row["layers"]),
        hidden_size=int(row["hidden_size"]), heads=int(row["heads"]), kv_heads=int(row["kv_heads"]),
        head_dim=int(row["head_dim"]), context_tokens=int(row["context_tokens"]), attention=row["attention"],
        kv_latent=int(latent) if latent else None, window_tokens=int(window) if window else None,
        windowed_layers=int(row["windowed_layers"] or 0), config_url=row["config_url"],
        read_from=row["read_from"], read_on=row["read_on"])


def _checked(model: ModelSpec, line: int) -> ModelSpec:
    """`model` when its row is whole: a known attention kind with what it needs, and its source cited."""
    cited = model.config_url.startswith("https://") and model.read_from and re.fullmatch(r"\d{4}-\d\d-\d\d",
                                                                                         model.read_on)
    if not cited:
        raise CatalogError(f"models.csv line {line}: {model.name} cites no config URL, copy read or date read")
    if model.attention not in ATTENTION_KINDS or (model.attention == "mla") != bool(model.kv_latent) or \
            model.heads % model.kv_heads:
        raise CatalogError(f"models.csv line {line}: {model.name}'s attention is not one the table knows "
                           f"({', '.join(ATTENTION_KINDS)}; mla with its latent; heads a multiple of KV heads)")
    return model


@lru_cache(maxsize=4)
def load_models(path: Path = TABLE) -> ModelTable:
    """The table at `path` (the bundled one by default), read once per process; CatalogError names a row that
    lacks its source or an attention kind's figures."""
    with path.open(encoding="utf-8", newline="") as handle:
        return ModelTable(tuple(_checked(_row(row), line) for line, row in enumerate(csv.DictReader(handle), 2)))
