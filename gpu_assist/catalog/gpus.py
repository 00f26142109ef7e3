"""Canonical GPU names and specs (`catalogs/gpus.csv`).

Names are canonicalised once, at the edge: the request grammar and the catalog
importers both map whatever they are given (`a100-80gb`, `A100-SXM4-80GB`,
`RTX PRO Server 6000`) to one canonical name through `GpuTable.resolve`.
"""

from __future__ import annotations

import csv
import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import CatalogError, ParseError

_KEY_RE = re.compile(r"[^a-z0-9]+")
# Letters typed for the digits they look like (`A10O`, `Hl00`): a suggestion compares names with them read as digits.
_LOOKALIKES = str.maketrans("oil", "011")


def name_key(text: str) -> str:
    """Comparison key: case, spaces, dashes and underscores do not matter."""
    return _KEY_RE.sub("", text.lower())


@dataclass(frozen=True)
class GpuSpec:
    name: str
    aliases: tuple[str, ...]
    vendor: str
    architecture: str
    memory_gib: float
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    memory_bandwidth_gbs: float | None
    source: str
    note: str = ""

    def compute_precision(self, precision: str) -> str:
        """The tensor format a job at `precision` computes in on this GPU. bf16, fp16 and fp8 are formats of their
        own: a job at one of them runs at that one or not at all (V100 and T4 have fp16 tensor cores, no bf16).
        fp32 training runs as 16-bit mixed precision, and int8/int4 weights (QLoRA's) compute in 16 bits: those
        take bf16 where the GPU has it, else fp16."""
        if precision in ("bf16", "fp16", "fp8"):
            return precision
        return "bf16" if self.bf16_tflops is not None or self.fp16_tflops is None else "fp16"

    def dense_tflops(self, precision: str) -> float | None:
        """Peak dense tensor throughput of a job at `precision` (in its `compute_precision`), None when the GPU
        has none or gpus.csv does not know it."""
        return {"bf16": self.bf16_tflops, "fp16": self.fp16_tflops,
                "fp8": self.fp8_tflops}[self.compute_precision(precision)]


def _optional_float(value: str) -> float | None:
    value = value.strip()
    return float(value) if value else None


class GpuTable:
    """All known GPUs, looked up by any alias."""

    def __init__(self, specs: list[GpuSpec]):
        self.specs = {spec.name: spec for spec in specs}
        self._by_key: dict[str, str] = {}
        for spec in specs:
            for label in (spec.name, *spec.aliases):
                self._by_key[name_key(label)] = spec.name

    def __contains__(self, name: str) -> bool:
        return name in self.specs

    def __iter__(self) -> Iterator[GpuSpec]:
        return iter(self.specs.values())

    def __repr__(self) -> str:
        return f"GpuTable({len(self.specs)} GPUs)"

    def find(self, text: str) -> GpuSpec | None:
        """The GPU that `text` names, or None."""
        name = self._by_key.get(name_key(text))
        return self.specs[name] if name else None

    def resolve(self, text: str, *, memory_gib: float | None = None) -> GpuSpec:
        """The GPU that `text` names; with `memory_gib`, the variant of that size.

        Raises ParseError with the nearest names when nothing matches.
        """
        spec = self.find(text)
        if spec is None:
            raise ParseError(f"unknown GPU '{text}'", hint=self.suggest(text), example="8xA100 72h")
        if memory_gib is not None and abs(spec.memory_gib - memory_gib) > 1:
            sized = self.find(f"{spec.name.split('-')[0]}-{int(memory_gib)}GB")
            if sized is None:
                sizes = sorted({f"{s.name} ({s.memory_gib:g} GB)" for s in self.family(spec)})
                raise ParseError(
                    f"no {int(memory_gib)} GB variant of {spec.name}",
                    hint="known: " + ", ".join(sizes),
                    example=f"4x{spec.name} 2d",
                )
            spec = sized
        return spec

    def variant(self, spec: GpuSpec, memory_gib: float) -> GpuSpec:
        """The member of `spec`'s family with `memory_gib` of memory, when the data's memory contradicts `spec`
        (vast.ai files A100 40/80 GB and H100 SXM/NVL under one name); `spec` when it fits or nothing does."""
        if abs(spec.memory_gib - memory_gib) <= 2:
            return spec
        sized = [s for s in self.family(spec) if abs(s.memory_gib - memory_gib) <= 2]
        return sized[0] if len(sized) == 1 else spec

    def family(self, spec: GpuSpec) -> list[GpuSpec]:
        base = name_key(spec.name.split("-")[0])
        return [s for s in self.specs.values() if name_key(s.name.split("-")[0]) == base]

    def suggest(self, text: str) -> str:
        """'did you mean X?' from the nearest canonical names and aliases, a letter that looks like a digit read as
        that digit on both sides (`A10O` is one keystroke from A100, two from A10)."""
        labels: dict[str, str] = {}
        for spec in self.specs.values():
            for label in (spec.name, *spec.aliases):
                labels.setdefault(name_key(label).translate(_LOOKALIKES), spec.name)
        key = name_key(text).translate(_LOOKALIKES)
        close = difflib.get_close_matches(key, list(labels), n=5, cutoff=0.5)
        # Only the best-scoring names: 'A1000' suggests A100, not every A100 variant too.
        best = max((difflib.SequenceMatcher(None, key, c).ratio() for c in close), default=0)
        names = list(dict.fromkeys(labels[c] for c in close
                                   if difflib.SequenceMatcher(None, key, c).ratio() >= best - 0.05))
        if names:
            return "did you mean " + " or ".join(names) + "?"
        return "known GPUs: " + ", ".join(sorted(self.specs))


GPUS_COLUMNS = ("name", "aliases", "vendor", "architecture", "memory_gib", "bf16_tflops",
                "fp16_tflops", "fp8_tflops", "memory_bandwidth_gbs", "source", "note")


def load_gpus(path: Path) -> GpuTable:
    """Read `gpus.csv`; a malformed row raises CatalogError naming file and line."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in GPUS_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise CatalogError(f"{path}:1: missing columns {', '.join(missing)}")
            specs = []
            for line, row in enumerate(reader, start=2):
                try:
                    specs.append(GpuSpec(
                        name=row["name"].strip(),
                        aliases=tuple(a.strip() for a in row["aliases"].split("|") if a.strip()),
                        vendor=row["vendor"].strip(),
                        architecture=row["architecture"].strip(),
                        memory_gib=float(row["memory_gib"]),
                        bf16_tflops=_optional_float(row["bf16_tflops"]),
                        fp16_tflops=_optional_float(row["fp16_tflops"]),
                        fp8_tflops=_optional_float(row["fp8_tflops"]),
                        memory_bandwidth_gbs=_optional_float(row["memory_bandwidth_gbs"]),
                        source=row["source"].strip(),
                        note=(row.get("note") or "").strip(),
                    ))
                except (TypeError, ValueError, AttributeError) as error:
                    raise CatalogError(f"{path}:{line}: bad GPU row ({error})") from None
    except OSError as error:
        raise CatalogError(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise CatalogError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    return GpuTable(specs)
