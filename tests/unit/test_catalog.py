"""Catalog files: the bundled ones validate; defects are reported with file and line; the cache is safe."""

from __future__ import annotations

import pytest
from support import CATALOGS, offer

from gpu_assist.catalog import OFFER_COLUMNS, load_catalog, validate_directory
from gpu_assist.catalog.providers import PROVIDERS
from gpu_assist.errors import CatalogError
from gpu_assist.sources.refresh import fields_to_csv


def test_bundled_catalogs_validate_and_cover_every_provider(catalog):
    assert validate_directory(CATALOGS) == []
    assert set(catalog.offers.provider) == set(PROVIDERS) and len(PROVIDERS) == 20
    assert list(catalog.offers.columns) == list(OFFER_COLUMNS)
    unverified = catalog.offers[~catalog.offers.verified]
    assert set(unverified.provider) == {"aliyun", "tencent", "huawei"}
    assert (unverified.source_detail.str.len() > 0).all()


def test_every_defect_is_reported_with_file_and_line(make_catalog):
    directory = make_catalog(
        offer(),
        offer(instance_type="x", gpu="A1000"),
        offer(instance_type="y", on_demand_hourly="12,5"),
        offer(instance_type="z", on_demand_hourly="", spot_hourly=""),
        offer(),  # duplicate of the first row
        offer(instance_type="w", source="made-up", as_of="yesterday", flags="cheap"),
        load=False,
    )
    messages = [str(d) for d in validate_directory(directory)]
    path = str(directory / "aws.csv")
    # fields_to_csv sorts by gpu, instance_type, region, zone; find each row's line from the file itself.
    lines = (directory / "aws.csv").read_text().splitlines()
    line_of = {name: next(i for i, text in enumerate(lines, 1) if f",{name}," in text) for name in "xyzw"}
    assert f"{path}:{line_of['x']}: unknown GPU 'A1000' (did you mean A100?; add it to gpus.csv)" in messages
    assert f"{path}:{line_of['y']}: on_demand_hourly: '12,5' is not a non-negative number with at most 6 decimals" \
        in messages
    assert f"{path}:{line_of['z']}: no price in any pricing model" in messages
    assert any(m.startswith(f"{path}:") and "duplicate offer aws/us-east-1//p4d.24xlarge/A100/8" in m for m in messages)
    assert f"{path}:{line_of['w']}: as_of 'yesterday' is not YYYY-MM-DD (blank only with an imported " \
        "date, or for verified=no)" in messages
    assert any(f"{path}:{line_of['w']}: flags 'cheap'" in m for m in messages)
    assert f"{path}:{line_of['w']}: source 'made-up' is not described in SOURCES.md" in messages


def test_loading_a_defective_catalog_raises_catalog_error_naming_the_line(make_catalog):
    directory = make_catalog(offer(gpu_count="eight"), load=False)
    with pytest.raises(CatalogError, match=r"aws\.csv:2: gpu_count: 'eight'"):
        load_catalog(directory, cache_dir=None)


def test_missing_columns_and_unreadable_files(make_catalog, tmp_path):
    directory = make_catalog(offer(), load=False)
    (directory / "aws.csv").write_text("provider,region\naws,us-east-1\n")
    assert "missing columns" in str(validate_directory(directory)[0])
    (directory / "aws.csv").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(CatalogError, match="aws.csv:1: cannot read as CSV"):
        load_catalog(directory, cache_dir=None)
    with pytest.raises(CatalogError, match="nowhere not found"):
        load_catalog(tmp_path / "nowhere", cache_dir=None)


def test_cache_is_used_and_follows_edits(make_catalog, tmp_path):
    directory = make_catalog(offer(on_demand_hourly="32"), load=False)
    cache = tmp_path / "cache"
    first = load_catalog(directory, cache_dir=cache)
    assert len(list(cache.glob("catalog-*.bin"))) == 1
    assert load_catalog(directory, cache_dir=cache).offers.equals(first.offers)
    (directory / "aws.csv").write_text(fields_to_csv([offer(on_demand_hourly="31")]))
    assert load_catalog(directory, cache_dir=cache).offers.on_demand_hourly.tolist() == [31.0]
    for stale in cache.glob("*.bin"):
        stale.write_bytes(b"not a pickle")
    assert load_catalog(directory, cache_dir=cache).offers.on_demand_hourly.tolist() == [31.0]


def test_a_defective_file_is_never_served_from_cache(make_catalog, tmp_path):
    directory = make_catalog(offer(), load=False)
    cache = tmp_path / "cache"
    load_catalog(directory, cache_dir=cache)
    (directory / "aws.csv").write_text(fields_to_csv([offer(gpu="nope")]))
    with pytest.raises(CatalogError, match="unknown GPU 'nope'"):
        load_catalog(directory, cache_dir=cache)


def test_a_row_with_a_surplus_field_is_refused_with_its_line(make_catalog):
    """Found by the fuzzer: a stray comma in the first row made pandas shift every column into an index."""
    directory = make_catalog(offer(), load=False)
    lines = (directory / "aws.csv").read_text().splitlines()
    lines[1] = lines[1].replace(",32,", ",3,2,", 1)
    (directory / "aws.csv").write_text("\n".join(lines) + "\n")
    width = len(OFFER_COLUMNS)
    with pytest.raises(CatalogError, match=rf"aws\.csv:2: {width + 1} fields where the header has {width}"):
        load_catalog(directory, cache_dir=None)
    assert f"{width + 1} fields" in str(validate_directory(directory)[0])


def test_a_file_without_provider_or_region_is_refused_naming_the_columns(make_catalog):
    """Found by the fuzzer: locating regions must not run before the missing columns are reported."""
    directory = make_catalog(offer(), load=False)
    lines = (directory / "aws.csv").read_text().splitlines()
    (directory / "aws.csv").write_text("\n".join(",".join(line.split(",")[1:]) for line in lines) + "\n")
    with pytest.raises(CatalogError, match=r"aws\.csv:1: missing columns: provider"):
        load_catalog(directory, cache_dir=None)


def test_a_file_without_the_optional_columns_loads_with_located_regions(make_catalog):
    directory = make_catalog(offer(region="eu-west-2"), load=False)
    width = len(OFFER_COLUMNS) - 5  # country, continent, notes, reserved_source, reserved_as_of
    lines = (directory / "aws.csv").read_text().splitlines()
    (directory / "aws.csv").write_text("\n".join(",".join(line.split(",")[:width]) for line in lines) + "\n")
    offers = load_catalog(directory, cache_dir=None).offers
    assert (offers.country[0], offers.continent[0], offers.notes[0]) == ("GB", "EU", "")


def test_validate_prints_a_summary_and_its_lists_only_when_verbose(capsys):
    from gpu_assist.cli import main

    assert main(["catalog", "validate", str(CATALOGS)]) == 0
    short = capsys.readouterr().out.splitlines()
    assert short[0].endswith(": OK") and short[1].split() == ["provider", "rows", "disagree", "corrected", "dropped"]
    assert any(line.split()[0] == "gcp" for line in short[2:])
    total = " ".join(short[-3:-1])  # the total, folded to fit 100 columns
    assert "providers" in total and "where two sources disagree" in total and "dropped" in total
    assert max(map(len, short)) <= 100
    assert short[-1] == "gpu-assist catalog validate --verbose lists each of them"
    assert len(short) < 40
    assert main(["catalog", "validate", str(CATALOGS), "--verbose"]) == 0
    long = capsys.readouterr().out
    assert long.startswith("\n".join(short[:-1])) and "rows dropped (" in long and "rows corrected (" in long
