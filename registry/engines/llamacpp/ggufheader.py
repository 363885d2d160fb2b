"""A GGUF file's header read within bounds: its key-value metadata and its tensor table.

Every GGUF a run names may be hostile (a capsule's, a download cut short, a file written by
hand). Each count and length in the header is checked against the bytes left in the file
before anything is read or allocated; arrays nest at most MAX_DEPTH deep; a key or tensor
name given twice, an unknown value or tensor type, more than GGML_MAX_DIMS dimensions, a
tensor whose data lies past the end of the file: each is one `InvalidInput` naming the file
and the offset, never a MemoryError, a RecursionError or a traceback. Memory stays bounded
whatever the file says: strings longer than MAX_STRING and arrays beyond the kept budget are
stepped over (their value is None), and the tensor table is folded into counts as it is read.
The layout is ggml's (gguf.h, llama.cpp b11434): little- or big-endian, versions 2 and 3.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from pathlib import Path
from typing import Any, BinaryIO

from registry.base.model import Frozen
from registry.errors import InvalidInput

MAGIC = b"GGUF"
VERSIONS = (2, 3)
MAX_DEPTH = 2  # an array of arrays at most: llama.cpp's own reader nests none
MAX_KEYS = 16_384  # real files hold about 40
MAX_TENSORS = 1 << 16  # real files hold at most a few thousand
MAX_NAME = 1024  # bytes of a key or tensor name
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_STRING = 1024  # a longer string value is stepped over, not kept
MAX_ITEMS = 1 << 22  # a string array's items, stepped one by one: bounds the time
KEPT_ITEMS = 1 << 16  # array items kept in all (per-layer lists): bounds the memory
MAX_INT64 = 2**63 - 1
# GGUF value type -> struct format; 8 string, 9 array
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
           12: "d"}
STRING, ARRAY = 8, 9
MIN_KV = 8 + 4 + 1  # the smallest key-value pair: empty key, type, one byte
MIN_TENSOR = 8 + 4 + 4 + 8  # the smallest tensor entry: empty name, no dims, type, offset


class GGUFHeader(Frozen):
    version: int
    metadata: dict[str, Any]  # key -> value (None: stepped over, too long to keep)
    tensor_types: dict[str, int]  # ggml type name (gguf's: Q4_K, BF16) -> tensors
    parameters: int
    tensor_bytes: int


def read_header(path: Path) -> GGUFHeader:
    """The header of the GGUF at `path`; anything malformed is one clear error."""
    try:
        with open(path, "rb") as f:
            return _Reader(f, path, os.fstat(f.fileno()).st_size).header()
    except OSError as e:
        raise InvalidInput(f"{path}: not a readable GGUF file ({e.strerror})") from None


class _Reader:
    def __init__(self, f: BinaryIO, path: Path, size: int) -> None:
        self.f, self.path, self.size, self.pos = f, path, size, 0
        self.order = "<"
        self.kept = 0  # array items kept so far

    def fail(self, why: str) -> InvalidInput:
        return InvalidInput(f"{self.path}: not a readable GGUF file ({why})",
                            hint="a GGUF cut short or not written by ggml's writer: "
                                 "fetch it again")

    def need(self, n: int, what: str) -> None:
        if n > self.size - self.pos:
            raise self.fail(f"{what} at byte {self.pos} needs {n:,} bytes; the file has "
                            f"{self.size - self.pos:,} left")

    def take(self, n: int, what: str) -> bytes:
        self.need(n, what)
        self.pos += n
        data = self.f.read(n)
        if len(data) != n:  # the file shrank since its size was taken (still downloading?)
            raise self.fail(f"{what} ends early: the file changed while it was read")
        return data

    def skip(self, n: int, what: str) -> None:
        self.need(n, what)
        self.pos += n
        self.f.seek(self.pos)

    def scalar(self, fmt: str, what: str) -> Any:
        size = struct.calcsize(fmt)
        return struct.unpack(self.order + fmt, self.take(size, what))[0]

    def header(self) -> GGUFHeader:
        if self.size < len(MAGIC) or self.take(len(MAGIC), "the magic") != MAGIC:
            raise self.fail("no GGUF magic at its start")
        version = self.scalar("I", "the version")
        if version not in VERSIONS:
            swapped = struct.unpack(">I", struct.pack("<I", version))[0]
            if swapped not in VERSIONS:
                raise self.fail(f"version {version}: this reader knows versions 2 and 3")
            self.order, version = ">", swapped
        tensors = self.count("the tensor count", MIN_TENSOR, MAX_TENSORS)
        keys = self.count("the key count", MIN_KV, MAX_KEYS)
        metadata = self.metadata(keys)
        return self.tensors(version, tensors, metadata)

    def count(self, what: str, each: int, most: int) -> int:
        n: int = self.scalar("Q", what)
        if n > most or n * each > self.size - self.pos:
            raise self.fail(f"{what} {n:,} cannot fit in a file of {self.size:,} bytes"
                            if n <= most else f"{what} {n:,} is over the {most:,} this "
                                              "reader accepts")
        return n

    def name(self, what: str) -> str:
        n: int = self.scalar("Q", f"the length of {what}")
        if n > MAX_NAME:
            raise self.fail(f"{what} of {n:,} bytes at byte {self.pos - 8} (names are at most "
                            f"{MAX_NAME:,})")
        return self.take(n, what).decode("utf-8", errors="replace")

    def metadata(self, keys: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for _ in range(keys):
            key = self.name("a key")
            shown = key if len(key) <= 60 else key[:57] + "..."  # for messages only
            if key in out:
                raise self.fail(f"the key {shown!r} appears twice")
            out[key] = self.value(self.scalar("I", f"the type of {shown!r}"), shown, 0)
        return out

    def value(self, kind: int, key: str, depth: int) -> Any:
        if kind in SCALARS:
            return self.scalar(SCALARS[kind], f"the value of {key!r}")
        if kind == STRING:
            n: int = self.scalar("Q", f"the length of {key!r}")
            if n > MAX_STRING:
                self.skip(n, f"the string {key!r}")
                return None
            return self.take(n, f"the string {key!r}").decode("utf-8", errors="replace")
        if kind == ARRAY:
            return self.array(key, depth + 1)
        raise self.fail(f"{key!r} has value type {kind}, which GGUF does not define")

    def array(self, key: str, depth: int) -> list[Any] | None:
        if depth > MAX_DEPTH:
            raise self.fail(f"{key!r} nests arrays deeper than {MAX_DEPTH}")
        kind: int = self.scalar("I", f"the item type of {key!r}")
        n: int = self.scalar("Q", f"the item count of {key!r}")
        each = struct.calcsize(SCALARS[kind]) if kind in SCALARS else 8 if kind == STRING \
            else 12 if kind == ARRAY else None
        if each is None:
            raise self.fail(f"{key!r} holds items of type {kind}, which GGUF does not define")
        self.need(n * each, f"the {n:,} items of {key!r}")
        if kind in SCALARS:
            if self.kept + n > KEPT_ITEMS:  # a vocabulary's scores: not needed, not kept
                self.skip(n * each, f"the items of {key!r}")
                return None
            self.kept += n
            fmt = f"{self.order}{n}{SCALARS[kind]}"
            return list(struct.unpack(fmt, self.take(n * each, f"the items of {key!r}")))
        if n > MAX_ITEMS:
            raise self.fail(f"{key!r} holds {n:,} items (at most {MAX_ITEMS:,})")
        for _ in range(n):  # strings (a vocabulary) and arrays: stepped over, not kept
            self.value(kind, key, depth)
        return None

    def tensors(self, version: int, count: int, metadata: dict[str, Any]) -> GGUFHeader:
        from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

        names: set[str] = set()
        types: Counter[str] = Counter()
        extents: list[tuple[int, int, str]] = []
        parameters = 0
        for _ in range(count):
            name = self.name("a tensor name")
            if name in names:
                raise self.fail(f"the tensor {name!r} appears twice")
            names.add(name)
            name = name if len(name) <= 60 else name[:57] + "..."  # for messages only
            dims = self.scalar("I", f"the dimensions of {name!r}")
            if dims > MAX_DIMS:
                raise self.fail(f"the tensor {name!r} has {dims:,} dimensions (ggml has at "
                                f"most {MAX_DIMS})")
            shape = [self.scalar("Q", f"a dimension of {name!r}") for _ in range(dims)]
            kind = self.scalar("I", f"the type of {name!r}")
            offset = self.scalar("Q", f"the offset of {name!r}")
            try:
                ggml = GGMLQuantizationType(kind)
            except ValueError:
                raise self.fail(f"the tensor {name!r} has type {kind}, which ggml does not "
                                "define") from None
            block, size = GGML_QUANT_SIZES[ggml]
            elements = _product(shape)
            if elements > MAX_INT64 or (shape and shape[0] % block):
                raise self.fail(f"the tensor {name!r} has the shape {shape}, which type "
                                f"{ggml.name} cannot hold")
            parameters += elements
            types[ggml.name] += 1
            extents.append((offset, elements // block * size, name))
        self.data(metadata, extents)
        return GGUFHeader(version=version, metadata=metadata, tensor_types=dict(types),
                          parameters=parameters, tensor_bytes=sum(n for _, n, _ in extents))

    def data(self, metadata: dict[str, Any], extents: list[tuple[int, int, str]]) -> None:
        """Each tensor's data lies inside the file, at the file's alignment."""
        align = metadata.get("general.alignment", 32)
        if not isinstance(align, int) or isinstance(align, bool) or align <= 0 or \
                align & (align - 1):
            raise self.fail(f"general.alignment {align!r} is not a power of two")
        start = -(-self.pos // align) * align
        for offset, size, name in extents:
            if offset % align or start + offset + size > self.size:
                raise self.fail(f"the data of tensor {name!r} ({size:,} bytes at offset "
                                f"{offset:,}) lies outside the file of {self.size:,} bytes")


def _product(shape: list[int]) -> int:
    out = 1
    for n in shape:
        out *= n
        if out > MAX_INT64:  # stop early: 4 dimensions of 2**64 multiply fast, but no need
            return out
    return out
