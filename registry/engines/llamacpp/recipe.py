"""A llama.cpp recipe's `engine.args`: llama-server's options under their long names,
the model and the K and V cache types from model.path and [precision]."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from registry.engines.llamacpp import args as llamacpp_args
from registry.errors import InvalidRecipe
from registry.recipe.schema import Recipe


def normalize_args(recipe: Recipe, path: Path) -> dict[str, Any]:
    """llama-server's options under their long names; the model and the K and V cache
    types come from model.path and [precision]."""
    args, problems = llamacpp_args.normalize_args(recipe.engine.args)
    if problems:
        p = problems[0]
        raise InvalidRecipe(path, f"engine.args.{p.key}", p.message, hint=p.hint)
    k, v = recipe.precision.kv_cache_k, recipe.precision.kv_cache_v
    derived = {"model": ("model.path", recipe.model.path),
               "cache-type-k": ("precision.kv_cache_k", k.value if k else None),
               "cache-type-v": ("precision.kv_cache_v", v.value if v else None)}
    for name, (source, value) in derived.items():
        given = args.get(name)
        if given is not None and (llamacpp_args.kv_type_arg(given) if name != "model"
                                  else given) != value:
            raise InvalidRecipe(path, f"engine.args.{name}",
                                f"{given!r} conflicts with {source} ({value!r})",
                                hint=f"declare it once, in {source}")
        if value is not None:
            args[name] = value
    return args


