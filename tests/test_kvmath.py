"""KV payload arithmetic: the Laguna figures from the lab's note through `registry kv`,
sliding windows at long context, tensor parallelism and scale metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registry.checkpoint.kvmath import element_bytes, kv_bytes_per_token
from registry.checkpoint.models import AttentionLayer, AttentionShape
from registry.errors import InvalidInput
from tests.conftest import ROOT

KIB = 1024
IDS = ROOT / "identities" / "checkpoints"
TARGET = IDS / "laguna-s-2.1-int4.config.json"
DRAFT = IDS / "laguna-s-2.1-dflash-int4.config.json"


def _kv(cli, *args: str | Path) -> dict:
    r = cli("kv", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_the_laguna_config_has_the_lab_shape(cli) -> None:
    info = json.loads(cli("inspect", TARGET, "--json").stdout)["checkpoint"]
    layers = info["attention"]["layers"]
    assert len(layers) == 48
    assert sum(x["kind"] == "sliding" and x["window"] == 512 for x in layers) == 36
    assert sum(x["kind"] == "global" for x in layers) == 12
    assert [x["kind"] for x in layers[:4]] * 12 == [x["kind"] for x in layers]  # 3:1 pattern
    assert (info["attention"]["num_kv_heads"], info["attention"]["head_dim"]) == (8, 128)
    assert info["torch_dtype"] == "bfloat16" and info["quantization"]["weights"] == "int4-w4a16"
    assert info["quantization"]["kv_cache_scheme"]["num_bits"] == 8


@pytest.mark.parametrize(("kv_dtype", "layer", "target", "with_draft", "per_rank"), [
    ("bfloat16", 4096, 192 * KIB, 216 * KIB, 54 * KIB),
    ("fp8_e4m3", 2048, 96 * KIB, 108 * KIB, 27 * KIB),
])
def test_the_laguna_figures(cli, kv_dtype: str, layer: int, target: int, with_draft: int,
                            per_rank: int) -> None:
    out = _kv(cli, TARGET, "--kv-dtype", kv_dtype, "--draft", DRAFT, "--tp", "4")
    assert out["values_per_token_per_layer"] == 2 * 8 * 128 == 2048
    assert out["per_token_per_layer_bytes"] == layer
    assert out["per_token_bytes"] == target
    assert out["per_token_bytes_with_draft"] == with_draft
    assert out["per_rank_bytes"] == per_rank
    assert out["kv_heads_per_rank"] == 2


def test_fp8_scale_metadata_is_counted_separately(cli) -> None:
    out = _kv(cli, TARGET, "--kv-dtype", "fp8_e4m3", "--draft", DRAFT, "--tp", "4")
    assert out["scale_bytes_per_rank"] == (48 + 6) * 2 * 4  # one float32 k and v per layer
    assert out["per_token_bytes"] == 96 * KIB  # not inflated by the scales
    bf16 = _kv(cli, TARGET, "--kv-dtype", "bfloat16")
    assert bf16["scale_bytes_per_rank"] == 0 and "scale_note" not in bf16


def test_by_default_the_checkpoint_request_is_used(cli) -> None:
    assert _kv(cli, TARGET)["kv_dtype"] == "fp8_e4m3"  # the kv_cache_scheme, not torch_dtype
    assert _kv(cli, DRAFT)["kv_dtype"] == "bfloat16"  # no scheme: its torch_dtype


def test_sliding_layers_stop_growing_at_their_window(cli) -> None:
    out = _kv(cli, TARGET, "--kv-dtype", "bfloat16", "--draft", DRAFT, "--tp", "4",
              "--context", "256", "--context", "512", "--context", "8192")
    short, window, long = out["contexts"]
    layer = 4096
    # Below the window every layer holds every token.
    assert short["bytes"] == short["bytes_uncapped"] == 256 * 216 * KIB
    assert window["bytes"] == window["bytes_uncapped"] == 512 * 216 * KIB
    # At 8K: 12 global + 6 draft layers hold 8192 tokens, 36 sliding layers hold 512.
    assert long["bytes"] == layer * ((12 + 6) * 8192 + 36 * 512)
    assert long["bytes_uncapped"] == 8192 * 216 * KIB
    assert long["per_rank_bytes"] * 4 == long["bytes"]


def test_tensor_parallel_beyond_the_kv_heads_replicates_them() -> None:
    shape = _shape(kv_heads=2, layers=1)
    assert kv_bytes_per_token(shape, "bfloat16", tp=4).kv_heads_per_rank == 1
    assert kv_bytes_per_token(shape, "bfloat16", tp=4).per_rank_bytes == 2 * 1 * 64 * 2
    with pytest.raises(InvalidInput, match="does not split 2 KV heads evenly"):
        kv_bytes_per_token(shape, "bfloat16", tp=3)
    with pytest.raises(InvalidInput, match="does not split 8 KV heads evenly"):
        kv_bytes_per_token(_shape(kv_heads=8, layers=1), "bfloat16", tp=3)


def test_per_head_scales_and_nvfp4_block_scales() -> None:
    shape = _shape(kv_heads=8, layers=4)
    head = kv_bytes_per_token(shape, "fp8", tp=2, scale_strategy="head")
    assert head.scale_bytes_per_rank == 4 * 2 * 4 * 4  # layers x (k, v) x heads per rank x f32
    fp4 = kv_bytes_per_token(shape, "nvfp4")
    assert fp4.per_token_per_layer_bytes == 2 * 8 * 64 // 2
    assert fp4.scale_bytes_per_token == 4 * 2 * 8 * 64 // 16


@pytest.mark.parametrize(("dtype", "size"), [
    ("bfloat16", 2), ("float16", 2), ("torch.bfloat16", 2), ("float32", 4), ("fp8", 1),
    ("fp8_e4m3", 1), ("fp8_e5m2", 1), ("nvfp4", 0.5),
])
def test_element_bytes(dtype: str, size: float) -> None:
    assert element_bytes(dtype) == size


def test_auto_is_not_a_dtype(cli) -> None:
    with pytest.raises(InvalidInput, match="'auto': not a storage dtype"):
        element_bytes("auto")
    r = cli("kv", TARGET, "--kv-dtype", "auto")
    assert r.exit_code == 4 and "resolve `auto`" in r.stderr and "Traceback" not in r.stderr


def test_bad_numbers_are_clear_errors(cli) -> None:
    assert cli("kv", TARGET, "--tp", "3").exit_code == 4
    r = cli("kv", TARGET, "--context", "0")
    assert r.exit_code == 4 and "context length 0" in r.stderr


def test_human_output(cli) -> None:
    r = cli("kv", TARGET, "--kv-dtype", "bfloat16", "--draft", DRAFT, "--tp", "4")
    assert r.exit_code == 0 and "216.00 KiB" in r.stdout and "54.00 KiB" in r.stdout


def _shape(kv_heads: int, layers: int) -> AttentionShape:
    return AttentionShape(num_layers=layers, num_kv_heads=kv_heads, head_dim=64,
                          layers=[AttentionLayer(index=i, kind="global") for i in range(layers)])
