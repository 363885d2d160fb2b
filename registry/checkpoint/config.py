"""A Hugging Face `config.json`, read as plain JSON: attention geometry and MoE shape.

Real configs spell the same fact several ways (`num_key_value_heads`, `num_kv_heads`,
`n_head_kv`, ...) and describe sliding-window layers in several conventions; this
module follows the conventions the transformers configuration classes apply.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from registry.checkpoint.models import AttentionLayer, AttentionShape, MoEShape
from registry.errors import InvalidInput

# `layer_types` values: which carry a growing KV cache, which a bounded one, which none.
GLOBAL_TYPES = {"full_attention", "attention", "hybrid", "indexed_attention",
                "compressed_sparse_attention", "heavily_compressed_attention"}
SLIDING_TYPES = {"sliding_attention", "hybrid_sliding", "chunked_attention"}
NO_KV_TYPES = {"linear_attention", "mamba", "conv", "moe", "sparse", "dense"}

# Alternating configs that omit `layer_types`: every Nth layer is global.
DEFAULT_PATTERN = {"gemma2": 2, "gpt_oss": 2, "gemma3": 6, "gemma3_text": 6,
                   "cohere2": 4, "exaone4": 4, "olmo3": 4}


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's keys: a multimodal config nests them in `text_config`."""
    nested = config.get("text_config")
    return {**config, **nested} if isinstance(nested, dict) else config


def first(config: dict[str, Any], *keys: str) -> Any:
    return next((config[k] for k in keys if config.get(k) is not None), None)


def attention_shape(config: dict[str, Any], source: Path) -> AttentionShape:
    """KV geometry of the text model: layers, heads, head dim, window per layer."""
    c = text_config(config)
    num_layers = _int(c, source, "num_hidden_layers", "n_layer", "n_layers", "num_layers")
    heads = _int(c, source, "num_attention_heads", "n_head", "n_heads", "num_heads")
    kv_heads = _kv_heads(c, source, heads)
    head_dim = first(c, "head_dim", "kv_channels")
    if head_dim is None:
        head_dim = _int(c, source, "hidden_size", "n_embd", "d_model") // heads
    return AttentionShape(num_layers=num_layers, num_attention_heads=heads,
                          num_kv_heads=kv_heads, head_dim=int(head_dim),
                          layers=_layers(c, source, num_layers))


def _int(c: dict[str, Any], source: Path, *keys: str) -> int:
    value = first(c, *keys)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        found = f"{value!r}" if value is not None else "missing"
        raise InvalidInput(f"{source}: {keys[0]}: {found}; expected a positive integer",
                           hint=f"the config must give one of: {', '.join(keys)}")
    return value


def _kv_heads(c: dict[str, Any], source: Path, heads: int) -> int:
    if c.get("multi_query") is True:  # Falcon-7B style
        return 1
    keys: tuple[str, ...] = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "n_kv_heads")
    if c.get("multi_query_attention"):  # ChatGLM
        keys = ("multi_query_group_num", *keys)
    value = first(c, *keys)
    if isinstance(value, list):
        raise InvalidInput(f"{source}: {keys[0]}: per-layer KV head counts are not supported")
    return heads if value is None else _int(c, source, *keys)


def _layers(c: dict[str, Any], source: Path, num_layers: int) -> list[AttentionLayer]:
    kinds = _layer_kinds(c, source, num_layers)
    window = first(c, "sliding_window", "attention_chunk_size")
    if "sliding" in kinds and not isinstance(window, int):
        raise InvalidInput(f"{source}: sliding_window: {window!r}; sliding layers need "
                           "a window in tokens")
    return [AttentionLayer(index=i, kind=kind, window=window if kind == "sliding" else None)
            for i, kind in enumerate(kinds) if kind != "none"]


def _layer_kinds(c: dict[str, Any], source: Path, num_layers: int) -> list[str]:
    """"global", "sliding" or "none" (no KV cache) for each layer."""
    if isinstance(types := c.get("layer_types"), list):
        if len(types) != num_layers:
            raise InvalidInput(f"{source}: layer_types has {len(types)} entries for "
                               f"{num_layers} layers")
        return [_kind(t, source) for t in types]
    window = c.get("sliding_window")
    if not window:
        return ["global"] * num_layers
    if "use_sliding_window" in c:  # Qwen2 / Qwen3: layers from max_window_layers slide
        start = c.get("max_window_layers", 0) if c["use_sliding_window"] else num_layers
        return ["sliding" if i >= start else "global" for i in range(num_layers)]
    pattern = c.get("sliding_window_pattern") or DEFAULT_PATTERN.get(c.get("model_type", ""))
    if isinstance(pattern, str):  # EXAONE 4: "LLLG", L = local, G = global, repeating
        return ["sliding" if pattern[i % len(pattern)] == "L" else "global"
                for i in range(num_layers)]
    if isinstance(pattern, int):  # every pattern-th layer is global
        return ["sliding" if (i + 1) % pattern else "global" for i in range(num_layers)]
    return ["sliding"] * num_layers  # Mistral style: one window for every layer


def _kind(layer_type: Any, source: Path) -> str:
    if layer_type in GLOBAL_TYPES:
        return "global"
    if layer_type in SLIDING_TYPES:
        return "sliding"
    if layer_type in NO_KV_TYPES:
        return "none"
    raise InvalidInput(f"{source}: layer_types: unknown layer type {layer_type!r}",
                       hint="known: " + ", ".join(sorted(GLOBAL_TYPES | SLIDING_TYPES
                                                         | NO_KV_TYPES)))


def moe_shape(config: dict[str, Any]) -> MoEShape | None:
    c = text_config(config)
    experts = first(c, "num_experts", "num_local_experts", "n_routed_experts",
                    "moe_num_experts")
    if not isinstance(experts, int) or experts <= 1:
        return None
    return MoEShape(
        num_experts=experts,
        experts_per_token=first(c, "num_experts_per_tok", "num_experts_per_token",
                                "moe_top_k", "moe_k"),
        num_shared_experts=first(c, "n_shared_experts", "num_shared_experts"),
        intermediate_size=first(c, "moe_intermediate_size", "expert_intermediate_size"),
    )
