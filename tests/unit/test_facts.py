"""Notes, notices and flags are typed facts (#30): the core decides by their types and fields, the renderers write
their words. Rewording a note must not change what ranks first, so no code outside the faces reads a note's text."""

from __future__ import annotations

import ast
import pickle
from decimal import Decimal
from pathlib import Path

import pytest

import gpu_assist
from gpu_assist import facts
from gpu_assist.facts import inventory
from gpu_assist.facts import (
    Conversion,
    Derived,
    Fact,
    Flag,
    Label,
    Labelled,
    MultiHost,
    PricingModel,
    ScopedFlag,
    SourcesDisagree,
    Stale,
    Unverified,
    parse_flags,
    parse_labels,
)
from gpu_assist.pricing.quote import QuoteOption
from gpu_assist.render.notes import words

PACKAGE = Path(gpu_assist.__file__).parent
# The faces: they turn facts into words, so they may read them (the importers write the catalogs' words).
FACES = ("render", "cli", "jupyter", "slackbot", "importers")
# Attributes that hold facts: a note, notice, reason or flag is read through one of these.
FACT_HOLDERS = {"notes", "notices", "reasons", "flags", "empty_reason", "label"}
_TEXT_METHODS = {"startswith", "endswith", "partition", "split", "find", "index", "lower", "upper"}


def _holds_facts(node: ast.AST, names: set[str]) -> bool:
    """`o.notes`, `sorted(o.notes, …)`, `row.notes_for(model)`, or a name given one of those: facts."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr in FACT_HOLDERS
    if isinstance(node, ast.Call):
        return any(_holds_facts(arg, names) for arg in node.args) or (
            isinstance(node.func, ast.Attribute) and node.func.attr == "notes_for")
    return False


def text_comparisons(source: str) -> list[int]:
    """Lines where code reads a fact as text: a string method on a note (`n.startswith("spot")` for `n` taken
    from `o.notes`), a string looked up among notes (`"stale" in o.notes`) or in one (`"all:" in offer.flags`)."""
    tree = ast.parse(source)
    collections: set[str] = set()  # names given a collection of facts (`reasons = sorted(option.notes, …)`)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _holds_facts(node.value, collections):
            collections |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    taken = {target.id for node in ast.walk(tree) if isinstance(node, (ast.comprehension, ast.For))
             and _holds_facts(node.iter, collections) for target in ast.walk(node.target)
             if isinstance(target, ast.Name)}
    # `sorted(option.notes, key=lambda n: …)`: the key's argument is a note too
    taken |= {arg.arg for node in ast.walk(tree) if isinstance(node, ast.Call) and _holds_facts(node, collections)
              for keyword in node.keywords if isinstance(keyword.value, ast.Lambda)
              for arg in keyword.value.args.args}

    def a_note(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id in taken) or _holds_facts(node, collections)

    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in _TEXT_METHODS and a_note(node.func.value):
            lines.add(node.lineno)
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.JoinedStr) or (isinstance(o, ast.Constant) and isinstance(o.value, str))
                   for o in operands) and any(a_note(o) for o in operands):
                lines.add(node.lineno)
    return sorted(lines)


def test_the_check_finds_what_the_core_used_to_do():
    """The patterns #30 removed, each found (so the test below would fail if one came back)."""
    before = '''
trusted = verified and not any(note.startswith(UNTRUSTED_NOTES) for note in self.notes)
reasons = sorted(option.notes, key=lambda n: not n.startswith(("unverified", "stale")))
reasons = [r for r in reasons if not r.startswith("spot: may be interrupted")]
flagged = "all:" in self.flags or f"{scope}:" in self.flags
kept = tuple(n for n in self.quote.notices if "reserved price unknown" not in n)
'''
    assert text_comparisons(before) == [2, 3, 4, 5, 6]
    assert text_comparisons("ok = [n for n in o.notes if isinstance(n, Stale)]") == []


def test_no_code_outside_the_faces_reads_a_note_as_text():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in FACES or relative.parts[0] == "migrations":
            continue
        found += [f"gpu_assist/{relative}:{line}" for line in text_comparisons(path.read_text(encoding="utf-8"))]
    assert not found, "read a fact's type or fields, not its words (render/notes.py writes them): " + ", ".join(found)


def _fact_types() -> list[type[Fact]]:
    types, waiting = [], [Fact]
    while waiting:
        for sub in waiting.pop().__subclasses__():
            types.append(sub)
            waiting.append(sub)
    return [t for t in types if t.__module__.startswith(f"{facts.__name__}.")]


def test_every_fact_has_words():
    """Each fact a reader may see has its words (a `Conversion` is only ever applied to a label's amounts)."""
    missing = [t.__name__ for t in _fact_types() if t is not Conversion and words.dispatch(t) is words.dispatch(object)]
    assert not missing, f"add a function to render/notes.py for {missing}"


def _option(notes: tuple[Fact, ...], verified: bool = True) -> QuoteOption:
    return QuoteOption(provider="aws", region="us-east-1", zone="", instance_type="p4d.24xlarge", instances=1,
                       gpu="A100", gpu_count=8, gpu_memory_gib=40.0, pricing_model=PricingModel.ON_DEMAND,
                       hourly=Decimal(1), total=Decimal(1), currency="USD", billed_hours=Decimal(1),
                       per_gpu_hour=Decimal(1), savings_vs_on_demand=None, interconnect="nvlink",
                       price_currency="USD", source="aws-api", as_of="2026-12-01", verified=verified, notes=notes)


