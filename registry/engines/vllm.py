"""What the registry knows about vLLM's command line: argument names and argv rendering.

The argument table is extracted from vLLM 0.32's own parser
(`vllm.entrypoints.launchers.cli_args.make_arg_parser`) and shipped as data, so
validating a recipe never imports vLLM.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

ARGS_TABLE = "vllm_args_0.32.json"

# Spellings of one KV storage format: vLLM's `fp8` is e4m3 on every platform it ships.
KV_ALIASES = {"fp8": "fp8_e4m3"}


@cache
def arg_table() -> dict[str, dict[str, str]]:
    """dest name -> {"option": "--flag-name", "kind": value|bool|flag|list}."""
    text = resources.files(__package__).joinpath(ARGS_TABLE).read_text()
    table: dict[str, dict[str, str]] = json.loads(text)["args"]
    return table


def is_known_arg(name: str) -> bool:
    return name in arg_table()


def canonical_kv_dtype(value: str) -> str:
    return KV_ALIASES.get(value, value)


def _render_value(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def render_argv(args: dict[str, Any], extra_kinds: dict[str, str] | None = None) -> list[str]:
    """`vllm serve` flags for an argument map, in sorted order (a stable command line)."""
    table = arg_table()
    argv: list[str] = []
    for name in sorted(args):
        value = args[name]
        spec = table.get(name) or {"option": "--" + name.replace("_", "-"), "kind": "value"}
        kind = (extra_kinds or {}).get(name, spec["kind"])
        option = spec["option"]
        if kind == "bool":
            argv.append(option if value else "--no-" + option[2:])
        elif kind == "flag":
            if value:
                argv.append(option)
        elif kind == "list" and isinstance(value, list):
            argv += [option, *(_render_value(v) for v in value)]
        else:
            argv += [option, _render_value(value)]
    return argv
