"""A vLLM recipe: its KV precision in vLLM's terms, and its `engine.args`, each checked
against the argument table of the recipe's engine release, the ones the structured tables
imply derived."""

from __future__ import annotations

import difflib
import warnings
from pathlib import Path
from typing import Any

from registry.engines.vllm import args as vllm
from registry.errors import InvalidRecipe, RegistryWarning
from registry.recipe.schema import GGMLCacheType, KVCacheDtype, PrecisionSpec, Recipe

# Arguments the executor owns: it picks the address so runs never collide.
EXECUTOR_ARGS = {"host", "port", "model_tag"}


def check_precision(p: PrecisionSpec) -> PrecisionSpec:
    """vLLM has one KV cache dtype, from its own list."""
    if p.kv_cache_k or p.kv_cache_v:
        raise ValueError("precision.kv_cache_k / kv_cache_v are llama.cpp's: vLLM has one "
                         "precision.kv_cache")
    if not isinstance(p.kv_cache, KVCacheDtype):
        raise ValueError("precision.kv_cache: vLLM needs one of "
                         f"{', '.join(k.value for k in KVCacheDtype)}")
    return p


def kv_cache_arg(kv: KVCacheDtype | GGMLCacheType | None) -> str:
    """The `--kv-cache-dtype` value that asks vLLM for a declared KV precision (a vLLM
    recipe always declares one: the schema checks it)."""
    if kv is None:
        raise ValueError("a vLLM recipe declares precision.kv_cache")
    return "auto" if kv is KVCacheDtype.checkpoint else kv.value


def _derived_args(r: Recipe) -> dict[str, tuple[str, Any]]:
    """vLLM argument -> (the recipe key it comes from, value)."""
    model = r.model.path or r.model.hub_id
    out: dict[str, tuple[str, Any]] = {
        "model": ("model.path", model),
        "kv_cache_dtype": ("precision.kv_cache", kv_cache_arg(r.precision.kv_cache)),
        "tensor_parallel_size": ("parallel.tensor", r.parallel.tensor),
        "pipeline_parallel_size": ("parallel.pipeline", r.parallel.pipeline),
        "data_parallel_size": ("parallel.data", r.parallel.data),
    }
    if r.model.revision:
        out["revision"] = ("model.revision", r.model.revision)
    if r.precision.activations:
        out["dtype"] = ("precision.activations", r.precision.activations.value)
    if r.parallel.expert > 1:
        out["enable_expert_parallel"] = ("parallel.expert", True)
    if r.draft:
        spec: dict[str, Any] = {"method": r.draft.method,
                                "num_speculative_tokens": r.draft.num_speculative_tokens}
        if r.draft.path or r.draft.hub_id:
            spec["model"] = r.draft.path or r.draft.hub_id
        if r.draft.revision:
            spec["revision"] = r.draft.revision
        dkv = r.precision.draft_kv_cache
        if dkv is not None and dkv.value != "target":
            spec["kv_cache_dtype"] = dkv.value
        out["speculative_config"] = ("draft", {**r.draft.config, **spec})
    return out


def _agrees(name: str, declared: Any, given: Any) -> bool:
    if name == "kv_cache_dtype" and isinstance(given, str):
        return vllm.canonical_kv_dtype(given) == vllm.canonical_kv_dtype(declared)
    return bool(declared == given)


def normalize_args(recipe: Recipe, path: Path) -> dict[str, Any]:
    """Each argument checked against the argument table of the recipe's engine release
    (registry.engines.vllm.args.table_for: the nearest lower one shipped, said in a warning,
    when that release's own is not)."""
    args = dict(recipe.engine.args)
    known = set(recipe.engine.custom_args)
    version = recipe.engine.version
    chosen = vllm.table_for(version)
    if chosen.note and args:
        _warn_once(chosen.note)
    for name in args:
        if "-" in name:
            raise InvalidRecipe(path, f"engine.args.{name}",
                                "engine args use vLLM's snake_case names",
                                hint=f"write {name.replace('-', '_')!r}")
        if name in EXECUTOR_ARGS:
            raise InvalidRecipe(path, f"engine.args.{name}", "the executor chooses this argument",
                                hint="remove it from the recipe")
        if not vllm.is_known_arg(name, version) and name not in known:
            close = difflib.get_close_matches(name, list(vllm.arg_table(version)), n=1)
            raise InvalidRecipe(
                path, f"engine.args.{name}", f"not a {chosen.label} `vllm serve` argument"
                + (f"; did you mean {close[0]!r}?" if close else ""),
                hint="a patched engine's own arguments go in engine.custom_args"
                     + ("" if version else "; engine.version names the release to check "
                        "against"),
            )
        problem = vllm.arg_problem(name, args[name], version)
        if problem:
            raise InvalidRecipe(path, f"engine.args.{name}", problem,
                                hint=f"write it as {chosen.label}'s argument table types it "
                                     "(true/false, a number, a table)")
    for name, (source, value) in _derived_args(recipe).items():
        if name in args and not _agrees(name, value, args[name]):
            raise InvalidRecipe(
                path, f"engine.args.{name}",
                f"{args[name]!r} conflicts with {source} (which means {name} = {value!r})",
                hint=f"declare it once, in {source}",
            )
        args.setdefault(name, value)
    return args


_WARNED: set[str] = set()  # one warning a process: a command may load a recipe twice


def _warn_once(note: str) -> None:
    if note not in _WARNED:
        _WARNED.add(note)
        warnings.warn(note, RegistryWarning, stacklevel=3)


