"""llama-server's command line as data: its options under their long names (every
alias and negative form mapped to one), validated and rendered as argv. The table is
read from llama.cpp's own `common/arg.cpp` by tools/llama_args.py and shipped as JSON."""

from __future__ import annotations

import difflib
import re
from functools import cache
from importlib import resources
from typing import Any

from registry.base.model import Frozen

BUILD = 11434
ARGS_TABLE = f"llama_server_args_b{BUILD}.json"
# Chosen by the executor or derived from the recipe's own tables, never written as args.
EXECUTOR_ARGS = frozenset({"host", "port", "metrics", "verbosity", "api-key", "path",
                           "api-prefix"})


class ArgProblem(Frozen):
    key: str
    message: str
    hint: str | None = None


@cache
def arg_table() -> dict[str, dict[str, Any]]:
    """long name -> {"option", "aliases", "negatives", "kind": value|flag|bool, "value"}."""
    import json

    text = resources.files(__package__).joinpath(ARGS_TABLE).read_text()
    table: dict[str, dict[str, Any]] = json.loads(text)["args"]
    return table


@cache
def spellings() -> dict[str, tuple[str, bool]]:
    """Every way to write an option (`-ctk`, `ctk`, `cache_type_k`, `no-warmup`) -> its long
    name and whether the spelling switches it on."""
    out: dict[str, tuple[str, bool]] = {}
    for name, spec in arg_table().items():
        for spelling in [spec["option"], *spec["aliases"]]:
            out.setdefault(spelling.lstrip("-"), (name, True))
        for spelling in spec["negatives"]:
            out.setdefault(spelling.lstrip("-"), (name, False))
    return out


def canonical(key: str) -> tuple[str, bool] | None:
    text = key.lstrip("-")
    return spellings().get(text) or spellings().get(text.replace("_", "-"))


def normalize_args(args: dict[str, Any]) -> tuple[dict[str, Any], list[ArgProblem]]:
    """Args under their long names with typed values; what cannot be is a problem."""
    out: dict[str, Any] = {}
    problems: list[ArgProblem] = []
    for key, value in args.items():
        found = canonical(key)
        if found is None:
            close = difflib.get_close_matches(key.lstrip("-"), list(spellings()), n=1)
            problems.append(ArgProblem(
                key=key, message=f"not a llama-server b{BUILD} option"
                + (f"; did you mean {close[0]!r}?" if close else "")))
            continue
        name, positive = found
        problem = _typed(name, value) or (
            ArgProblem(key=key, message="the executor chooses this argument",
                       hint="remove it from the recipe") if name in EXECUTOR_ARGS else None)
        if problem is None and name in out:
            problem = ArgProblem(key=key, message=f"{name} is given twice (as {key!r} too)")
        if problem:
            problems.append(problem.model_copy(update={"key": key}))
            continue
        out[name] = value if positive or not isinstance(value, bool) else not value
    return out, problems


def _typed(name: str, value: Any) -> ArgProblem | None:
    kind = arg_table()[name]["kind"]
    if kind in ("flag", "bool") and not isinstance(value, bool):
        return ArgProblem(key=name, message=f"{name} is a switch: true or false",
                          hint=f"write {name} = true")
    if kind == "flag" and value is False:
        return ArgProblem(key=name, message=f"{name} has no off form: leave it out")
    if kind == "value" and (isinstance(value, bool) or not isinstance(value, int | float | str)):
        return ArgProblem(key=name, message=f"{name} takes one value "
                          f"({arg_table()[name]['value']}), a number or a string")
    return None


def render_argv(args: dict[str, Any]) -> list[str]:
    """llama-server options for normalized args, in sorted order (a stable command line)."""
    table = arg_table()
    argv: list[str] = []
    for name in sorted(args):
        spec, value = table[name], args[name]
        if spec["kind"] == "flag":
            argv += [spec["option"]] if value else []
        elif spec["kind"] == "bool":
            longs = [n for n in spec["negatives"] if n.startswith("--")] or spec["negatives"]
            argv.append(spec["option"] if value else longs[0])
        else:
            argv += [spec["option"], str(value)]
    return argv


def kv_type_arg(value: Any) -> str:
    """`--cache-type-k F16` and `f16` name one type: ggml's names are lower case."""
    return re.sub(r"\s+", "", str(value)).lower()
