"""The provider registry (`catalog.providers`) against the package: every place that acts per provider agrees with
it, no module keeps a list of provider names of its own, and an unknown provider is an error, never AWS."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from gpu_assist.catalog.providers import (
    BY_NAME,
    CHINA_PROVIDERS,
    ENGINE_PROVIDERS,
    GATE_CLUSTERS,
    GPU_INSTANCE_TYPES,
    INSTANCE_IDS,
    LAUNCH_PROVIDERS,
    NATIVE_PROVIDERS,
    PROVIDERS,
    REFRESH_VERBS,
    REGISTRY,
    cloud_of,
    not_launchable,
    provider,
)
from gpu_assist.errors import PolicyError

ROOT = Path(__file__).resolve().parents[2]


def _tuples_of_names(path: Path) -> list[tuple[int, list[str]]]:
    """Every tuple, list or set literal in a module that holds two or more of the registry's names."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            names = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in BY_NAME]
            if len(names) >= 2:
                found.append((node.lineno, names))
    return found


def test_no_module_but_the_registry_lists_providers():
    """A provider is named once: lists of provider names anywhere else in the package are the bug this guards."""
    lists = {f"{path.relative_to(ROOT)}:{line}": names
             for path in sorted([*ROOT.glob("gpu_assist/**/*.py"), *ROOT.glob("slackbot/**/*.py")])
             if path.name != "providers.py" for line, names in _tuples_of_names(path)}
    assert lists == {}


def test_the_per_provider_tables_cover_exactly_the_registrys_providers():
    from gpu_assist.cli.catalog import _CHINA_REFRESH
    from gpu_assist.commands.lifecycle import PROVISIONERS
    from gpu_assist.sources.skypilot import EXTRACTS

    assert set(EXTRACTS) == {p.name for p in REGISTRY if p.skypilot}
    assert set(PROVISIONERS) == set(LAUNCH_PROVIDERS) == {*NATIVE_PROVIDERS, *ENGINE_PROVIDERS}
    assert set(_CHINA_REFRESH) == {p.refresh for p in REGISTRY if p.china and p.refresh}
    assert set(INSTANCE_IDS) == set(NATIVE_PROVIDERS)  # a native cloud's instances can be stopped by id
    for entry in REGISTRY:
        assert entry.price_sources, f"{entry.name} has no price source"
        assert entry.name in PROVIDERS and (entry.name in CHINA_PROVIDERS) == entry.china


def test_every_bundled_row_comes_from_one_of_its_providers_price_sources(catalog):
    rows = catalog.offers[["provider", "source"]].drop_duplicates().itertuples(index=False)
    strays = {(p, s) for p, s in rows if s not in provider(p).price_sources}
    assert strays == set()


def test_the_jupyterlab_sidebar_keeps_no_list_of_providers():
    """Its Provider filter asks the server's `providers` route (the registry); a TypeScript literal naming two or
    more providers would be a second list."""
    lists = []
    for path in sorted((ROOT / "labextension/src").glob("*.ts")):
        for literal in re.findall(r"\[([^\[\]]*)\]", path.read_text(encoding="utf-8")):
            named = set(re.findall(r"'([a-z]+)'", literal)) & set(PROVIDERS)
            if len(named) >= 2:
                lists.append((path.name, sorted(named)))
    assert lists == []
    assert "requestAPI<{ providers: Provider[] }>('providers')" in (ROOT / "labextension/src/quote.ts").read_text()


def test_the_cli_refreshes_each_registry_verb():
    from gpu_assist.cli.parser import build_parser

    parser = build_parser()
    actions = [a for a in parser._subparsers._group_actions[0].choices["catalog"]._subparsers._group_actions[0]
               .choices["refresh"]._actions if a.dest == "provider"]
    assert set(REFRESH_VERBS) <= set(actions[0].choices)


def test_an_unknown_provider_is_an_error_never_aws():
    from gpu_assist.commands import lifecycle
    from gpu_assist.lifecycle.policy import Policy

    with pytest.raises(PolicyError, match="unknown provider 'digitalocean'"):
        provider("digitalocean")
    assert cloud_of("droplet-1") is None
    built = lifecycle.clouds(Policy())
    assert set(built.by_provider) == {*LAUNCH_PROVIDERS, GATE_CLUSTERS}  # and the engine, for what the gate let through
    with pytest.raises(PolicyError, match="launches on gcp are off"):
        built.of("gcp", launching=True)
    with pytest.raises(PolicyError, match="launches on lium are off"):
        built.of("lium")


def test_a_launch_cloud_without_a_provisioner_is_an_error(monkeypatch):
    from gpu_assist.commands import lifecycle
    from gpu_assist.lifecycle.policy import Policy

    monkeypatch.setattr(lifecycle, "LAUNCH_PROVIDERS", (*LAUNCH_PROVIDERS, "newcloud"))
    with pytest.raises(PolicyError, match="no provisioner for newcloud"):
        lifecycle.clouds(Policy())


def test_the_engine_launches_exactly_the_catalog_clouds_skypilot_does_that_have_no_native_provisioner():
    from sky.utils import registry  # SkyPilot 0.14's own list of the clouds it launches on

    from gpu_assist.clouds.launch.skypilot import SkyPilotProvisioner
    from gpu_assist.commands.lifecycle import PROVISIONERS
    from gpu_assist.lifecycle.policy import Policy

    skypilot_clouds = set(registry.CLOUD_REGISTRY)
    assert set(ENGINE_PROVIDERS) == {p.name for p in REGISTRY if p.name in skypilot_clouds} - set(NATIVE_PROVIDERS)
    for name in ENGINE_PROVIDERS:
        engine = PROVISIONERS[name](Policy())
        assert isinstance(engine, SkyPilotProvisioner) and engine.cloud.provider == name
    for entry in REGISTRY:  # a cloud neither route reaches says so, and why
        assert (not_launchable(entry.name) is None) == (entry.name in LAUNCH_PROVIDERS)
    assert "SkyPilot 0.14, the launch engine, does not launch on it" in str(not_launchable("lium"))


def test_every_bundled_offer_of_a_launch_cloud_is_in_the_policys_default_gpu_families(catalog):
    """The default `allowed_instance_types` (each launch cloud's `gpu_types`) lets every GPU offer of the catalog be
    asked for, and no general-purpose type of the same clouds."""
    import fnmatch

    offers = catalog.offers[["provider", "instance_type"]].drop_duplicates().itertuples(index=False)
    outside = {(p, t) for p, t in offers if p in ENGINE_PROVIDERS
               and not any(fnmatch.fnmatchcase(t, pattern) for pattern in GPU_INSTANCE_TYPES)}
    assert outside == set()
    for general in ("n2-standard-8", "e2-medium", "Standard_D4s_v3", "Standard_B2s", "VM.Standard.E4.Flex",
                    "m5.large", "t3.micro", "c5.xlarge"):
        assert not any(fnmatch.fnmatchcase(general, pattern) for pattern in GPU_INSTANCE_TYPES), general
