"""GGUF inspection with ggml's own reader, and the KV arithmetic per cache type, on a
small GGUF written here with ggml's own writer (q8_0 tensors quantized by `gguf.quants`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from registry.engines.llamacpp.ggml import BLOCKS
from registry.engines.llamacpp.gguf import read_gguf
from registry.engines.llamacpp.kvgguf import predict
from registry.errors import InvalidInput

gguf = pytest.importorskip("gguf")


def write_gguf(path: Path, *, swa: bool = False) -> Path:
    w = gguf.GGUFWriter(str(path), "gemma3" if swa else "llama")
    arch = "gemma3" if swa else "llama"
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_uint32(f"{arch}.block_count", 4)
    w.add_uint32(f"{arch}.embedding_length", 64)
    w.add_uint32(f"{arch}.attention.head_count", 4)
    w.add_uint32(f"{arch}.attention.head_count_kv", 2)
    w.add_uint32(f"{arch}.attention.key_length", 16)
    w.add_uint32(f"{arch}.attention.value_length", 16)
    w.add_uint32(f"{arch}.context_length", 512)
    if swa:
        w.add_uint32(f"{arch}.attention.sliding_window", 128)
        w.add_array(f"{arch}.attention.sliding_window_pattern", [True, True, True, False])
    rng = np.random.default_rng(0)
    for i in range(4):
        weight = rng.standard_normal((64, 64), dtype=np.float32)
        q = gguf.quants.quantize(weight, gguf.GGMLQuantizationType.Q8_0)
        w.add_tensor(f"blk.{i}.attn_q.weight", q,
                     raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(64, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_a_gguf_says_its_file_type_tensors_and_kv_shape(tmp_path: Path) -> None:
    info = read_gguf(write_gguf(tmp_path / "tiny.gguf"))
    assert info.architecture == "llama"
    assert info.file_type == "Q8_0"
    assert info.tensor_types == {"f32": 4, "q8_0": 4}
    assert (info.layers, info.kv_heads, info.key_length) == (4, [2, 2, 2, 2], 16)
    assert 8 < info.bits_per_weight < 10  # q8_0's 8.5 and the f32 norms
    assert info.kv_values(False, "k") == [32] * 4


@pytest.mark.parametrize(("ggml_type", "per_32"), [("f16", 64), ("bf16", 64), ("q8_0", 34),
                                                   ("q4_0", 18), ("q4_1", 20), ("q5_0", 22),
                                                   ("q5_1", 24), ("iq4_nl", 18)])
def test_kv_bytes_per_cache_type(tmp_path: Path, ggml_type: str, per_32: int) -> None:
    info = read_gguf(write_gguf(tmp_path / "tiny.gguf"))
    pred = predict(info, "k", ggml_type, cells=256)
    assert pred is not None
    assert pred.mib * 1024 * 1024 == 256 * 4 * (32 // 32) * per_32  # cells x layers x 32 values
    assert f"{pred.cells} cells x 4 layers" in pred.formula


def test_the_table_is_ggml_s_own() -> None:
    for name, (values, size) in BLOCKS.items():
        kind = getattr(gguf.GGMLQuantizationType, name.upper(), None)
        if kind is not None:
            assert gguf.GGML_QUANT_SIZES[kind] == (values, size), name


def test_sliding_window_layers_have_their_own_cache(tmp_path: Path) -> None:
    info = read_gguf(write_gguf(tmp_path / "swa.gguf", swa=True))
    assert info.swa_layers == [True, True, True, False]
    assert len(info.kv_values(True, "k")) == 3 and len(info.kv_values(False, "k")) == 1


def test_not_a_gguf_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"not a gguf at all")
    with pytest.raises(InvalidInput, match="not a readable GGUF"):
        read_gguf(bad)


def test_a_draft_gguf_named_in_the_log_is_read_for_the_draft_weights(tmp_path: Path) -> None:
    """The log loads a second model (a draft): its GGUF's header is the draft's evidence."""
    from registry.engines.llamacpp.resolve import resolve_llamacpp

    target, draft = write_gguf(tmp_path / "t.gguf"), write_gguf(tmp_path / "d.gguf")
    log = tmp_path / "server.log"
    log.write_text(f"srv    load_model: loading model '{target}'\n"
                   f"llama_model_loader: loaded meta data with 9 key-value pairs and 8 tensors "
                   f"from {target} (version GGUF V3 (latest))\n"
                   f"srv    load_model: loading draft model '{draft}'\n"
                   f"llama_model_loader: loaded meta data with 9 key-value pairs and 8 tensors "
                   f"from {draft} (version GGUF V3 (latest))\n")
    fields = resolve_llamacpp(log, "server.log", {}).fields
    for name in ("precision.weights", "precision.draft_weights"):
        assert fields[name].resolved == "Q8_0", name
        assert "general.file_type Q8_0" in (fields[name].evidence[-1].text or "")
