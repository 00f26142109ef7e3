"""A hint that answers bad input points the right way: the nearest GPU read as typed (`A10O` is A100), regions
from every cloud, an example that is never the input that failed, and a policy error that names where the policy
came from (the file, or the variable that set the value)."""

from __future__ import annotations

import pytest

from gpu_assist.cli import main
from gpu_assist.errors import ParseError, PolicyError, apart_from
from gpu_assist.lifecycle.policy import PolicySource, allow_provider, load_policy
from gpu_assist.lifecycle.ports import Clouds
from gpu_assist.pricing.query_parser import parse_request

pytestmark = pytest.mark.usefixtures("pinned_wall_clock")


def _error(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    return " ".join(capsys.readouterr().err.split())  # the lines a long error folds into, joined


@pytest.mark.parametrize(("typed", "meant"), [("A10O", "A100"), ("A1OO", "A100"), ("H10O", "H100"),
                                              ("A1000", "A100"), ("RTX409O", "RTX4090"), ("B2OO", "B200")])
def test_a_letter_typed_for_a_digit_suggests_the_gpu_it_looks_like(capsys, typed, meant):
    assert f"unknown GPU '{typed}' — did you mean {meant}? — example" in _error(capsys, "quote", f"8x{typed}", "72h")


def test_a_near_region_is_suggested_from_every_cloud(capsys):
    said = _error(capsys, "quote", "8xA100", "72h", "region=us-east")
    assert "did you mean us-east1 (gcp), us-east-1 (aws, lambda)" in said and "eastus (azure)" in said
    assert "did you mean us-east-1 (aws, lambda)" in _error(capsys, "quote", "8xA100", "72h", "region=us-east-1x")
    assert "eu-west-1 (aws)" in _error(capsys, "recommend", "train", "7B", "region=europe-west")


def test_a_bare_region_is_read_as_one_where_the_catalog_has_it(capsys, catalog):
    """`quote 8xA100 72h us-east-1`, as an ML engineer types it: the region filter, as `region=us-east-1` is."""
    assert main(["quote", "8xA100", "72h", "us-east-1", "--format", "json"]) == 0
    bare = capsys.readouterr().out
    assert main(["quote", "8xA100", "72h", "region=us-east-1", "--format", "json"]) == 0
    assert bare == capsys.readouterr().out and '"region": "us-east-1"' in bare
    assert parse_request("8xA100 72h eu", catalog.gpus).regions == ("eu",)
    assert parse_request("8xA100 72h cn-hangzhou spot", catalog.gpus).regions == ("cn-hangzhou",)


def test_a_bare_region_the_catalog_lacks_gets_region_and_names_from_every_cloud(capsys):
    said = _error(capsys, "quote", "8xA100", "72h", "us-east")
    assert "unknown region 'us-east'" in said and "us-east1 (gcp), us-east-1 (aws, lambda)" in said
    assert "eastus (azure)" in said and said.endswith("example: 8xA100 72h region=us-east-1")
    # a word that only might be a region, or is a misspelt option, is not taken for one, but the hint names region=
    for word in ("eastus", "include-flaged"):
        assert _error(capsys, "quote", "8xA100", "72h", word).startswith(
            f"error: didn't understand '{word}' a request is GPUs, a duration and optional filters: a provider, "
            "spot, region=")


def test_an_example_is_never_the_input_that_failed(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_ASSIST_DB_URL", f"sqlite:///{tmp_path}/state.db")
    said = _error(capsys, "extend", "r-0123456789ab", "24h")
    assert said == "error: no launch request r-0123456789ab `requests` lists the recent ones with their ids " \
                   "example: requests"  # three lines: what was wrong, the hint, an example that works
    error = apart_from(ParseError("nothing to launch", example="launch 8xA100 72h spot"), "launch 8xA100 72h SPOT")
    assert error.example is None and str(error) == "nothing to launch"
    error = apart_from(ParseError("no such GPU here", example="8xA100 72h"), "quote 8xA100 72h")  # without its verb
    assert error.example is None
    kept = apart_from(ParseError("unknown GPU 'A1000'", example="8xA100 72h"), "quote 8xA1000 72h")
    assert kept.example == "8xA100 72h" and str(kept).endswith("example: 8xA100 72h")


def test_a_policy_error_names_the_file_or_the_variable(tmp_path):
    path = tmp_path / "team-policy.toml"
    path.write_text("[policy]\nmax_gpus = \"many\"\n", encoding="utf-8")
    with pytest.raises(PolicyError, match=rf"bad policy setting: .*\(policy from {path} \(GPU_ASSIST_CONFIG\)\)"):
        load_policy({"GPU_ASSIST_CONFIG": str(path)})
    with pytest.raises(PolicyError, match=r"not 'lium' \(policy from GPU_ASSIST_ALLOWED_PROVIDERS\)"):
        load_policy({"GPU_ASSIST_ALLOWED_PROVIDERS": "aws,lium"})  # priced, never launched
    path.write_text('[policy]\nallowed_providers = ["aws"]\n', encoding="utf-8")
    from_file = load_policy({"GPU_ASSIST_CONFIG": str(path)})
    assert allow_provider(from_file.source, "tencent") == \
        f'allowed_providers = ["aws", "tencent"] in [policy] of {path}'
    from_variable = load_policy({"GPU_ASSIST_CONFIG": str(path), "GPU_ASSIST_ALLOWED_PROVIDERS": "aws"})
    assert allow_provider(from_variable.source, "tencent") == "GPU_ASSIST_ALLOWED_PROVIDERS=aws,tencent"
    assert "[policy] of the TOML file GPU_ASSIST_CONFIG names" in allow_provider(load_policy({}).source, "aliyun")
    clouds = Clouds({}, launches=("aws",), source=from_file.source)
    with pytest.raises(PolicyError, match=rf"in \[policy\] of {path}"):
        clouds.of("tencent", launching=True)
    assert str(PolicySource()).startswith("the defaults")
