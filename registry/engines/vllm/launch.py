"""What a vLLM launch declares, under the identity field names: the engine's own
`non-default args` line, a command line (`vllm serve ...`, a docker argv), a launch
JSON's named values and a lab's env files (`TP=4`, `MAX_MODEL_LEN=...`).

Only engine arguments with a one-to-one identity field are read; a value the lab did
not state plainly (`kv_cache_dtype=auto`, `num_speculative_tokens` of an arm whose MTP
is off) is not declared. The importer (registry/importer/declared.py) names the file.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from registry.engines.vllm.logs.nondefault import find_nondefault_args

# engine argument (snake_case) -> (identity field, type)
ARGS: dict[str, tuple[str, type]] = {
    "tensor_parallel_size": ("parallel.tensor", int),
    "pipeline_parallel_size": ("parallel.pipeline", int),
    "data_parallel_size": ("parallel.data", int),
    "dtype": ("precision.dtype", str),
    "kv_cache_dtype": ("precision.kv_cache", str),
    "max_model_len": ("runtime.max_model_len", int),
    "block_size": ("runtime.block_size", int),
    "max_num_seqs": ("runtime.max_num_seqs", int),
    "max_num_batched_tokens": ("runtime.max_num_batched_tokens", int),
    "enable_prefix_caching": ("runtime.prefix_caching", bool),
    "async_scheduling": ("runtime.async_scheduling", bool),
    "gpu_memory_utilization": ("runtime.gpu_memory_utilization", float),
    "attention_backend": ("attention.backend", str),
    "num_speculative_tokens": ("spec.num_tokens", int),
    "vllm_commit": ("engine.commit", str),
}
# the lab's shell env files name the arguments in capitals, some shortened (`TP=4`)
ENV_NAMES = {"TP": "tensor_parallel_size", "MAX_BATCHED_TOKENS": "max_num_batched_tokens",
             "EXTRA_ARGS": "vllm_extra_args", "COMPILATION_CONFIG_JSON": "compilation_config"}
KV_NAMES = {"fp8": "fp8_e4m3"}  # vLLM's `fp8` KV cache is e4m3
NESTED = ("spec.method", "graph.cudagraph_mode", "graph.capture_sizes")


def log_declared(log: Path) -> tuple[dict[str, Any], int] | None:
    """The engine's own `non-default args: {...}` line: (fields, line number)."""
    found = find_nondefault_args(log)
    return None if found is None else (typed(flatten(found.args)), found.line)


def argv_declared(argv: list[str]) -> dict[str, Any]:
    """A command line's declared fields (vLLM reads any argv no other engine claims)."""
    return typed(argv_args(argv))


def named_declared(values: Mapping[str, Any]) -> dict[str, Any]:
    """Named values (a launch JSON's keys, an identity JSON, an env file's KEY=VALUE
    pairs) under the argument names they spell."""
    pairs = {_env_name(k): v for k, v in values.items()}
    if str(pairs.get("enable_mtp")) == "0":  # the lab keeps the MTP width of an arm with MTP off
        pairs.pop("num_speculative_tokens", None)
    args: dict[str, Any] = flatten(pairs)
    if isinstance(extra := pairs.get("vllm_extra_args"), str):
        args |= {k: v for k, v in argv_args(_split(extra)).items() if k not in args}
    if isinstance(config := _loads(pairs.get("compilation_config")), dict):
        args |= _graph(config)
    return typed(args)


def _env_name(key: str) -> str:
    """`TP` -> tensor_parallel_size, `MAX_MODEL_LEN` -> max_model_len (capitals only)."""
    return ENV_NAMES.get(key, key.lower()) if key.isupper() else key


def argv_args(argv: list[str]) -> dict[str, Any]:
    """`--flag value`, `--flag=value`, `--no-flag` after `serve` (or from `--model`); the
    last occurrence wins, as in the engine's own parser."""
    start = next((i + 1 for i in range(len(argv) - 1, -1, -1) if argv[i] == "serve"),
                 next((i for i, a in enumerate(argv) if a.split("=")[0] == "--model"), 0))
    out: dict[str, Any] = {}
    tokens = argv[start:]
    for i, token in enumerate(tokens):
        if not token.startswith("--"):
            continue
        flag, eq, value = token[2:].partition("=")
        key = flag.replace("-", "_")
        if eq:
            out[key] = value
        elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            out[key] = tokens[i + 1]
        elif key.startswith("no_"):
            out[key[3:]] = False
        else:
            out[key] = True
    for name in ("speculative_config", "compilation_config"):
        if isinstance(config := _loads(out.get(name)), dict):
            out |= _graph(config) if name == "compilation_config" else _spec(config)
    return out


def flatten(args: Mapping[str, Any]) -> dict[str, Any]:
    """The non-default args dict (or a JSON launch) with its nested configs opened."""
    out = dict(args)
    if isinstance(spec := args.get("speculative_config"), dict):
        out |= _spec(spec)
    if isinstance(config := args.get("compilation_config"), dict):
        out |= _graph(config)
    return out


def _spec(config: dict[str, Any]) -> dict[str, Any]:
    return {"num_speculative_tokens": config.get("num_speculative_tokens"),
            "spec.method": config.get("method")}


def _graph(config: dict[str, Any]) -> dict[str, Any]:
    mode, sizes = config.get("cudagraph_mode"), config.get("cudagraph_capture_sizes")
    return {"graph.cudagraph_mode": mode.upper() if isinstance(mode, str) else None,
            "graph.capture_sizes": sizes if isinstance(sizes, list) else None}


def typed(args: Mapping[str, Any]) -> dict[str, Any]:
    """Argument name -> value, as identity field -> typed value (unreadable ones left out)."""
    values: dict[str, Any] = {}
    for key, raw in args.items():
        if key in NESTED:
            field, value = key, raw
        elif key in ARGS:
            field, kind = ARGS[key]
            value = _convert(raw, kind)
        else:
            continue
        if field == "precision.kv_cache":
            value = None if value == "auto" else KV_NAMES.get(value, value)
        if value is not None and value != "":
            values[field] = value
    return values


def _convert(raw: Any, kind: type) -> Any:
    if isinstance(raw, kind) and not (kind is int and isinstance(raw, bool)):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        return None
    text = raw.strip()
    try:
        if kind is bool:
            return {"1": True, "true": True, "0": False, "false": False}.get(text.lower())
        return kind(text)
    except ValueError:
        return None


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
