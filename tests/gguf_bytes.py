"""GGUF files written byte by byte (ggml's gguf.h layout: magic, version, tensor and key
counts, key-value pairs, tensor entries, aligned data), never with the project's own
code nor ggml's writer: what a hostile author writes by hand."""

from __future__ import annotations

import struct

UINT8, UINT32, INT32, STRING, ARRAY, UINT64 = 0, 4, 5, 8, 9, 10
Q8_0, F32 = 8, 0  # ggml tensor types
MOSTLY_Q8_0 = 7  # llama.cpp file type


def u32(n: int) -> bytes:
    return struct.pack("<I", n)


def u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def text(s: str | bytes) -> bytes:
    raw = s.encode() if isinstance(s, str) else s
    return u64(len(raw)) + raw


def kv(key: str, kind: int, value: bytes) -> bytes:
    return text(key) + u32(kind) + value


def kv_u32(key: str, n: int) -> bytes:
    return kv(key, UINT32, u32(n))


def kv_str(key: str, s: str) -> bytes:
    return kv(key, STRING, text(s))


def header(tensors: int, keys: int, version: int = 3) -> bytes:
    return b"GGUF" + u32(version) + u64(tensors) + u64(keys)


def tensor(name: str, dims: list[int], kind: int, offset: int = 0) -> bytes:
    return text(name) + u32(len(dims)) + b"".join(u64(d) for d in dims) + u32(kind) + u64(offset)


def llama_keys(layers: int = 2) -> list[bytes]:
    return [kv_str("general.architecture", "llama"), kv_u32("general.file_type", MOSTLY_Q8_0),
            kv_u32("llama.block_count", layers), kv_u32("llama.embedding_length", 64),
            kv_u32("llama.attention.head_count", 4), kv_u32("llama.attention.head_count_kv", 2),
            kv_u32("llama.context_length", 512)]


def gguf(keys: list[bytes] | None = None, tensors: list[bytes] | None = None,
         data: bytes | None = None, counts: tuple[int, int] | None = None) -> bytes:
    """A whole file: by default a llama of two layers with one q8_0 tensor of 64 values
    (two blocks of 34 bytes) after the header, padded to 32 bytes."""
    keys = llama_keys() if keys is None else keys
    tensors = [tensor("blk.0.attn_q.weight", [64], Q8_0)] if tensors is None else tensors
    head = header(*(counts or (len(tensors), len(keys)))) + b"".join(keys) + b"".join(tensors)
    pad = b"\0" * (-len(head) % 32)
    return head + pad + (b"\x01" * 68 if data is None else data)
