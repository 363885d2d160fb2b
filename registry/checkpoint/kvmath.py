"""KV-cache payload arithmetic: bytes per token, per rank, and at a context length.

Pure arithmetic over an attention shape and a storage dtype. Each attention layer
stores K and V for every KV head: `2 * kv_heads * head_dim` values per token; a
sliding-window layer stops growing at its window. Scale metadata is counted apart
from the payload. Engine rules (which dtype `auto` means, hybrid-cache pooling,
block rounding) belong to the resolver, not here.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from registry.base.model import Frozen
from registry.checkpoint.models import AttentionShape
from registry.errors import InvalidInput

ELEMENT_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "half": 2,
                 "fp16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1,
                 "nvfp4": 0.5, "nvfp4_4over6": 0.5}
NVFP4_BLOCK = 16  # one FP8 scale per 16 elements
SCALE_BYTES = 4  # float32 k/v scales

Bytes = int | float


class ContextPayload(Frozen):
    tokens: int
    bytes: Bytes = Field(description="target + draft, sliding layers capped at their window")
    bytes_uncapped: Bytes = Field(description="as if every layer kept every token")
    per_rank_bytes: Bytes = Field(description="`bytes` on one tensor-parallel rank")


class KVPayload(Frozen):
    kv_dtype: str
    element_bytes: float
    tp: int
    values_per_token_per_layer: int = Field(description="K + V values: 2 * kv_heads * head_dim")
    per_token_per_layer_bytes: Bytes
    target_layers: int
    draft_layers: int
    per_token_bytes: Bytes = Field(description="target, all attention layers")
    per_token_bytes_with_draft: Bytes
    kv_heads_per_rank: int
    per_rank_bytes: Bytes = Field(description="target + draft per token on one rank")
    scale_bytes_per_rank: int = Field(description="fixed k/v scale metadata on one rank")
    scale_bytes_per_token: Bytes = Field(description="per-block scales (NVFP4), per rank")
    scale_note: str | None = None
    contexts: list[ContextPayload] = Field(default_factory=list)


def element_bytes(kv_dtype: str) -> float:
    """Bytes per stored K or V element; `auto` is not a dtype and is refused."""
    name = kv_dtype.removeprefix("torch.").lower()
    if name in ELEMENT_BYTES:
        return ELEMENT_BYTES[name]
    hint = ("resolve `auto` to the dtype the engine stores first"
            if name == "auto" else f"one of: {', '.join(ELEMENT_BYTES)}")
    raise InvalidInput(f"kv dtype {kv_dtype!r}: not a storage dtype", hint=hint)


def kv_heads_per_rank(shape: AttentionShape, tp: int) -> int:
    """KV heads split across ranks; with more ranks than heads each rank keeps one copy."""
    heads = shape.num_kv_heads
    if tp < 1 or (heads % tp if heads >= tp else tp % heads):
        raise InvalidInput(f"tensor parallel size {tp} does not split {heads} KV heads evenly")
    return max(1, heads // tp)


def bytes_per_token_per_layer(shape: AttentionShape, kv_dtype: str, tp: int = 1) -> Bytes:
    return _n(2 * kv_heads_per_rank(shape, tp) * shape.head_dim * element_bytes(kv_dtype))


def context_bytes(shape: AttentionShape, kv_dtype: str, tokens: int, tp: int = 1) -> Bytes:
    """Payload for one sequence of `tokens`: sliding layers hold at most their window."""
    per_layer = bytes_per_token_per_layer(shape, kv_dtype, tp)
    held = sum(min(tokens, layer.window or tokens) for layer in shape.layers)
    return _n(per_layer * held)


def kv_bytes_per_token(shape: AttentionShape, kv_dtype: str, tp: int = 1,
                       draft: AttentionShape | None = None, contexts: Sequence[int] = (),
                       scale_strategy: str | None = "tensor") -> KVPayload:
    """Every payload figure `registry kv` prints, target and optional draft."""
    shapes = [shape] + ([draft] if draft else [])
    per_token = [bytes_per_token_per_layer(s, kv_dtype) * len(s.layers) for s in shapes]
    per_rank = sum(bytes_per_token_per_layer(s, kv_dtype, tp) * len(s.layers) for s in shapes)
    fixed, per_token_scales, note = _scales(shapes, kv_dtype, tp, scale_strategy)
    return KVPayload(
        kv_dtype=kv_dtype, element_bytes=element_bytes(kv_dtype), tp=tp,
        values_per_token_per_layer=2 * shape.num_kv_heads * shape.head_dim,
        per_token_per_layer_bytes=bytes_per_token_per_layer(shape, kv_dtype),
        target_layers=len(shape.layers), draft_layers=len(draft.layers) if draft else 0,
        per_token_bytes=_n(per_token[0]), per_token_bytes_with_draft=_n(sum(per_token)),
        kv_heads_per_rank=kv_heads_per_rank(shape, tp), per_rank_bytes=_n(per_rank),
        scale_bytes_per_rank=fixed, scale_bytes_per_token=per_token_scales, scale_note=note,
        contexts=[_context(shapes, kv_dtype, tokens, tp) for tokens in contexts],
    )


def _context(shapes: list[AttentionShape], kv_dtype: str, tokens: int, tp: int
             ) -> ContextPayload:
    if tokens < 1:
        raise InvalidInput(f"context length {tokens}: must be a positive number of tokens")
    return ContextPayload(
        tokens=tokens,
        bytes=_n(sum(context_bytes(s, kv_dtype, tokens) for s in shapes)),
        bytes_uncapped=_n(sum(bytes_per_token_per_layer(s, kv_dtype) * len(s.layers) * tokens
                              for s in shapes)),
        per_rank_bytes=_n(sum(context_bytes(s, kv_dtype, tokens, tp) for s in shapes)),
    )


def _scales(shapes: list[AttentionShape], kv_dtype: str, tp: int, strategy: str | None
            ) -> tuple[int, Bytes, str | None]:
    """(fixed scale bytes per rank, per-token scale bytes per rank, a note)."""
    size = element_bytes(kv_dtype)
    if size >= 2:
        return 0, 0, None
    if size < 1:
        values = sum(2 * kv_heads_per_rank(s, tp) * s.head_dim * len(s.layers) for s in shapes)
        return 0, _n(values / NVFP4_BLOCK), (
            f"{kv_dtype}: one FP8 scale per {NVFP4_BLOCK} elements, stored with every token")
    per_head = strategy == "head"
    scales = sum(2 * (kv_heads_per_rank(s, tp) if per_head else 1) * len(s.layers)
                 for s in shapes)
    what = "per-head k and v scales" if per_head else "one k and one v scale"
    return scales * SCALE_BYTES, 0, f"{what} (float32) per attention layer, fixed"


def _n(value: float) -> Bytes:
    """Whole numbers as int, so JSON says 4096, not 4096.0."""
    return int(value) if float(value).is_integer() else value
