"""KV-cache arithmetic for llama.cpp: what a cache of N cells takes per K and V, from a
GGUF's attention shape and the cache type (f16/bf16: 2 bytes a value; q8_0: 34 bytes per
32 values; q4_0 and iq4_nl 18, q4_1 20, q5_0 22, q5_1 24 per 32)."""

from __future__ import annotations

from registry.base.model import Frozen
from registry.engines.llamacpp.ggml import BLOCKS, kv_bytes
from registry.engines.llamacpp.gguf import GGUFInfo

MIB = 1024 * 1024


class KVPrediction(Frozen):
    side: str
    ggml_type: str
    cells: int
    layers: int
    mib: float
    formula: str


def predict(info: GGUFInfo, side: str, ggml_type: str, cells: int, swa: bool = False,
            v_pad: int | None = None) -> KVPrediction | None:
    """`v_pad`: V rows padded to this many values (llama.cpp pads V when flash attention is
    off and the layers' V sizes differ); None when the shape or type is unknown."""
    rows = info.kv_values(swa, side)
    if not rows or ggml_type not in BLOCKS:
        return None
    if v_pad and side == "v":
        rows = [max(r, v_pad) for r in rows]
    total = sum(cells * kv_bytes(ggml_type, r) for r in rows)
    per = sorted(set(rows))
    return KVPrediction(side=side, ggml_type=ggml_type, cells=cells, layers=len(rows),
                        mib=total / MIB,
                        formula=f"{cells} cells x {len(rows)} layers x "
                                f"{'/'.join(map(str, per))} values x {_bytes(ggml_type)} "
                                f"= {total / MIB:.2f} MiB")


def _bytes(ggml_type: str) -> str:
    values, size = BLOCKS[ggml_type]
    return f"{size} bytes" if values == 1 else f"{size}/{values} bytes"
