"""A llama.cpp recipe: its K and V cache types in llama.cpp's terms, and its `engine.args`,
llama-server's options under their long names, the model and the K and V cache types
from model.path and [precision]."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from registry.engines.llamacpp import args as llamacpp_args
from registry.errors import InvalidRecipe
from registry.recipe.schema import GGMLCacheType, PrecisionSpec, Recipe


def check_precision(p: PrecisionSpec) -> PrecisionSpec:
    """llama.cpp types K and V apart: both declared, or one `kv_cache` for the two."""
    if p.kv_cache is not None and not isinstance(p.kv_cache, GGMLCacheType):
        raise ValueError(f"precision.kv_cache = {p.kv_cache.value!r}: llama.cpp names its "
                         f"cache types {', '.join(t.value for t in GGMLCacheType)}")
    k, v = p.kv_cache_k or p.kv_cache, p.kv_cache_v or p.kv_cache
    if k is None or v is None:
        raise ValueError("llama.cpp: declare precision.kv_cache (K and V) or both "
                         "kv_cache_k and kv_cache_v")
    if p.kv_cache is not None and (k, v) != (p.kv_cache, p.kv_cache):
        raise ValueError("precision.kv_cache and kv_cache_k / kv_cache_v disagree")
    kv = k if k == v else None
    return p.model_copy(update={"kv_cache_k": k, "kv_cache_v": v, "kv_cache": kv})


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


