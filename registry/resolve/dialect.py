"""Which engine wrote a run's log: the recipe's `engine.name`, else the first engine
plug-in whose log signature the log's head matches (vLLM when none does)."""

from __future__ import annotations

import re
from pathlib import Path

from registry.engines.plugin import PLUGINS
from registry.recipe import Recipe

HEAD_BYTES = 256 * 1024


def engine_of(recipe: Recipe | None, log: Path) -> str:
    if recipe is not None:
        return recipe.engine.name
    with log.open("rb") as f:
        head = f.read(HEAD_BYTES).decode("utf-8", "replace").replace("\x00", "")
    others = [p for name, p in PLUGINS.items() if name != "vllm"]
    return next((p.name for p in others if re.search(p.log_signature, head)), "vllm")
