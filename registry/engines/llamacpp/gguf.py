"""A GGUF file's file type, tensor-type counts and the attention shape that sizes its KV
cache (layers, KV heads, K and V head dims, the sliding window and which layers use it),
from its header read within bounds (registry/engines/llamacpp/ggufheader.py). No tensor
data is read. Each shape value must be a count in range (layers at most MAX_LAYERS), or
the file is refused: per-layer lists are sized from it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import Field

from registry.base.model import Frozen
from registry.engines.llamacpp.ggml import FILE_TYPES
from registry.engines.llamacpp.ggufheader import read_header
from registry.errors import InvalidInput

MAX_LAYERS = 4096  # real models have at most a few hundred
MAX_SIZE = 2**40  # a head count, head dim, window or context length: any real one is less


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
    """Everything above from the file's header (read within bounds: ggufheader.py); a file
    that is not GGUF, or whose header is malformed, is one clear `InvalidInput`."""
    header = read_header(path)
    meta = header.metadata
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        arch = None

    def key(name: str) -> Any:
        return meta.get(f"{arch}.{name}")

    def count(name: str, most: int = MAX_SIZE) -> int | None:
        return _count(path, f"{arch}.{name}", key(name), most)

    layers = count("block_count", MAX_LAYERS)
    heads = _per_layer(path, arch, key("attention.head_count_kv")
                       if key("attention.head_count_kv") is not None
                       else key("attention.head_count"), layers)
    counts: Counter[str] = Counter()
    for name, n in header.tensor_types.items():
        counts[_ggml_name(name)] += n
    return GGUFInfo(
        path=str(path), architecture=arch, file_type=_file_type(meta.get("general.file_type")),
        tensor_types=dict(sorted(counts.items())),
        parameters=header.parameters, tensor_bytes=header.tensor_bytes,
        layers=layers, kv_heads=heads,
        key_length=count("attention.key_length") or _head_dim(path, arch, key, heads),
        value_length=count("attention.value_length") or _head_dim(path, arch, key, heads),
        key_length_swa=count("attention.key_length_swa"),
        value_length_swa=count("attention.value_length_swa"),
        sliding_window=count("attention.sliding_window"),
        swa_layers=_swa_layers(key("attention.sliding_window_pattern"), layers,
                               key("attention.sliding_window")),
        context_length=count("context_length"),
    )


def _count(path: Path, name: str, value: Any, most: int) -> int | None:
    """A shape value: absent, or a whole number from 0 to `most` (a malformed one is
    refused: a block_count of 2**40 would size per-layer lists of 2**40 items)."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
        raise InvalidInput(f"{path}: not a readable GGUF file ({name} is {_shown(value)}, "
                           f"not a count from 0 to {most:,})")
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _ggml_name(name: str) -> str:
    """GGMLQuantizationType `Q4_K` -> q4_K, `IQ4_NL` -> iq4_nl, `BF16` -> bf16."""
    return name.lower().replace("_k", "_K")


def _file_type(value: Any) -> str | None:
    from gguf import LlamaFileType

    if not isinstance(value, int) or isinstance(value, bool):
        return None
    try:
        name = LlamaFileType(int(value) & ~LlamaFileType.GUESSED).name
    except (TypeError, ValueError):
        return None
    name = "F32" if name == "ALL_F32" else name.removeprefix("MOSTLY_")
    return name if name in FILE_TYPES else None


def _per_layer(path: Path, arch: str | None, value: Any, layers: int | None) -> list[int]:
    """KV heads per layer: a per-layer list (at most MAX_LAYERS), or one count for all."""
    name = f"{arch}.attention.head_count_kv"
    if isinstance(value, list):
        if len(value) > MAX_LAYERS:
            raise InvalidInput(f"{path}: not a readable GGUF file ({name} lists {len(value):,} "
                               f"layers, over {MAX_LAYERS:,})")
        return [_count(path, name, v, MAX_SIZE) or 0 for v in value]
    count = _count(path, name, value, MAX_SIZE)
    if count is None or layers is None:
        return []
    return [count] * layers


def _head_dim(path: Path, arch: str | None, key: Any, heads: list[int]) -> int | None:
    """Without key_length: embedding / attention heads (llama.cpp's default)."""
    embd = _count(path, f"{arch}.embedding_length", key("embedding_length"), MAX_SIZE)
    n_head = key("attention.head_count")
    if isinstance(n_head, list):
        n_head = max((_count(path, f"{arch}.attention.head_count", n, MAX_SIZE) or 0
                      for n in n_head), default=None)
    else:
        n_head = _count(path, f"{arch}.attention.head_count", n_head, MAX_SIZE)
    return embd // n_head if embd and n_head else None


def _swa_layers(pattern: Any, layers: int | None, window: Any) -> list[bool]:
    """`sliding_window_pattern`: a per-layer bool list, or N (every Nth layer is full)."""
    if layers is None or not window:
        return []
    if isinstance(pattern, list):
        return [bool(v) for v in pattern[:layers]]
    if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0:
        return [(i + 1) % pattern != 0 for i in range(layers)]
    return []
