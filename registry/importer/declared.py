"""What a capsule declares, without a recipe: from the engine's own `non-default args`
line, the launch JSON's command line, and the lab's identity/env files, in that order
of precedence. Every value names the file (and key or line) that declared it.

Only engine arguments with a one-to-one identity field are read; a value the lab did
not state plainly (`kv_cache_dtype=auto`, `num_speculative_tokens` of an arm whose MTP
is off) is not declared.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from registry.base.model import Frozen
from registry.engines.llamacpp.declared import declared_fields
from registry.engines.vllm.logs.nondefault import find_nondefault_args
from registry.errors import InvalidInput
from registry.importer.walk import load_json

MAX_PAIRS = 10_000  # KEY=VALUE pairs kept from one file (an environment dump holds ~200)
MAX_PAIR = 1 << 16  # bytes of one KEY=VALUE line

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


class Declared(Frozen):
    values: dict[str, Any]
    sources: dict[str, str]  # field -> "file: key" or "file:line"

    def merged(self, lower: Declared) -> Declared:
        """These values, then `lower`'s for fields not declared here."""
        extra = {k: v for k, v in lower.values.items() if k not in self.values}
        return Declared(values={**self.values, **extra},
                        sources={**self.sources, **{k: lower.sources[k] for k in extra}})


EMPTY = Declared(values={}, sources={})


def declared_from(capsule: Path, log: str | None, launches: list[str],
                  identities: list[str]) -> Declared:
    out = _from_log(capsule, log) if log else EMPTY
    for name in launches:
        out = out.merged(_from_launch(capsule, name))
    for name in identities:
        out = out.merged(_from_identity(capsule, name))
    return out


def _from_log(capsule: Path, log: str) -> Declared:
    found = find_nondefault_args(capsule / log)
    if found is None:
        return EMPTY
    return _typed(_flatten(found.args), f"{log}:{found.line} (non-default args)")


def _from_launch(capsule: Path, name: str) -> Declared:
    data = load_json(capsule / name)
    if isinstance(data, dict) and isinstance(data.get("argv"), list):
        data = data["argv"]
    if isinstance(data, list) and all(isinstance(a, str) for a in data):
        if _is_llama_server(data):
            values = declared_fields(data)
            return Declared(values=values, sources=dict.fromkeys(values, f"{name}: argv"))
        return _typed(argv_args(data), f"{name}: argv")
    if isinstance(data, dict):  # launch-env.json and the like: names as keys
        return _typed(_flatten(data), name)
    return EMPTY


def _is_llama_server(argv: list[str]) -> bool:
    """A llama-server command line: its binary named, or options only it has."""
    return any(a.endswith("llama-server") for a in argv) or \
        any(a in ("-ngl", "-fa", "-sm", "-ctk", "-ctv", "--spec-type", "-np") for a in argv)


def _from_identity(capsule: Path, name: str) -> Declared:
    if name.endswith(".json"):
        data = load_json(capsule / name)
        return _typed(_flatten(data), name) if isinstance(data, dict) else EMPTY
    pairs = {_env_name(k): v for k, v in key_values(capsule / name).items()}
    if pairs.get("enable_mtp") == "0":  # the lab's files keep the MTP width of an arm with MTP off
        pairs.pop("num_speculative_tokens", None)
    args: dict[str, Any] = dict(pairs)
    if "vllm_extra_args" in pairs:
        args |= {k: v for k, v in argv_args(_split(pairs["vllm_extra_args"])).items()
                 if k not in args}
    if isinstance(config := _loads(pairs.get("compilation_config")), dict):
        args |= _graph(config)
    return _typed(args, name)


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


def _flatten(args: dict[str, Any]) -> dict[str, Any]:
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


def _typed(args: dict[str, Any], source: str) -> Declared:
    values: dict[str, Any] = {}
    for key, raw in args.items():
        if key in ("spec.method", "graph.cudagraph_mode", "graph.capture_sizes"):
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
    return Declared(values=values, sources={f: source for f in values})


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


def key_values(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (identity.txt, *.env), read as a stream; other lines skipped. What
    is kept goes into the statement: more than MAX_PAIRS pairs, or a line over MAX_PAIR
    bytes, is refused naming the file (no environment dump or identity file is that big)."""
    if not path.is_file():
        return {}
    out: dict[str, str] = {}
    with open(path, "rb") as f:
        for number, raw in enumerate(iter(lambda: f.readline(MAX_PAIR + 1), b""), 1):
            if len(raw) > MAX_PAIR and not raw.endswith(b"\n"):
                raise InvalidInput(f"{path}: line {number} is over {MAX_PAIR:,} bytes: not a "
                                   "KEY=VALUE file")
            k, sep, v = raw.decode(errors="replace").rstrip("\r\n").partition("=")
            if sep and k.strip() and " " not in k.strip():
                out[k.strip()] = v
            if len(out) > MAX_PAIRS:
                raise InvalidInput(f"{path}: more than {MAX_PAIRS:,} KEY=VALUE lines: not an "
                                   "environment dump or identity file",
                                   hint="take it out of the capsule, or cut it to what the "
                                        "run's environment was")
    return out


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

