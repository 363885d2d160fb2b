"""Add each argument's value type and choices to the shipped vLLM argument table, read
from vLLM's own parser (run once per engine release, in an environment with that vLLM):

    python tools/vllm_args.py registry/engines/vllm_args_0.32.json

Keeps every existing entry (`option`, `kind`); adds `type` (int, float, str, json,
int-or-auto, size: a human-readable int such as 32k) where the parser converts the
value, and `choices` where it restricts it. A recipe is then checked against the
table without importing vLLM (registry/engines/vllm.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

NAMES = {"int": "int", "float": "float", "str": "str", "loads": "json",
         "parse_dataclass": "json", "union_dict_and_str": "json",
         "human_readable_int": "size", "human_readable_int_or_auto": "size-or-auto"}


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


def main(path: Path) -> int:
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    table = json.loads(path.read_text())
    parser = make_arg_parser(FlexibleArgumentParser())
    for action in parser._actions:
        entry = table["args"].get(action.dest)
        if entry is None:
            continue
        found = value_type(action.type)
        if found:
            entry["type"] = found
        if action.choices:
            entry["choices"] = sorted(str(c) for c in action.choices)
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    typed = sum(1 for e in table["args"].values() if "type" in e or "choices" in e)
    print(f"{typed} of {len(table['args'])} arguments typed")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
