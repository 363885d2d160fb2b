"""config.json conventions: attention geometry spellings, sliding-window layouts, MoE
and the weight format vocabulary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from registry.checkpoint.config import attention_shape, moe_shape
from registry.checkpoint.quant import quantization
from registry.errors import InvalidInput
from tests.checkpoints import W4A16_GROUP, llama_config

SRC = Path("config.json")


def _kinds(config: dict[str, Any]) -> str:
    """One letter per layer: S sliding, G global."""
    return "".join("S" if x.kind == "sliding" else "G"
                   for x in attention_shape(config, SRC).layers)


@pytest.mark.parametrize(("keys", "kv_heads"), [
    ({"num_key_value_heads": 2}, 2),
    ({"num_key_value_heads": None, "num_kv_heads": 1}, 1),
    ({"num_key_value_heads": None, "n_head_kv": 2}, 2),
    ({"num_key_value_heads": None, "multi_query_attention": True, "multi_query_group_num": 2}, 2),
    ({"num_key_value_heads": None, "multi_query": True}, 1),
    ({"num_key_value_heads": None}, 4),  # no KV key: plain multi-head attention
])
def test_kv_head_spellings(keys: dict[str, Any], kv_heads: int) -> None:
    assert attention_shape(llama_config(**keys), SRC).num_kv_heads == kv_heads


def test_head_dim_falls_back_to_hidden_over_heads() -> None:
    assert attention_shape(llama_config(head_dim=None), SRC).head_dim == 256 // 4


def test_other_spellings_of_layers_and_heads() -> None:
    falcon = {"n_layer": 2, "n_head": 8, "n_head_kv": 2, "hidden_size": 512}
    shape = attention_shape(falcon, SRC)
    assert (shape.num_layers, shape.num_kv_heads, shape.head_dim) == (2, 2, 64)


@pytest.mark.parametrize(("keys", "expected"), [
    ({"layer_types": ["sliding_attention", "full_attention"] * 3, "sliding_window": 64},
     "SGSGSG"),
    ({"layer_types": ["full_attention", "linear_attention"] * 3}, "GGG"),  # no KV in linear
    ({"sliding_window": 64, "sliding_window_pattern": 3}, "SSGSSG"),  # Gemma 3 / Cohere 2
    ({"sliding_window": 64, "model_type": "gemma2"}, "SGSGSG"),  # alternating by default
    ({"sliding_window": 64, "model_type": "gpt_oss"}, "SGSGSG"),
    ({"sliding_window": 64, "model_type": "cohere2"}, "SSSGSS"),
    ({"sliding_window": 64, "sliding_window_pattern": "LLG"}, "SSGSSG"),  # EXAONE 4
    ({"sliding_window": 64, "use_sliding_window": True, "max_window_layers": 4}, "GGGGSS"),
    ({"sliding_window": 64, "use_sliding_window": False, "max_window_layers": 4}, "GGGGGG"),
    ({"sliding_window": 64, "model_type": "mistral"}, "SSSSSS"),  # one window everywhere
    ({"sliding_window": None}, "GGGGGG"),
])
def test_sliding_window_layouts(keys: dict[str, Any], expected: str) -> None:
    assert _kinds(llama_config(layers=6, **keys)) == expected


def test_windows_are_recorded_on_sliding_layers() -> None:
    shape = attention_shape(llama_config(layers=4, sliding_window=512,
                                         sliding_window_pattern=4), SRC)
    assert [x.window for x in shape.layers] == [512, 512, 512, None]


def test_a_multimodal_config_is_read_from_text_config() -> None:
    text = llama_config(layers=3, num_key_value_heads=1, sliding_window=32,
                        layer_types=["sliding_attention", "sliding_attention", "full_attention"])
    config = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
              "text_config": text, "vision_config": {"num_hidden_layers": 27}}
    shape = attention_shape(config, SRC)
    assert (shape.num_layers, shape.num_kv_heads, _kinds(config)) == (3, 1, "SSG")


@pytest.mark.parametrize(("keys", "problem"), [
    ({"num_hidden_layers": None}, "num_hidden_layers: missing"),
    ({"num_attention_heads": "eight"}, "num_attention_heads: 'eight'"),
    ({"layer_types": ["full_attention"]}, "layer_types has 1 entries for 4 layers"),
    ({"layer_types": ["weird_attention"] * 4}, "unknown layer type 'weird_attention'"),
    ({"layer_types": ["sliding_attention"] * 4, "sliding_window": None}, "sliding_window"),
    ({"num_key_value_heads": [1, 2, 1, 2]}, "per-layer KV head counts"),
])
def test_bad_geometry_is_a_clear_error(keys: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem.replace("(", r"\(")):
        attention_shape(llama_config(**keys), SRC)


def test_moe_shape() -> None:
    moe = moe_shape(llama_config(num_local_experts=8, num_experts_per_tok=2))
    assert (moe.num_experts, moe.experts_per_token) == (8, 2)
    deepseek = moe_shape(llama_config(n_routed_experts=256, num_experts_per_tok=8,
                                      n_shared_experts=1, moe_intermediate_size=2048))
    assert (deepseek.num_experts, deepseek.num_shared_experts) == (256, 1)
    assert moe_shape(llama_config()) is None


def _ct(weights: dict[str, Any], activations: dict[str, Any] | None, fmt: str = "") -> str:
    group = {"targets": ["Linear"], "weights": weights, "input_activations": activations}
    q = {"quant_method": "compressed-tensors", "format": fmt, "config_groups": {"g": group}}
    return quantization({"quantization_config": q}, "bfloat16", SRC).weights


INT8 = {"num_bits": 8, "type": "int", "strategy": "channel"}
FP8 = {"num_bits": 8, "type": "float", "strategy": "tensor"}
FP4 = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}


@pytest.mark.parametrize(("weights", "activations", "fmt", "token"), [
    (W4A16_GROUP["weights"], None, "pack-quantized", "int4-w4a16"),
    (INT8, {"num_bits": 8, "type": "int", "dynamic": True}, "int-quantized", "int8-w8a8"),
    (FP8, {"num_bits": 8, "type": "float", "dynamic": True}, "float-quantized", "fp8"),
    (FP8, None, "float-quantized", "fp8"),  # the activations are their own field
    (FP4, FP4, "nvfp4-pack-quantized", "nvfp4-w4a4"),
])
def test_compressed_tensors_weight_tokens(weights, activations, fmt: str, token: str) -> None:
    assert _ct(weights, activations, fmt) == token


@pytest.mark.parametrize(("q", "token"), [
    (None, "bfloat16"),
    ({"quant_method": "fp8", "activation_scheme": "dynamic"}, "fp8"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "int4-w4a16"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128}, "int4-w4a16"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, "nf4"),
    ({"quant_method": "mxfp4"}, "mxfp4"),  # unknown: the method name itself
])
def test_weight_tokens_of_other_methods(q: dict[str, Any] | None, token: str) -> None:
    config = {"quantization_config": q} if q else {}
    assert quantization(config, "bfloat16", SRC).weights == token


@pytest.mark.parametrize(("q", "activations"), [
    ({"quant_method": "fp8", "activation_scheme": "dynamic"}, "fp8"),
    ({"quant_method": "fp8", "activation_scheme": "static"}, "fp8"),
    ({"quant_method": "fp8"}, None),  # no scheme: the config does not say
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {
        "targets": ["Linear"], "weights": FP8,
        "input_activations": {"num_bits": 8, "type": "float", "dynamic": True}}}}, "fp8"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {
        "targets": ["Linear"], "weights": FP8, "input_activations": None}}}, "bfloat16"),
])
def test_fp8_weights_and_their_activations_are_two_fields(q: dict[str, Any],
                                                         activations: str | None) -> None:
    found = quantization({"quantization_config": q}, "bfloat16", SRC)
    assert (found.weights, found.activations) == ("fp8", activations)


def test_a_kv_scheme_alone_leaves_the_weights_unquantized() -> None:
    q = {"quant_method": "compressed-tensors", "config_groups": {},
         "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor"}}
    found = quantization({"quantization_config": q}, "bfloat16", SRC)
    assert found.weights == "bfloat16" and found.kv_cache_scheme.num_bits == 8


def test_a_bad_kv_cache_scheme_is_a_clear_error() -> None:
    q = {"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": "eight"}}
    with pytest.raises(InvalidInput, match=r"kv_cache_scheme\.num_bits"):
        quantization({"quantization_config": q}, "bfloat16", SRC)
