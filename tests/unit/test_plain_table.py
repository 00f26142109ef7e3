"""The plain-Python table prints exactly what the rich table would, for real quotes and plans."""

from unittest import mock

import pytest

from gpu_assist import commands
from gpu_assist.catalog import load_catalog
from gpu_assist.render import tables, text

TEXTS = [f"quote {n}x{gpu} {hours} {extra}" for n in (1, 8) for gpu in ("A100", "H100", "T4")
         for hours in ("1h", "1mo") for extra in ("", "list", "top=all", "currency=CNY")]
TEXTS += ["recommend train 7B tokens=20B deadline=72h", "recommend finetune 70B lora"]


@pytest.fixture(scope="module")
def context():
    catalog = load_catalog(cache_dir=None)
    return commands.Context(catalog_loader=lambda: catalog)


@pytest.mark.parametrize("words", TEXTS)
def test_plain_table_matches_rich(context, words):
    result = commands.run(commands.parse_command(words, context.catalog.gpus), context)
    fast = text.render(result)
    with mock.patch.object(tables, "_plain_table", lambda *args, **kwargs: None):
        assert fast == text.render(result)
