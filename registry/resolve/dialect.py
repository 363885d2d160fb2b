"""Which engine wrote a run's log: the recipe's `engine.name`, else the log's own lines
(a llama-server log prints lines no vLLM server does)."""

from __future__ import annotations

from pathlib import Path

from registry.logs.llamacpp import looks_like_llamacpp
from registry.recipe import Recipe


def engine_of(recipe: Recipe | None, log: Path) -> str:
    if recipe is not None:
        return recipe.engine.name
    return "llama.cpp" if looks_like_llamacpp(log) else "vllm"
