"""Which engine wrote a run's log: the recipe's `engine.name`, else the first engine
plug-in whose log signature the log's head matches, else the engine that reads a log no
signature claims."""

from __future__ import annotations

import re
from pathlib import Path

from registry.engines.base import EnginePlugin
from registry.engines.plugin import engine_for, plugins, unnamed
from registry.recipe import Recipe

HEAD_BYTES = 256 * 1024


def engine_of(recipe: Recipe | None, log: Path) -> EnginePlugin:
    if recipe is not None:
        return engine_for(recipe.engine.name)
    with log.open("rb") as f:
        head = f.read(HEAD_BYTES).decode("utf-8", "replace").replace("\x00", "")
    signed = [p for p in plugins().values() if not p.unnamed_default]
    return next((p for p in signed if re.search(p.log_signature, head)), None) or unnamed()
