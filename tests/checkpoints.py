"""Tiny checkpoint directories for the inspection tests, written by hand without torch.

A safetensors file is an 8-byte little-endian header length, a JSON header and the
raw bytes; that is all these builders write, plus config.json and friends.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "I32": 4, "U8": 1}

KV_CACHE_SCHEME = {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True,
                   "dynamic": False, "observer": "minmax"}

W4A16_GROUP = {"targets": ["Linear"], "format": "pack-quantized", "input_activations": None,
               "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                           "symmetric": True, "dynamic": False, "observer": "minmax"}}


class T:
    """One tensor: dtype, shape and its raw bytes (filled with a pattern if not given)."""

    def __init__(self, dtype: str, shape: list[int], data: bytes | None = None) -> None:
        size = DTYPE_BYTES[dtype]
        for dim in shape:
            size *= dim
        self.dtype, self.shape = dtype, shape
        self.data = data if data is not None else bytes(i % 251 for i in range(size))
        assert len(self.data) == size, (dtype, shape, len(self.data))


def f32(*values: float) -> T:
    return T("F32", [len(values)] if len(values) > 1 else [],
             struct.pack(f"<{len(values)}f", *values))


def safetensors_bytes(tensors: dict[str, T]) -> bytes:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset, blobs = 0, []
    for name, t in tensors.items():
        header[name] = {"dtype": t.dtype, "shape": t.shape,
                        "data_offsets": [offset, offset + len(t.data)]}
        offset += len(t.data)
        blobs.append(t.data)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)  # the format pads the header to 8 bytes
    return struct.pack("<Q", len(raw)) + raw + b"".join(blobs)


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, indent=2))
    return path


def llama_config(layers: int = 4, **overrides: Any) -> dict[str, Any]:
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "torch_dtype": "bfloat16", "hidden_size": 256, "intermediate_size": 512,
              "num_hidden_layers": layers, "num_attention_heads": 4, "num_key_value_heads": 2,
              "head_dim": 64, "vocab_size": 512, "max_position_embeddings": 2048}
    return config | overrides


def weights(layers: int = 4) -> dict[str, T]:
    tensors = {"model.embed_tokens.weight": T("BF16", [512, 8])}
    for i in range(layers):
        for proj, rows in (("q_proj", 16), ("k_proj", 8), ("v_proj", 8), ("o_proj", 16)):
            tensors[f"model.layers.{i}.self_attn.{proj}.weight"] = T("BF16", [rows, 8])
    return tensors


def kv_scales(layers: list[int], kinds: tuple[str, ...] = ("k", "v")) -> dict[str, T]:
    return {f"model.layers.{i}.self_attn.{kind}_scale": f32(0.01 * (i + 1) + (kind == "v"))
            for i in layers for kind in kinds}


def fp8_config(layers: int = 4, **overrides: Any) -> dict[str, Any]:
    """A compressed-tensors W4A16 config that asks for an FP8 KV cache."""
    quant = {"quant_method": "compressed-tensors", "format": "pack-quantized",
             "config_groups": {"group_0": W4A16_GROUP}, "ignore": ["lm_head"],
             "kv_cache_scheme": KV_CACHE_SCHEME}
    return llama_config(layers, quantization_config=quant, **overrides)


def build(dest: Path, config: dict[str, Any], tensors: dict[str, T], shards: int = 1,
          extra: dict[str, str] | None = None) -> Path:
    """Write a checkpoint: config.json, tokenizer files, tensors over `shards` files."""
    dest.mkdir(parents=True, exist_ok=True)
    write_json(dest / "config.json", config)
    write_json(dest / "generation_config.json", {"bos_token_id": 1, "eos_token_id": 2})
    write_json(dest / "tokenizer_config.json", {"tokenizer_class": "PreTrainedTokenizerFast",
                                                "eos_token": "</s>", "model_max_length": 2048})
    write_json(dest / "tokenizer.json", {"version": "1.0", "model": {"type": "BPE"}})
    for name, text in (extra or {}).items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(text)
    if shards == 1:
        (dest / "model.safetensors").write_bytes(safetensors_bytes(tensors))
        return dest
    names = list(tensors)
    weight_map = {}
    for s in range(shards):
        shard = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[s::shards]}
        (dest / shard).write_bytes(safetensors_bytes(part))
        weight_map |= dict.fromkeys(part, shard)
    write_json(dest / "model.safetensors.index.json",
               {"metadata": {"total_size": sum(len(t.data) for t in tensors.values())},
                "weight_map": weight_map})
    return dest
