"""Recipes: declarative TOML describing one serving run and how to measure it."""

from registry.recipe.loader import load_recipe
from registry.recipe.schema import SCHEMA, Recipe

__all__ = ["SCHEMA", "Recipe", "load_recipe"]
