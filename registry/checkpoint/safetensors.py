"""Read safetensors headers and small tensors without torch or numpy.

A safetensors file is an 8-byte little-endian header length, a JSON header
(tensor name -> dtype, shape, data_offsets) and the raw tensor bytes. Only the
header is read, plus the bytes of the few tensors asked for (by seeking), never a
whole shard.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from pathlib import Path

from registry.base.model import Frozen
from registry.base.safeload import BadDocument, loads_json
from registry.errors import InvalidInput

MAX_HEADER = 100_000_000  # the safetensors format's own limit
MAX_VALUES_BYTES = 1 << 20  # scale tensors are tiny; refuse to read a weight by mistake

HINT = "the file is damaged or incomplete: download it again"


class Tensor(Frozen):
    name: str
    dtype: str
    shape: list[int]
    start: int  # absolute byte offset in the file
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.start


def read_header(path: Path) -> dict[str, Tensor]:
    """Tensor name -> where its bytes are; refuses anything malformed, naming the file."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            f.seek(0)
            prefix = f.read(8)
            if len(prefix) < 8:
                raise InvalidInput(f"{path}: truncated safetensors header ({size} bytes)",
                                   hint=HINT)
            (length,) = struct.unpack("<Q", prefix)
            if length > MAX_HEADER:
                raise InvalidInput(f"{path}: safetensors header of {length} bytes exceeds "
                                   f"the {MAX_HEADER} byte limit", hint=HINT)
            if 8 + length > size:
                raise InvalidInput(f"{path}: safetensors header length {length} is beyond "
                                   f"the end of the file ({size} bytes)", hint=HINT)
            raw = f.read(length)
    except OSError as e:
        raise InvalidInput(f"{path}: cannot read: {e.strerror}") from None
    return _tensors(path, raw, data_start=8 + length, size=size)


def _tensors(path: Path, raw: bytes, data_start: int, size: int) -> dict[str, Tensor]:
    try:
        header = loads_json(raw, max_bytes=MAX_HEADER)
    except BadDocument as e:
        raise InvalidInput(f"{path}: safetensors header is not JSON ({e})", hint=HINT) from None
    if not isinstance(header, dict):
        raise InvalidInput(f"{path}: safetensors header is not a JSON object", hint=HINT)
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            begin, end = entry["data_offsets"]
            tensor = Tensor(name=name, dtype=entry["dtype"], shape=entry["shape"],
                            start=data_start + begin, end=data_start + end)
        except (TypeError, KeyError, ValueError):
            raise InvalidInput(f"{path}: tensor {name!r}: malformed header entry",
                               hint=HINT) from None
        if not data_start <= tensor.start <= tensor.end <= size:
            raise InvalidInput(f"{path}: tensor {name!r} lies beyond the end of the file "
                               f"({size} bytes)", hint=HINT)
        tensors[name] = tensor
    return tensors


def read_values(path: Path, tensor: Tensor) -> list[float]:
    """The tensor's elements as floats, read from its bytes alone."""
    if tensor.nbytes > MAX_VALUES_BYTES:
        raise InvalidInput(f"{path}: tensor {tensor.name!r} is {tensor.nbytes} bytes, "
                           "too large to be a scale")
    decode = DECODERS.get(tensor.dtype)
    if decode is None:
        raise InvalidInput(f"{path}: tensor {tensor.name!r} has dtype {tensor.dtype}, "
                           f"not one of {', '.join(DECODERS)}")
    with open(path, "rb") as f:
        f.seek(tensor.start)
        return decode(f.read(tensor.nbytes))


Decoder = Callable[[bytes], list[float]]


def _struct(fmt: str, width: int) -> Decoder:
    return lambda data: [float(v) for (v,) in struct.iter_unpack(
        f"<{fmt}", data[: len(data) // width * width])]


def _bf16(data: bytes) -> list[float]:
    # bfloat16 is the top half of a float32
    return [float(struct.unpack("<f", struct.pack("<I", u << 16))[0])
            for (u,) in struct.iter_unpack("<H", data[: len(data) // 2 * 2])]


def _fp8(exponent_bits: int, bias: int, e4m3fn: bool) -> Decoder:
    mantissa_bits = 7 - exponent_bits
    top = (1 << exponent_bits) - 1

    def value(byte: int) -> float:
        sign = -1.0 if byte & 0x80 else 1.0
        exponent = (byte >> mantissa_bits) & top
        mantissa = byte & ((1 << mantissa_bits) - 1)
        if e4m3fn and exponent == top and mantissa == (1 << mantissa_bits) - 1:
            return math.nan  # e4m3fn: no infinities, one NaN pattern
        if not e4m3fn and exponent == top:
            return math.nan if mantissa else sign * math.inf
        if exponent == 0:  # subnormal
            return sign * mantissa / (1 << mantissa_bits) * 2.0 ** (1 - bias)
        return sign * (1 + mantissa / (1 << mantissa_bits)) * 2.0 ** (exponent - bias)

    return lambda data: [value(b) for b in data]


DECODERS: dict[str, Decoder] = {
    "F64": _struct("d", 8),
    "F32": _struct("f", 4),
    "F16": _struct("e", 2),
    "BF16": _bf16,
    "F8_E4M3": _fp8(4, 7, e4m3fn=True),
    "F8_E5M2": _fp8(5, 15, e4m3fn=False),
}
