"""Model names: the bundled, sourced table and the KV cache each attention kind keeps, as a user meets them in
`recommend serve llama-3.1-70b users=500`."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from support import TODAY

from gpu_assist.cli import main
from gpu_assist.commands.grammar import parse_command
from gpu_assist.errors import ParseError
from gpu_assist.plan.models import ATTENTION_KINDS, load_models, name_key
from gpu_assist.plan.recommendation import recommend
from gpu_assist.plan.sizing import Part, kv_bytes_per_token, memory_needed, training_flops
from gpu_assist.plan.sizing.memory import transformer_shape
from gpu_assist.plan.workload import parse_workload
from gpu_assist.render import sizing as _sizing  # noqa: F401 - the words of sizing's facts
from gpu_assist.render.notes import words

pytestmark = pytest.mark.usefixtures("pinned_wall_clock")


def test_the_table_loads_and_every_row_cites_its_config_with_the_date_it_was_read():
    models = load_models().models
    assert len(models) >= 25
    for model in models:
        assert re.match(r"https://huggingface\.co/[\w.-]+/[\w.-]+/blob/main/config\.json$", model.config_url), model
        assert model.read_from.strip(), model.name
        assert dt.date.fromisoformat(model.read_on) <= dt.date(2026, 12, 31)
        assert model.attention in ATTENTION_KINDS
        assert model.heads % model.kv_heads == 0 and model.active_params <= model.params
        assert (model.kv_latent is not None) == (model.attention == "mla")
        assert 0 <= model.windowed_layers < model.layers and bool(model.windowed_layers) == bool(model.window_tokens)
    owners: dict[str, set[str]] = {}
    for model in models:
        for name in (model.name, *model.aliases):
            owners.setdefault(name_key(name), set()).add(model.name)
    assert all(len(rows) == 1 for rows in owners.values()), "two rows share a spelling"


@pytest.mark.parametrize("typed", ["llama-3.1-70b", "llama3.1-70b", "Meta-Llama-3.1-70B-Instruct", "LLAMA-3.1-70B",
                                   "meta-llama/Llama-3.1-70B", "llama_3.1_70b"])
def test_common_spellings_name_one_row(catalog, typed):
    assert parse_workload(f"serve {typed}", catalog.gpus).model.name == "Llama-3.1-70B"


def test_llama_3_1_70b_for_500_users_sizes_its_kv_cache_from_grouped_query_attention(catalog, capsys):
    """Llama-3.1-70B's published shape (https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json, as
    Meta's llama-models sku_list.py gives it: 80 layers, 64 heads, 8 KV heads, head size 8192 / 64 = 128): each
    token keeps K and V for 8 KV heads of 128 values on 80 layers in 16 bits."""
    grouped_query = 2 * 80 * 8 * 128 * 2  # 327,680 bytes
    workload = parse_command("recommend serve llama-3.1-70b users=500", catalog.gpus).workload
    memory = memory_needed(workload)
    per_token = memory.part(Part.KV_CACHE) / (500 * workload.assumptions.context_tokens)
    assert abs(per_token - grouped_query) <= 0.05 * grouped_query
    assert memory.part(Part.WEIGHTS) == 70e9 * 2
    assert main(["recommend", "serve", "llama-3.1-70b", "users=500"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("serve Llama-3.1-70B bf16")
    assert "(Llama-3.1-70B's grouped-query attention: 328 KB of KV cache a token)" in " ".join(out.split())
    assert main(["recommend", "serve", "llama-3.1-70b", "users=500", "explain"]) == 0
    explained = " ".join(capsys.readouterr().out.split())
    assert "grouped-query attention, 8 KV heads × 128; config: meta-llama/Llama-3.1-70B): 328 KB/token" in explained


def test_llama_3_70b_is_accepted(catalog, capsys):
    assert main(["recommend", "serve", "llama-3-70b", "users=500"]) == 0
    assert capsys.readouterr().out.startswith("serve Llama-3-70B bf16")


def test_deepseek_v3_caches_its_compressed_latent(catalog):
    """DeepSeek-V3 (inference/configs/config_671B.json of deepseek-ai/DeepSeek-V3: 61 layers, kv_lora_rank 512,
    qk_rope_head_dim 64) caches one 576-value latent per layer and token, not K and V for 128 heads."""
    workload = parse_workload("serve deepseek-v3 users=10", catalog.gpus)
    assert kv_bytes_per_token(workload) == 61 * (512 + 64) * 2
    assert kv_bytes_per_token(workload) < 2 * 61 * 128 * 128 * 2 / 50
    assert memory_needed(workload).part(Part.WEIGHTS) == 671e9 * 2  # all experts are held


def test_gemma_caches_only_its_window_on_its_local_layers(catalog):
    """Gemma-2-9B (google-deepmind/gemma _gemma.py: 42 layers alternating sliding-window and global attention,
    window 4,096, 8 KV heads of 256) at 8k of context keeps half the tokens on its 21 windowed layers; Gemma-3-27B
    (62 layers of 5 local : 1 global, so 52 windowed to 1,024; 16 KV heads of 128) at 4,096 a quarter."""
    gemma2 = parse_workload("serve gemma-2-9b context=8k", catalog.gpus)
    assert gemma2.assumptions.context_tokens == 8000
    per_layer = 2 * 8 * 256 * 2
    assert kv_bytes_per_token(gemma2) == pytest.approx(per_layer * (21 + 21 * 4096 / 8000))
    gemma3 = parse_workload("serve gemma-3-27b-it", catalog.gpus)
    assert kv_bytes_per_token(gemma3) == 2 * 16 * 128 * 2 * (10 + 52 * 1024 / 4096)


def test_mixtral_is_held_by_all_its_parameters_and_computes_with_its_active_ones(catalog):
    """Mixtral-8x7B: 47B parameters, 13B active per token (Mixtral of Experts, arXiv 2401.04088)."""
    served = memory_needed(parse_workload("serve mixtral-8x7b", catalog.gpus))
    assert served.part(Part.WEIGHTS) == 47e9 * 2
    trained = parse_workload("train mixtral-8x7b tokens=1B", catalog.gpus)
    assert memory_needed(trained).part(Part.MODEL_STATES) == 16 * 47e9
    assert training_flops(trained, catalog.gpus) == 6 * 13e9 * 1e9
    result = recommend(trained, catalog, today=TODAY, top=1)
    assert any("6 × 13B active × 1B tokens" in words(fact) for fact in result.assumptions)


def test_an_unknown_name_suggests_the_nearest_and_the_size_form(catalog, capsys):
    with pytest.raises(ParseError) as caught:
        parse_workload("serve llama-4-70b users=500", catalog.gpus)
    message = str(caught.value)
    assert "unknown model 'llama-4-70b'" in message and "Llama-3-70B" in message and "(70B)" in message
    assert "example: recommend serve llama-3.1-70b users=500" in message
    with pytest.raises(ParseError, match="nearest known: Llama-3.1-70B"):
        parse_workload("serve lama-3.1-70b", catalog.gpus)
    assert main(["recommend", "serve", "qwen-9-7b"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_the_size_form_is_unchanged_and_a_later_size_replaces_a_name(catalog):
    workload = parse_workload("serve 70B users=50", catalog.gpus)
    layers, d_model = transformer_shape(70e9)
    assert workload.model is None and kv_bytes_per_token(workload) == 2 * layers * d_model * 2 / 8
    assert parse_workload("serve llama-3.1-70b 8B", catalog.gpus).model is None
    assert parse_workload("serve 8B llama-3.1-70b", catalog.gpus).params == 70e9


def test_a_context_beyond_the_model_is_refused_and_the_default_is_cut_to_it(catalog):
    assert parse_workload("serve opt-66b", catalog.gpus).assumptions.context_tokens == 2048
    with pytest.raises(ParseError, match="OPT-13B reads at most 2,048 tokens of context"):
        parse_workload("serve opt-13b context=8k", catalog.gpus)


def test_a_row_without_its_source_is_refused(tmp_path):
    from gpu_assist.errors import CatalogError
    from gpu_assist.plan.models import TABLE

    header, first, *_ = TABLE.read_text(encoding="utf-8").splitlines()
    uncited = tmp_path / "models.csv"
    uncited.write_text("\n".join([header, first.replace(",2026-12-06", ",")]), encoding="utf-8")
    with pytest.raises(CatalogError, match="line 2: Llama-2-7B cites no config URL, copy read or date read"):
        load_models(uncited)


def test_falcon_7b_keeps_one_kv_head_by_multi_query_attention(catalog):
    """Falcon-7B (tiiuae/falcon-7b-instruct's config.json: 32 layers, hidden 4544 over 71 heads of 64,
    multi_query true) caches K and V for one head per layer; `bloom` alone names BLOOM-176B."""
    workload = parse_workload("serve falcon-7b", catalog.gpus)
    assert workload.model.attention == "mqa"
    assert kv_bytes_per_token(workload) == 2 * 32 * 1 * 64 * 2
    assert parse_workload("serve bloom", catalog.gpus).model.name == "BLOOM-176B"


def test_every_sizing_fact_has_words():
    """Sizing states facts (plan/sizing/facts.py) and render/sizing.py words each one."""
    import inspect

    from gpu_assist.facts import Fact
    from gpu_assist.plan.sizing import facts as sizing_facts

    kinds = [kind for _, kind in inspect.getmembers(sizing_facts, inspect.isclass)
             if issubclass(kind, Fact) and kind.__module__ == sizing_facts.__name__]
    assert len(kinds) >= 10
    assert [kind.__name__ for kind in kinds if words.dispatch(kind) is words.dispatch(object)] == []
