"""The sized checkpoint builder (tools/sized_checkpoint.py), shrunk to run on a CPU: the
layout, the FP8 scheme with per-layer scales, and the KV arithmetic the registry reads
from it, on the same code path the GPU host runs at full size."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import sized_checkpoint as sized

pytest.importorskip("torch")


def small(name: str) -> sized.Shape:
    """The named shape with fewer, narrower layers; head_dim and grouping kept."""
    return replace(sized.MODELS[name], hidden=256, intermediate=512, layers=6, heads=4,
                   kv_heads=2)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sized")
    for name in ("llama-3b-kv-fp8", "hybrid-2b"):
        assert sized.build(out, name, small(name), "cpu")
    return out


def test_full_shapes_are_realistic() -> None:
    for name, shape in sized.MODELS.items():
        assert shape.head_dim == 128 and shape.heads > shape.kv_heads  # grouped KV heads
        assert 1.9e9 < sized.parameters(shape) < 3.2e9, name
    assert sized.MODELS["hybrid-2b"].sliding_window == 512


def test_every_gpu_recipe_fits_its_checkpoint() -> None:
    """A recipe's max_model_len within the model's positions: vLLM refuses it otherwise,
    as the H200 did for the hybrid lane when its checkpoint said 8192 (docs/gpu.md)."""
    from registry.recipe import load_recipe

    checked = 0
    for path in sorted((ROOT / "recipes").glob("*-cuda*.toml")):
        recipe = load_recipe(path)
        name = Path(recipe.model.path or "").name
        if name in sized.MODELS:
            limit = sized.config(sized.MODELS[name]).max_position_embeddings
            assert recipe.engine.args["max_model_len"] <= limit, path.name
            checked += 1
    assert checked >= 8


def test_parameter_count_matches_the_weights(built) -> None:
    from registry.checkpoint.inspect import inspect_checkpoint

    stats = inspect_checkpoint(built / "hybrid-2b").tensors
    assert stats is not None and stats.dtypes == {"BF16": stats.count}
    assert stats.bytes == 2 * sized.parameters(small("hybrid-2b"))


def test_kv_fp8_variant_has_the_scheme_and_one_scale_per_layer_and_kind(built) -> None:
    from safetensors import safe_open

    folder = built / "llama-3b-kv-fp8"
    config = json.loads((folder / "config.json").read_text())
    scheme = config["quantization_config"]["kv_cache_scheme"]
    assert scheme["type"] == "float" and scheme["num_bits"] == 8
    assert config["head_dim"] == 128 and config["num_key_value_heads"] == 2
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    scales = sorted(k for k in index["weight_map"] if k.endswith(("k_scale", "v_scale")))
    assert len(scales) == 2 * 6
    for key in scales:
        with safe_open(folder / index["weight_map"][key], "pt") as f:
            value = f.get_tensor(key).float()
        assert value.shape == (1,) and 0 < value.item() < 1  # amax / 448 of real activations


def test_the_registry_reads_the_kv_layout(built) -> None:
    from registry.checkpoint.inspect import inspect_checkpoint

    llama = inspect_checkpoint(built / "llama-3b-kv-fp8")
    assert (llama.attention.head_dim, llama.attention.num_kv_heads) == (128, 2)
    assert llama.kv_scales.verdict == "calibrated" and llama.kv_scales.count == 12
    assert llama.quantization.kv_cache_scheme is not None
    hybrid = inspect_checkpoint(built / "hybrid-2b").attention
    kinds = [(layer.kind, layer.window) for layer in hybrid.layers]
    assert kinds == [("sliding", 512)] * 5 + [("global", None)]  # five sliding to one global


def test_a_second_build_is_skipped(built) -> None:
    assert not sized.build(built, "hybrid-2b", small("hybrid-2b"), "cpu")
    stamp = json.loads((built / "hybrid-2b" / sized.STAMP).read_text())
    assert stamp["device"] == "cpu" and stamp["shape"]["layers"] == 6


def test_transformers_no_limit_sentinel_is_read_as_none(built) -> None:
    from registry.checkpoint.inspect import inspect_checkpoint

    folder = built / "llama-3b-kv-fp8"  # saved by transformers: the sentinel is there
    assert b"1000000000000000019884624838656" in (folder / "tokenizer_config.json").read_bytes()
    tokenizer = inspect_checkpoint(folder).tokenizer
    assert tokenizer is not None and tokenizer["model_max_length"] is None
    assert tokenizer["eos_token"] == "</s>"
