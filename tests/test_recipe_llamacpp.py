"""llama.cpp recipes: engine.name "llama.cpp", llama-server's long option names (aliases
normalised), [precision] weights as a GGUF type and K and V cache types, each checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.engines.llamacpp.args import arg_table, render_argv
from registry.errors import InvalidRecipe
from registry.recipe import load_recipe
from tests.recipe_factory import MINIMAL

RECIPE = MINIMAL.replace('path = "/models/tiny"', 'path = "/models/tiny.gguf"').replace(
    'weights = "bfloat16"\nkv_cache = "bfloat16"\n',
    'weights = "Q8_0"\n{precision}\n\n[engine]\nname = "llama.cpp"\n\n[engine.args]\n{args}\n')


def write(tmp_path: Path, precision: str = 'kv_cache = "f16"', args: str = "") -> Path:
    (tmp_path / "suite.jsonl").write_text('{"id": "a", "prompt": "hi"}\n')
    path = tmp_path / "r.toml"
    path.write_text(RECIPE.format(precision=precision, args=args))
    return path


def test_aliases_become_long_names_and_precision_fills_the_cache_types(tmp_path: Path) -> None:
    recipe = load_recipe(write(tmp_path, 'kv_cache_k = "q8_0"\nkv_cache_v = "f16"',
                               'c = 2048\n"-fa" = "on"\nngl = 0\nno-warmup = true'))
    args = recipe.engine.args
    assert args == {"ctx-size": 2048, "flash-attn": "on", "gpu-layers": 0, "warmup": False,
                    "model": "/models/tiny.gguf", "cache-type-k": "q8_0", "cache-type-v": "f16"}
    assert recipe.precision.kv_label() == "q8_0/f16"
    argv = render_argv(args)
    assert argv[argv.index("--cache-type-k") + 1] == "q8_0" and "--no-warmup" in argv


def test_kv_cache_names_both(tmp_path: Path) -> None:
    recipe = load_recipe(write(tmp_path))
    assert (recipe.precision.kv_cache_k, recipe.precision.kv_cache_v) == ("f16", "f16")
    assert recipe.precision.kv_label() == "f16"


@pytest.mark.parametrize(("precision", "args", "message"), [
    ('kv_cache = "float16"', "", "llama.cpp names its cache types"),
    ('kv_cache_k = "q8_0"', "", r"declare precision.kv_cache \(K and V\) or both"),
    ('kv_cache = "f16"', 'ctk = "q8_0"', "conflicts with precision.kv_cache_k"),
    ('kv_cache = "f16"', "ctx-sise = 10", "did you mean 'ctx-size'"),
    ('kv_cache = "f16"', "port = 8080", "the executor chooses this argument"),
    ('kv_cache = "f16"', "metrics = 1", "is a switch"),
    ('kv_cache = "f16"', 'c = 1\nctx-size = 2', "given twice"),
    ('kv_cache = "q7"', "", "kv_cache"),
])
def test_bad_llama_recipes_get_one_clear_message(tmp_path: Path, precision: str, args: str,
                                                 message: str) -> None:
    with pytest.raises(InvalidRecipe, match=message):
        load_recipe(write(tmp_path, precision, args))


def test_vllm_recipes_keep_one_kv_cache(tmp_path: Path) -> None:
    path = write(tmp_path).read_text().replace('name = "llama.cpp"', 'name = "vllm"')
    (tmp_path / "v.toml").write_text(path.replace("[engine.args]\n", "[engine.args]\n"))
    with pytest.raises(InvalidRecipe, match="vLLM needs one of"):
        load_recipe(tmp_path / "v.toml")


def test_the_table_is_the_server_s() -> None:
    table = arg_table()
    assert table["cache-type-k"]["aliases"] == ["-ctk"]
    assert table["flash-attn"]["kind"] == "value"
    assert table["kv-unified"]["kind"] == "bool"
    assert table["metrics"]["kind"] == "flag"
