"""The capacity arithmetic (vLLM 0.32's grouping and block accounting) on small cases
computed by hand here."""

from __future__ import annotations

import math

import pytest

from registry.checkpoint.models import AttentionLayer, AttentionShape
from registry.engines.vllm.resolve.capacity import (
    Layout,
    NotModelled,
    check_capacity,
    layer_windows,
)

GIB = 1 << 30


def shape(kinds: str, window: int = 128, heads: int = 2, head_dim: int = 64) -> AttentionShape:
    """'s' = sliding, 'g' = global, one letter per layer."""
    layers = [AttentionLayer(index=i, kind="sliding" if k == "s" else "global",
                             window=window if k == "s" else None) for i, k in enumerate(kinds)]
    return AttentionShape(num_layers=len(layers), num_kv_heads=heads, head_dim=head_dim,
                          layers=layers)


def test_uniform_model_one_group() -> None:
    s = shape("gggg")
    layout = Layout(tp=1, block_size=128, max_model_len=1000, in_flight_tokens=None)
    memory = 1.0  # GiB
    block = 4 * 128 * 2 * 2 * 64 * 2  # layers x tokens x K,V x heads x head_dim x bf16
    blocks = GIB // block
    tokens = int(blocks / math.ceil(1000 / 128) * 1000)  # not blocks * 128: whole requests
    check = check_capacity(layer_windows(s, None, None, True), s, layout, tokens, memory, [])
    assert check.element_bytes == 2
    two = next(p for p in check.predictions if p.element_bytes == 2)
    assert (two.bytes_per_block, two.blocks, two.tokens) == (block, blocks, tokens)


def test_gpt_oss_like_pattern_pads_to_the_larger_bucket() -> None:
    """12 sliding + 13 full: 13 < 1.5 x 12, so both buckets form one group of 13."""
    s = shape("s" * 12 + "g" * 13)
    layout = Layout(tp=1, block_size=16, max_model_len=4096, in_flight_tokens=2048)
    check = check_capacity(layer_windows(s, None, None, True), s, layout, 1000, 1.0, [])
    assert "groups of 13" in check.groups
    two = next(p for p in check.predictions if p.element_bytes == 2)
    sliding_blocks = math.ceil((128 - 1 + 2048) / 16) + 1
    assert two.blocks_per_request == 4096 // 16 + sliding_blocks


def test_a_disabled_hybrid_manager_allocates_every_layer_in_full() -> None:
    s = shape("sgsg")
    assert layer_windows(s, None, None, hybrid_manager=False) == [None] * 4
    assert layer_windows(s, shape("ss"), "dflash", True) == [128, None, 128, None, None, None]
    assert layer_windows(s, shape("ss"), "eagle", True) == [128, None, 128, None, 128, 128]


def test_what_is_not_modelled_says_why() -> None:
    s = shape("sg")
    with pytest.raises(NotModelled, match="max_num_batched_tokens"):
        check_capacity(layer_windows(s, None, None, True), s,
                       Layout(tp=1, block_size=16, max_model_len=64), 10, 1.0, [])
    with pytest.raises(NotModelled, match="TP 3"):
        check_capacity([None], shape("g", heads=8), Layout(tp=3, block_size=16,
                                                           max_model_len=64), 10, 1.0, [])
    with pytest.raises(NotModelled, match="page sizes"):
        layer_windows(s, shape("g", head_dim=128), "eagle", True)


@pytest.mark.parametrize("version, asynchronous, held", [
    ("0.25.0", True, 2048), ("0.25.0", False, 2048), ("0.32.0", True, 4096),
    ("0.32.0", False, 2048), ("0.1.dev1267+g6ae34833d", True, 4096)])
def test_in_flight_tokens_follow_the_engine_versions_allocator(version, asynchronous,
                                                               held) -> None:
    from registry.engines.vllm.resolve.precision import in_flight_tokens

    assert in_flight_tokens(version, 2048, asynchronous) == held


def test_the_h200_sliding_window_run_fits_vllm_025s_allocator() -> None:
    """vLLM 0.25.0, async scheduling on: 305,889 blocks of 4 layers x 16 tokens; per request
    2,048 blocks for the full layers and ceil((511 + 2048) / 16) + 1 = 161 for each of 5
    sliding groups. The engine's 3,512,906 tokens fit that to 0.9999, so the cross-check
    confirms 2-byte elements and leaves no note (a doubled batch missed by 1.224)."""
    from registry.resolve import resolve_run
    from tests.conftest import ROOT

    host = ROOT / "tests" / "data" / "gpu-runs" / "h200x1-20261201"
    identity = resolve_run(host / "runs" / "hybrid",
                           checkpoint=host / "logs" / "checkpoints" / "hybrid-2b" / "config.json")
    kv = identity.fields["precision.kv_cache"]
    assert kv.resolved == "bfloat16" and kv.note is None, kv.note
    capacity = next(e.text for e in kv.evidence if e.source == "capacity") or ""
    assert "305,889 blocks / 2853 per request" in capacity  # 2048 + 5 x 161
    assert "(reported/predicted 1.000)" in capacity
