"""Checkpoint inspection on tiny checkpoints built by hand: every KV-scale verdict,
scale values read from the tensor bytes, sharded checkpoints, config-only input."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from registry.checkpoint.inspect import inspect_checkpoint
from registry.checkpoint.safetensors import DECODERS
from tests.checkpoints import T, build, fp8_config, kv_scales, llama_config, weights

ALL = [0, 1, 2, 3]


def test_plain_bf16_has_no_kv_scheme(tmp_path: Path) -> None:
    info = inspect_checkpoint(build(tmp_path / "m", llama_config(), weights()))
    assert info.architecture == "LlamaForCausalLM" and info.torch_dtype == "bfloat16"
    assert info.quantization.weights == "bfloat16" and info.quantization.method is None
    assert info.quantization.kv_cache_scheme is None
    assert info.kv_scales.verdict == "none" and info.kv_scales.count == 0
    assert info.tensors.count == 17 and info.tensors.dtypes == {"BF16": 17}
    assert info.tensors.bytes == sum(len(t.data) for t in weights().values())
    a = info.attention
    assert (a.num_layers, a.num_kv_heads, a.head_dim, a.global_layers) == (4, 2, 64, 4)
    assert info.generation_config == {"bos_token_id": 1, "eos_token_id": 2}
    assert info.tokenizer["class"] == "PreTrainedTokenizerFast"


def test_calibrated_scales_are_read_from_the_bytes(tmp_path: Path) -> None:
    info = inspect_checkpoint(build(tmp_path / "m", fp8_config(), weights() | kv_scales(ALL)))
    s = info.kv_scales
    assert s.verdict == "calibrated" and s.count == 8
    assert s.layers_with_k == ALL and s.layers_with_v == ALL
    k3 = next(t for t in s.tensors if t.name == "model.layers.3.self_attn.k_scale")
    assert (k3.layer, k3.kind, k3.dtype, k3.file) == (3, "k_scale", "F32", "model.safetensors")
    assert k3.values == [struct.unpack("<f", struct.pack("<f", 0.04))[0]]
    scheme = info.quantization.kv_cache_scheme
    assert (scheme.num_bits, scheme.type, scheme.strategy) == (8, "float", "tensor")
    assert (scheme.symmetric, scheme.dynamic, scheme.observer) == (True, False, "minmax")
    assert info.quantization.weights == "int4-w4a16"
    assert info.torch_dtype == "bfloat16"  # the KV scheme asks for FP8 all the same


def test_a_scheme_without_scales_is_missing(tmp_path: Path) -> None:
    info = inspect_checkpoint(build(tmp_path / "m", fp8_config(), weights()))
    assert info.kv_scales.verdict == "missing" and info.kv_scales.tensors == []


def _without(scales: dict[str, T], name: str) -> dict[str, T]:
    return {k: v for k, v in scales.items() if k != name}


@pytest.mark.parametrize("scales", [
    kv_scales([0, 1]),
    kv_scales(ALL, kinds=("k",)),
    _without(kv_scales(ALL), "model.layers.2.self_attn.v_scale"),
], ids=["some-layers", "k-only", "one-v-missing"])
def test_partial_scales(tmp_path: Path, scales: dict[str, T]) -> None:
    info = inspect_checkpoint(build(tmp_path / "m", fp8_config(), weights() | scales))
    assert info.kv_scales.verdict == "partial"


def test_scales_without_a_scheme_are_listed_but_the_verdict_is_none(tmp_path: Path) -> None:
    info = inspect_checkpoint(build(tmp_path / "m", llama_config(), weights() | kv_scales(ALL)))
    assert info.kv_scales.verdict == "none" and info.kv_scales.count == 8


@pytest.mark.parametrize(("name", "kind", "layer"), [
    ("model.layers.7.self_attn.k_scale", "k_scale", 7),
    ("model.layers.7.self_attn.attn.v_scale", "v_scale", 7),
    ("model.layers.7.self_attn.k_proj.k_scale", "k_scale", 7),  # ModelOpt
    ("model.layers.7.self_attn.v_cache.scale", "v_scale", 7),
    ("transformer.h.7.attn.kv_scale", "kv_scale", 7),  # deprecated: k and v
    ("model.layers.7.self_attn.q_scale", None, None),
    ("model.layers.7.mlp.down_proj.weight_scale", None, None),
    ("model.layers.7.self_attn.k_proj.input_scale", None, None),
])
def test_scale_names(name: str, kind: str | None, layer: int | None) -> None:
    from registry.checkpoint.scales import layer_of, scale_kind

    assert scale_kind(name) == kind
    if kind:
        assert layer_of(name) == layer


def test_deprecated_kv_scale_counts_for_k_and_v(tmp_path: Path) -> None:
    scales = {f"model.layers.{i}.self_attn.kv_scale": T("F32", [], struct.pack("<f", 2.0))
              for i in ALL}
    info = inspect_checkpoint(build(tmp_path / "m", fp8_config(), weights() | scales))
    assert info.kv_scales.verdict == "calibrated"


def test_hybrid_sliding_window_model(tmp_path: Path) -> None:
    types = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]
    config = llama_config(layer_types=types, sliding_window=128, model_type="gemma3_text",
                          architectures=["Gemma3ForCausalLM"])
    info = inspect_checkpoint(build(tmp_path / "m", config, weights() | kv_scales(ALL)))
    layers = info.attention.layers
    assert [(x.kind, x.window) for x in layers] == [("sliding", 128)] * 3 + [("global", None)]
    assert (info.attention.sliding_layers, info.attention.global_layers) == (3, 1)


def test_sharded_checkpoint_follows_the_index(tmp_path: Path) -> None:
    root = build(tmp_path / "m", fp8_config(), weights() | kv_scales(ALL), shards=3)
    # A stray file the index does not list is not loaded by the engine: ignored.
    (root / "consolidated.safetensors").write_bytes(b"not read")
    info = inspect_checkpoint(root)
    assert info.tensors.files == 3 and info.tensors.count == 25
    assert info.kv_scales.verdict == "calibrated"
    assert {t.file for t in info.kv_scales.tensors} > {"model-00001-of-00003.safetensors"}


def test_a_shard_listed_in_the_index_but_missing_is_an_error(tmp_path: Path) -> None:
    from registry.errors import InvalidInput

    root = build(tmp_path / "m", fp8_config(), weights(), shards=2)
    (root / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(InvalidInput, match=r"lists model-00002-of-00002\.safetensors"):
        inspect_checkpoint(root)


def test_a_bare_config_gives_no_tensors_and_an_unknown_verdict(tmp_path: Path) -> None:
    root = build(tmp_path / "m", fp8_config(), weights() | kv_scales(ALL))
    info = inspect_checkpoint(root / "config.json")
    assert info.tensors is None and info.kv_scales.verdict == "unknown"
    assert info.quantization.kv_cache_scheme is not None
    plain = build(tmp_path / "p", llama_config(), weights())
    assert inspect_checkpoint(plain / "config.json").kv_scales.verdict == "none"


def test_a_checkpoint_without_safetensors_has_unknown_scales(tmp_path: Path) -> None:
    root = build(tmp_path / "m", fp8_config(), {})
    (root / "model.safetensors").unlink()
    (root / "pytorch_model.bin").write_bytes(b"pickle")
    info = inspect_checkpoint(root)
    assert info.tensors is None and info.kv_scales.verdict == "unknown"


@pytest.mark.parametrize(("dtype", "raw", "expected"), [
    ("BF16", struct.pack("<HH", 0x3F80, 0xC0A0), [1.0, -5.0]),
    ("F16", struct.pack("<ee", 0.5, -2.0), [0.5, -2.0]),
    ("F32", struct.pack("<ff", 0.25, 3.0), [0.25, 3.0]),
    ("F8_E4M3", bytes([0x38, 0x7E, 0x01, 0xB8]), [1.0, 448.0, 2.0 ** -9, -1.0]),
])
def test_scale_dtypes_decode_without_torch(tmp_path: Path, dtype: str, raw: bytes,
                                           expected: list[float]) -> None:
    scales = {f"model.layers.{i}.self_attn.{k}_scale": T(dtype, [len(expected)], raw)
              for i in ALL for k in "kv"}
    info = inspect_checkpoint(build(tmp_path / "m", fp8_config(), weights() | scales))
    assert info.kv_scales.tensors[0].values == expected


def test_fp8_decoding_agrees_with_torch_on_every_byte() -> None:
    torch = pytest.importorskip("torch")
    raw = bytes(range(256))
    for dtype, torch_dtype in (("F8_E4M3", torch.float8_e4m3fn), ("F8_E5M2", torch.float8_e5m2)):
        ours = DECODERS[dtype](raw)
        theirs = torch.frombuffer(bytearray(raw), dtype=torch_dtype).float().tolist()
        same = [a == b or (a != a and b != b) for a, b in zip(ours, theirs, strict=True)]
        assert all(same), dtype


def test_inspection_does_not_import_torch(tmp_path: Path) -> None:
    import subprocess

    root = build(tmp_path / "m", fp8_config(), weights() | kv_scales(ALL))
    code = ("import sys\nfrom pathlib import Path\n"
            "from registry.checkpoint.inspect import inspect_checkpoint\n"
            f"inspect_checkpoint(Path({str(root)!r}))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'vllm', "
            "'numpy')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
