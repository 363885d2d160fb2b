"""The capacity cross-check: which KV element size makes the reported capacity add up.

vLLM 0.32 (`vllm/v1/core/kv_cache_utils.py`) sizes the cache and reports it this way:

- layers with the same cache spec form buckets (full attention; sliding window per
  window size); with several buckets, each is split into groups of `group_size`
  layers (the smallest bucket, or the largest when it is < 1.5x the smallest);
- one block holds `block_size` tokens of every layer of the largest group:
  `bytes_per_block = group_size * block_size * 2 * kv_heads_per_rank * head_dim * e`;
- `blocks = memory // bytes_per_block`, with the memory of the smallest rank;
- a request at `max_model_len` needs, per group, `cdiv(max_model_len, block_size)`
  blocks (full) or `cdiv(min(window - 1 + in_flight, max_model_len), block_size) + 1`
  (sliding; in_flight = max_num_batched_tokens, twice that with async scheduling
  from vLLM 0.32 on: `registry.engines.vllm.resolve.precision.in_flight_tokens`);
- reported tokens = `int(blocks / blocks_per_request * max_model_len)`.

So a sliding layer saves memory only when its window plus the scheduled tokens is
well under `max_model_len`: reading its window as its cost would mistake an
allocation policy for a dtype change. DFlash drafters keep full allocation for
their layers (`laguna_dflash.py`), and a disabled hybrid manager allocates every
layer in full.
"""

from __future__ import annotations

import math
from collections import Counter

from pydantic import Field

from registry.base.model import Frozen
from registry.checkpoint.models import AttentionShape
from registry.formats.identity import Evidence

GIB = 1 << 30
TOLERANCE = 0.10  # block rounding, 2-decimal GiB in the log, rank skew
ELEMENT_SIZES = (1, 2, 4)
FULL_ALLOCATION_DRAFTS = {"dflash"}


class Layout(Frozen):
    """What the engine's arithmetic needs besides the checkpoint."""

    tp: int
    block_size: int
    max_model_len: int
    in_flight_tokens: int | None = Field(None, description="needed only for sliding layers")


class Prediction(Frozen):
    element_bytes: int
    bytes_per_block: int
    blocks: int
    blocks_per_request: int
    tokens: int
    ratio: float = Field(description="reported tokens / predicted tokens")


class CapacityCheck(Frozen):
    reported_tokens: int
    memory_gib: float
    groups: str = Field(description="how the engine groups the layers")
    predictions: list[Prediction]
    element_bytes: int | None = Field(description="the size that fits; None: none or several")
    evidence: list[Evidence]

    def summary(self) -> str:
        def line(p: Prediction) -> str:
            return (f"{p.element_bytes}-byte: {p.blocks:,} blocks / {p.blocks_per_request} per "
                    f"request -> {p.tokens:,} tokens (reported/predicted {p.ratio:.3f})")
        head = (f"{self.memory_gib} GiB per rank, {self.groups}; reported "
                f"{self.reported_tokens:,} tokens")
        return "; ".join([head, *(line(p) for p in self.predictions)])


class NotModelled(Exception):
    """The arithmetic does not cover this layout; the reason says why."""


def layer_windows(target: AttentionShape, draft: AttentionShape | None, draft_method: str | None,
                  hybrid_manager: bool) -> list[int | None]:
    """The cache-allocation window of every layer sharing the cache (None = full)."""
    windows = [layer.window if layer.kind == "sliding" else None for layer in target.layers]
    if draft is not None:
        if (draft.num_kv_heads, draft.head_dim) != (target.num_kv_heads, target.head_dim):
            raise NotModelled("the draft's KV heads or head size differ from the target's "
                              "(mixed page sizes are not modelled)")
        full = draft_method in FULL_ALLOCATION_DRAFTS
        windows += [None if full or layer.kind != "sliding" else layer.window
                    for layer in draft.layers]
    return windows if hybrid_manager else [None] * len(windows)


def check_capacity(windows: list[int | None], shape: AttentionShape, layout: Layout,
                   reported_tokens: int, memory_gib: float, evidence: list[Evidence]
                   ) -> CapacityCheck:
    if any(w is not None for w in windows) and layout.in_flight_tokens is None:
        raise NotModelled("sliding layers need max_num_batched_tokens and whether scheduling "
                          "is asynchronous, which the log leaves open")
    heads = shape.num_kv_heads
    if layout.tp < 1 or (heads % layout.tp if heads >= layout.tp else layout.tp % heads):
        raise NotModelled(f"TP {layout.tp} does not split {heads} KV heads evenly")
    values_per_token = 2 * max(1, heads // layout.tp) * shape.head_dim
    predictions = [_predict(windows, values_per_token * e, e, layout, memory_gib, reported_tokens)
                   for e in ELEMENT_SIZES]
    fitting = [p for p in predictions if abs(p.ratio - 1) <= TOLERANCE]
    return CapacityCheck(
        reported_tokens=reported_tokens, memory_gib=memory_gib, groups=_describe(windows),
        predictions=predictions, element_bytes=fitting[0].element_bytes if len(fitting) == 1
        else None, evidence=evidence,
    )


def _predict(windows: list[int | None], bytes_per_token: int, element: int, layout: Layout,
             memory_gib: float, reported: int) -> Prediction:
    buckets = Counter(windows)
    group_size = _group_size(list(buckets.values()))
    per_request = sum(math.ceil(n / group_size) * _blocks_needed(w, layout)
                      for w, n in buckets.items())
    bytes_per_block = group_size * layout.block_size * bytes_per_token
    blocks = int(memory_gib * GIB) // bytes_per_block
    tokens = int(blocks / per_request * layout.max_model_len)
    return Prediction(element_bytes=element, bytes_per_block=bytes_per_block, blocks=blocks,
                      blocks_per_request=per_request, tokens=tokens,
                      ratio=reported / tokens if tokens else math.inf)


def _group_size(counts: list[int]) -> int:
    if len(counts) == 1:
        return counts[0]
    smallest, largest = min(counts), max(counts)
    return largest if largest < 1.5 * smallest else smallest


def _blocks_needed(window: int | None, layout: Layout) -> int:
    if window is None:
        return math.ceil(layout.max_model_len / layout.block_size)
    assert layout.in_flight_tokens is not None
    held = min(window - 1 + layout.in_flight_tokens, layout.max_model_len)
    return math.ceil(held / layout.block_size) + 1


def _describe(windows: list[int | None]) -> str:
    buckets = Counter(windows)
    group_size = _group_size(list(buckets.values()))
    parts = [f"{n} {'full' if w is None else f'sliding({w})'}" for w, n in buckets.items()]
    return f"{' + '.join(parts)} layers in groups of {group_size}"
