"""What a recipe declares, under the identity field names: its engine's plug-in says."""

from __future__ import annotations

from typing import Any

from registry.engines.plugin import engine_for
from registry.recipe import Recipe


def declared_values(recipe: Recipe | None) -> dict[str, Any]:
    return engine_for(recipe.engine.name).declared(recipe) if recipe is not None else {}
