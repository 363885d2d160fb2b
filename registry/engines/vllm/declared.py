"""What a vLLM recipe declares, under the identity field names."""

from __future__ import annotations

import json
from typing import Any

from registry.recipe import Recipe

COMPILATION_MODES = {0: "NONE", 1: "STOCK_TORCH_COMPILE", 2: "DYNAMO_TRACE_ONCE",
                     3: "VLLM_COMPILE"}


def declared_values(recipe: Recipe) -> dict[str, Any]:
    args = recipe.engine.args
    graphs = _compilation_config(args.get("compilation_config"))
    draft, p, par = recipe.draft, recipe.precision, recipe.parallel
    return {
        "engine.name": recipe.engine.name,
        "engine.version": recipe.engine.version,
        "engine.commit": recipe.engine.commit,
        "model.path": recipe.model.path or recipe.model.hub_id,
        "model.revision": recipe.model.revision,
        "model.manifest_sha256": recipe.model.manifest_sha256,
        "draft.revision": draft.revision if draft else None,
        "draft.manifest_sha256": draft.manifest_sha256 if draft else None,
        "spec.method": draft.method if draft else "none",
        "spec.num_tokens": draft.num_speculative_tokens if draft else None,
        "precision.dtype": p.activations.value if p.activations else None,
        "precision.weights": p.weights,
        "precision.draft_weights": p.draft_weights,
        "precision.kv_cache": p.kv_label(),
        "precision.draft_kv_cache": p.draft_kv_cache.value if p.draft_kv_cache else None,
        "parallel.tensor": par.tensor,
        "parallel.pipeline": par.pipeline,
        "parallel.data": par.data,
        "parallel.expert": par.expert,
        "graph.compilation_mode": _mode(graphs.get("mode")),
        "graph.cudagraph_mode": _upper(graphs.get("cudagraph_mode")),
        "graph.capture_sizes": graphs.get("cudagraph_capture_sizes"),
        "attention.backend": args.get("attention_backend"),
        "runtime.max_model_len": args.get("max_model_len"),
        "runtime.block_size": args.get("block_size"),
        "runtime.max_num_seqs": args.get("max_num_seqs"),
        "runtime.max_num_batched_tokens": args.get("max_num_batched_tokens"),
        "runtime.prefix_caching": args.get("enable_prefix_caching"),
        "runtime.async_scheduling": args.get("async_scheduling"),
        "runtime.gpu_memory_utilization": args.get("gpu_memory_utilization"),
        "runtime.device": recipe.hardware.platform.value,
    }


def _compilation_config(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # not JSON, too deep, an integer too long
            return {}
    return value if isinstance(value, dict) else {}


def _mode(value: Any) -> str | None:
    if isinstance(value, int):
        return COMPILATION_MODES.get(value)
    return _upper(value)


def _upper(value: Any) -> str | None:
    return value.upper() if isinstance(value, str) else None