def test_trust_reads_types_not_words():
    """A stale or derived price is untrusted whatever its words; a catalog label that merely says "stale" is not."""
    same = Conversion("USD", "USD", Decimal(1), Decimal(1))
    assert _option(()).trusted and not _option((), verified=False).trusted
    assert not _option((Stale("2026-01-01", 300),)).trusted
    assert not _option((Labelled(Derived("spot", "@derived share=0.35", Decimal("0.35")), same),)).trusted
    assert _option((Labelled(Label("all", "stale: derived from an old list"), same),)).trusted
    assert _option((MultiHost(2), Unverified("seed-000"))).trusted  # unverified is the `verified` field's to say


def test_catalog_columns_parse_once_into_facts():
    flags = parse_flags("spot:at-on-demand-cap;all:placeholder-price")
    assert flags == (ScopedFlag("spot", Flag.AT_ON_DEMAND_CAP), ScopedFlag("all", Flag.PLACEHOLDER_PRICE))
    assert parse_flags("spot:at-on-demand-cap;all:placeholder-price") is flags  # once per distinct text
    labels = parse_labels("spot:@derived share=0.35;all:sources disagree on on-demand: a vs b;reserved_1y:terms")
    assert [type(label) for label in labels] == [Derived, SourcesDisagree, Label]
    assert [words(label) for label in labels] == [
        "derived spot (the source sets spot = 0.35 × on-demand, not a market price)",
        "sources disagree on on-demand: a vs b", "terms"]
    assert type(parse_labels("spot:derived spot (a sentence)")[0]) is Label  # the type is stated, not read
    assert parse_flags("") == () == parse_labels("")


def test_a_fact_is_a_frozen_value():
    stale = Stale("2026-01-01", 40)
    assert stale == Stale(as_of="2026-01-01", days=40, reserved=False) and hash(stale) == hash(Stale("2026-01-01", 40))
    assert MultiHost(2) != Unverified(2)  # type: ignore[arg-type]  # equal fields, another fact
    assert pickle.loads(pickle.dumps(stale)) == stale and repr(stale).startswith("Stale(as_of='2026-01-01'")
    with pytest.raises(AttributeError):
        stale.days = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        Stale("2026-01-01", 40, True, "extra")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="needs days"):
        Stale("2026-01-01")  # type: ignore[call-arg]


def test_a_pricing_model_is_the_grammars_word():
    assert PricingModel("reserved-3y").term_years == 3 and PricingModel.RESERVED_1Y.reserved
    assert not PricingModel.SPOT.reserved and PricingModel.MONTHLY.term_years is None
    assert f"{PricingModel.ON_DEMAND}" == "on-demand" == PricingModel.ON_DEMAND


def test_a_stated_label_is_written_and_read_back_as_its_fields():
    """Issue #31's labels are values in the `notes` column (`scope:@kind field=value`), not sentences."""
    from gpu_assist.facts import Corrected, LocalZone, Replaced, SpotOutlier
    from gpu_assist.render.notes import words

    column = ";".join([
        SpotOutlier.entry("spot", zones=21, median="9.80"),
        LocalZone.entry("all", zone="use1-atl2-az1", wavelength="no"),
        Replaced.entry("on_demand", figure="43.06615", was_source="skypilot-gcp", by="gcp-cud",
                       by_as_of="2026-07-30", flex_start="yes"),
        Corrected.entry("all", column="gpu_count", was="12", now="8", on="MicrosoftDocs/azure-docs:x.md"),
    ])
    outlier, zone, replaced, corrected = parse_labels(column)
    assert (outlier.scope, outlier.zones, outlier.median) == ("spot", 21, Decimal("9.80"))
    assert (zone.zone, zone.wavelength) == ("use1-atl2-az1", False)
    assert replaced.figure == Decimal("43.06615") and replaced.flex_start and replaced.by_as_of == "2026-07-30"
    assert (corrected.column, corrected.was, corrected.now) == ("gpu_count", "12", "8")
    assert words(outlier) == "spot outlier: below half the median of 21 zones' spot prices (median $9.80/h)"
    assert "Flex-start" in words(replaced) and "gpu count 12 → 8" in words(corrected)


def test_an_older_catalogs_derived_sentence_is_read_once_as_the_stated_label(tmp_path):
    """A catalog refreshed before `Derived` was stated says it in the importer's one sentence: the reader states it."""
    from gpu_assist.catalog.files import parse_offers

    sentence = "spot:derived spot (the source sets spot = 0.35 × on-demand, not a market price)"
    offers = parse_offers(f'provider,region,notes\nverda,FIN-01,"{sentence};all:x"\n', tmp_path / "verda.csv")
    (_, row), = offers.rows
    assert row["notes"] == "spot:@derived share=0.35;all:x"
    assert parse_labels(row["notes"])[0] == Derived("spot", "@derived share=0.35", Decimal("0.35"))


def test_the_architecture_document_lists_every_fact():
    """The inventory in docs/ARCHITECTURE.md is written from the classes (`make docs`); a fact added, moved or
    reworded without it fails here."""
    document = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert inventory.with_inventory(document) == document, "docs/ARCHITECTURE.md's facts differ from " \
                                                           "gpu_assist/facts/: run `make docs`"
    listed = {kind for domain in inventory.DOMAINS for kind in inventory.declared(domain)}
    assert set(_fact_types()) <= listed  # every fact lives in a domain the page lists
