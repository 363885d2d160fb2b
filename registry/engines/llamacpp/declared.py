"""What a llama-server command line declares (a lab's `configs/server-args.json`, a
launch argv, the `key=value` settings a launcher prints atop its log): options read with
llama-server's own table (every alias: `-c`, `-fa`, `-sm`, `ctx_size`), kept where an
identity field means the same thing. `--gpu-layers 99` is not declared: it asks for
"all", while the field is the count offloaded."""

from __future__ import annotations

import shlex
from typing import Any

from registry.engines.llamacpp.args import arg_table, canonical, kv_type_arg, render_argv
from registry.recipe import Recipe

# option -> (identity field, type)
FIELDS: dict[str, tuple[str, type]] = {
    "ctx-size": ("runtime.ctx_size", int),
    "parallel": ("runtime.n_parallel", int),
    "batch-size": ("runtime.batch_size", int),
    "ubatch-size": ("runtime.ubatch_size", int),
    "flash-attn": ("runtime.flash_attn", str),
    "split-mode": ("parallel.split_mode", str),
    "spec-type": ("spec.method", str),
    "spec-draft-n-max": ("spec.n_max", int),
    "spec-draft-n-min": ("spec.n_min", int),
    "cache-type-k": ("precision.kv_cache_k", str),
    "cache-type-v": ("precision.kv_cache_v", str),
}


def llama_argv_options(argv: list[str]) -> dict[str, Any]:
    """Long name -> value of each llama-server option in `argv` (the last one wins, as in
    the server's parser); words that are not options are skipped."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        token, value = argv[i].partition("=")[::2] if argv[i].startswith("--") else (argv[i], "")
        found = canonical(token) if token.startswith("-") else None
        if found is None:
            i += 1
            continue
        name, positive = found
        if arg_table()[name]["kind"] == "value":
            if not value and i + 1 < len(argv):
                value, i = argv[i + 1], i + 1
            out[name] = value
        else:
            out[name] = positive
        i += 1
    return out


def declared_fields(argv: list[str]) -> dict[str, Any]:
    """Identity field -> declared value, for the options that map one to one."""
    values: dict[str, Any] = {}
    for name, raw in llama_argv_options(argv).items():
        if name not in FIELDS or raw in ("", None, "auto"):
            continue
        field, kind = FIELDS[name]
        try:
            value = kind(raw)
        except (TypeError, ValueError):
            continue
        values[field] = kv_type_arg(value) if field.startswith("precision.") else value
    if "precision.kv_cache_k" in values and "precision.kv_cache_v" in values:
        k, v = values["precision.kv_cache_k"], values["precision.kv_cache_v"]
        values["precision.kv_cache"] = k if k == v else f"{k}/{v}"
    return values


def declared_settings(settings: dict[str, str]) -> dict[str, Any]:
    """A launcher's printed settings (`ctx_size=32768`, `cache_type_k=f16`,
    `extra_llama_args=-sm tensor ...`) as declared fields."""
    argv: list[str] = []
    for key, value in settings.items():
        if key == "extra_llama_args":
            try:
                argv += shlex.split(value)
            except ValueError:
                continue
        elif (found := canonical(key)) is not None:
            argv += ["--" + found[0], value]
    return declared_fields(argv)


def recipe_declared(recipe: Recipe) -> dict[str, Any]:
    """A llama.cpp recipe: its [precision], and the options that name identity fields."""
    p = recipe.precision
    return {
        **declared_fields(render_argv(recipe.engine.args)),
        "engine.name": recipe.engine.name,
        "engine.version": recipe.engine.version,
        "model.path": recipe.model.path,
        "spec.method": "none" if recipe.draft is None else None,
        "precision.weights": p.weights,
        "precision.kv_cache": p.kv_label(),
        "precision.kv_cache_k": p.kv_cache_k.value if p.kv_cache_k else None,
        "precision.kv_cache_v": p.kv_cache_v.value if p.kv_cache_v else None,
    }


# options only llama-server has: a launch argv holding one (or naming the binary) is its
LLAMA_ONLY = ("-ngl", "-fa", "-sm", "-ctk", "-ctv", "--spec-type", "-np")


def launch_declared(argv: list[str]) -> dict[str, Any] | None:
    """A launch command line (a lab's `configs/server-args.json`, a launch argv) as
    declared fields; None when it is not llama-server's."""
    if not (any(a.endswith("llama-server") for a in argv) or any(a in LLAMA_ONLY for a in argv)):
        return None
    return declared_fields(argv)
