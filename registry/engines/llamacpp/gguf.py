"""A GGUF file read with ggml's own reader (PyPI `gguf`): its file type, the tensor-type
counts and the attention shape that sizes its KV cache (layers, KV heads, K and V head
dims, the sliding window and which layers use it). No tensor data is read."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import Field

from registry.base.model import Frozen
from registry.engines.llamacpp.ggml import FILE_TYPES
from registry.errors import InvalidInput


class GGUFInfo(Frozen):
    path: str
    architecture: str | None
    file_type: str | None = Field(description="general.file_type as a llama.cpp file type name")
    tensor_types: dict[str, int] = Field(description="ggml type -> tensors of that type")
    parameters: int
    tensor_bytes: int
    layers: int | None
    kv_heads: list[int] = Field(description="KV heads per layer (0: a layer without attention)")
    key_length: int | None
    value_length: int | None
    key_length_swa: int | None = None
    value_length_swa: int | None = None
    sliding_window: int | None = None
    swa_layers: list[bool] = Field(default_factory=list, description="per layer: sliding window")
    context_length: int | None = None

    @property
    def bits_per_weight(self) -> float:
        return self.tensor_bytes * 8 / self.parameters if self.parameters else 0.0

    def kv_values(self, swa: bool, side: str) -> list[int]:
        """Per KV layer of the full (swa False) or sliding-window cache: the values one
        cell of `side` (k or v) holds, n_embd_k_gqa = heads x head dim."""
        dims = {"k": (self.key_length, self.key_length_swa),
                "v": (self.value_length, self.value_length_swa)}[side]
        dim = (dims[1] or dims[0]) if swa else dims[0]
        if dim is None:
            return []
        marks = self.swa_layers or [False] * len(self.kv_heads)
        return [heads * dim for heads, mark in zip(self.kv_heads, marks, strict=False)
                if heads and mark == swa]


def read_gguf(path: Path) -> GGUFInfo:
    """Everything above from the file's header; a file that is not GGUF is refused."""
    from gguf import GGUFReader  # heavy numpy import: only when a GGUF is read

    try:
        reader = GGUFReader(path, "r")
    except (ValueError, OSError) as e:
        raise InvalidInput(f"{path}: not a readable GGUF file ({e})") from e
    meta = {name: _value(field) for name, field in reader.fields.items()}
    arch = meta.get("general.architecture")

    def key(name: str) -> Any:
        return meta.get(f"{arch}.{name}")

    layers = key("block_count")
    heads = _per_layer(key("attention.head_count_kv") or key("attention.head_count"), layers)
    counts = Counter(_ggml_name(t.tensor_type.name) for t in reader.tensors)
    return GGUFInfo(
        path=str(path), architecture=arch, file_type=_file_type(meta.get("general.file_type")),
        tensor_types=dict(sorted(counts.items())),
        parameters=sum(int(t.n_elements) for t in reader.tensors),
        tensor_bytes=sum(int(t.n_bytes) for t in reader.tensors),
        layers=layers, kv_heads=heads,
        key_length=key("attention.key_length") or _head_dim(key, heads),
        value_length=key("attention.value_length") or _head_dim(key, heads),
        key_length_swa=key("attention.key_length_swa"),
        value_length_swa=key("attention.value_length_swa"),
        sliding_window=key("attention.sliding_window"),
        swa_layers=_swa_layers(key("attention.sliding_window_pattern"), layers,
                               key("attention.sliding_window")),
        context_length=key("context_length"),
    )


def _value(field: Any) -> Any:
    try:
        value = field.contents()
    except (ValueError, IndexError, TypeError):
        return None
    return value


def _ggml_name(name: str) -> str:
    """GGMLQuantizationType `Q4_K` -> q4_K, `IQ4_NL` -> iq4_nl, `BF16` -> bf16."""
    return name.lower().replace("_k", "_K")


def _file_type(value: Any) -> str | None:
    from gguf import LlamaFileType

    try:
        name = LlamaFileType(int(value) & ~LlamaFileType.GUESSED).name
    except (TypeError, ValueError):
        return None
    name = "F32" if name == "ALL_F32" else name.removeprefix("MOSTLY_")
    return name if name in FILE_TYPES else None


def _per_layer(value: Any, layers: int | None) -> list[int]:
    if isinstance(value, list):
        return [int(v) for v in value]
    if value is None or layers is None:
        return []
    return [int(value)] * layers


def _head_dim(key: Any, heads: list[int]) -> int | None:
    """Without key_length: embedding / attention heads (llama.cpp's default)."""
    embd, n_head = key("embedding_length"), key("attention.head_count")
    if isinstance(n_head, list):
        n_head = max(n_head) if n_head else None
    return embd // n_head if embd and n_head else None


def _swa_layers(pattern: Any, layers: int | None, window: Any) -> list[bool]:
    """`sliding_window_pattern`: a per-layer bool list, or N (every Nth layer is full)."""
    if layers is None or not window:
        return []
    if isinstance(pattern, list):
        return [bool(v) for v in pattern][:layers]
    if isinstance(pattern, int) and pattern > 0:
        return [(i + 1) % pattern != 0 for i in range(layers)]
    return []
