"""KV-cache scale tensors and the verdict on where the engine's KV scales come from.

Names follow what vLLM 0.32 loads (`maybe_remap_kv_scale_name`): `...k_scale`,
`...v_scale` (e.g. `model.layers.3.self_attn.k_scale`, ModelOpt's
`self_attn.k_proj.k_scale`), `...k_cache.scale`, and the deprecated `...kv_scale`,
which the engine uses for both k and v.
"""

from __future__ import annotations

import re
from pathlib import Path

from registry.checkpoint.models import KVCacheScheme, KVScales, KVScaleVerdict, ScaleTensor
from registry.checkpoint.safetensors import Tensor, read_values

SCALE_NAME = re.compile(r"(?:^|\.)(?:(?P<kind>kv|k|v)_scale|(?P<cache>k|v)_cache\.scale)$")
LAYER_INDEX = re.compile(r"(?:^|\.)(?:layers|layer|h|blocks)\.(\d+)\.")


def scale_kind(name: str) -> str | None:
    """`k_scale`, `v_scale` or `kv_scale` for a KV scale tensor's name, else None."""
    m = SCALE_NAME.search(name)
    return None if m is None else f"{m['kind'] or m['cache']}_scale"


def layer_of(name: str) -> int | None:
    m = LAYER_INDEX.search(name)
    return int(m[1]) if m else None


def scale_tensors(tensors: dict[str, tuple[Path, Tensor]], root: Path) -> list[ScaleTensor]:
    """Every KV scale tensor, with its values read from the file."""
    found = []
    for name, (path, tensor) in sorted(tensors.items()):
        kind = scale_kind(name)
        if kind is None:
            continue
        found.append(ScaleTensor(name=name, layer=layer_of(name), kind=kind,
                                 dtype=tensor.dtype, shape=tensor.shape,
                                 values=read_values(path, tensor),
                                 file=path.relative_to(root).as_posix()))
    return found


def kv_scales(scheme: KVCacheScheme | None, attention_layers: list[int],
              found: list[ScaleTensor] | None) -> KVScales:
    """The verdict: `found` is None when there were no tensors to look at."""
    if found is None:
        return KVScales(verdict="none" if scheme is None else "unknown", count=0)
    k = _layers(found, ("k_scale", "kv_scale"))
    v = _layers(found, ("v_scale", "kv_scale"))
    return KVScales(verdict=_verdict(scheme, attention_layers, k, v, found),
                    count=len(found),
                    layers_with_k=k, layers_with_v=v, tensors=found)


def _layers(found: list[ScaleTensor], kinds: tuple[str, ...]) -> list[int]:
    return sorted({t.layer for t in found if t.kind in kinds and t.layer is not None})


def _verdict(scheme: KVCacheScheme | None, layers: list[int], k: list[int], v: list[int],
             found: list[ScaleTensor]) -> KVScaleVerdict:
    if scheme is None:
        return "none"
    if not found:
        return "missing"
    if set(layers) <= set(k) and set(layers) <= set(v):
        return "calibrated"
    return "partial"
