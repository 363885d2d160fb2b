#!/usr/bin/env python3
"""Write registry/engines/llamacpp/llama_server_args_b<N>.json: llama-server's options
(every spelling, and whether each takes a value, is a flag, or an on/off pair) read
from llama.cpp's own `common/arg.cpp` (each `add_opt(common_arg(...))`, kept when its
`set_examples` includes the server or when it has none, as `common_params_parser_init`
does).

usage: tools/llama_args.py LLAMA_CPP_SOURCE_DIR BUILD_NUMBER
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

OPENING = re.compile(r"add_opt\(common_arg\(")
STRINGS = re.compile(r'"((?:[^"\\]|\\.)*)"')


def arguments(block: str) -> list[str]:
    """common_arg's arguments before its handler (the lambda), split at top-level commas."""
    args, depth, quoted, current = [], 0, False, ""
    i = 0
    while i < len(block):
        c = block[i]
        if quoted:
            current += c
            if c == "\\":
                current += block[i + 1]
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted, current = True, current + c
        elif c == "[" and depth == 0:
            break  # the handler
        elif c in "({":
            depth, current = depth + 1, current + c
        elif c in ")}":
            depth, current = depth - 1, current + c
        elif c == "," and depth == 0:
            args.append(current.strip())
            current = ""
        else:
            current += c
        i += 1
    return args


def options(source: str) -> dict[str, dict[str, object]]:
    table: dict[str, dict[str, object]] = {}
    starts = [m.end() for m in OPENING.finditer(source)]
    for begin, end in zip(starts, [*starts[1:], len(source)], strict=True):
        block = source[begin:end]
        examples = re.search(r"\.set_examples\(\{([^}]*)\}", block)
        if examples and not re.search(r"LLAMA_EXAMPLE_(?:SERVER|COMMON)\b", examples.group(1)):
            continue
        args = arguments(block)
        if not args or not args[0].startswith("{"):
            continue
        names = STRINGS.findall(args[0])
        negs = STRINGS.findall(args[1]) if len(args) > 1 and args[1].startswith("{") else []
        # (names, help, handler): a flag; (names, VALUE, help, handler): takes a value;
        # (names, {negatives}, help, handler(bool)): an on/off pair
        rest = args[2:] if negs else args[1:]
        hint = STRINGS.findall(rest[0]) if len(rest) >= 2 else []
        longs = [n for n in names if n.startswith("--")]
        if not longs:
            continue
        kind = "bool" if negs else ("value" if len(rest) >= 2 else "flag")
        entry = {"option": longs[0], "aliases": [n for n in names if n != longs[0]],
                 "negatives": negs, "kind": kind,
                 "value": (hint[0] if hint else rest[0][:40]) if kind == "value" else None}
        table.setdefault(longs[0][2:], entry)
    return dict(sorted(table.items()))


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    src, build = Path(sys.argv[1]), sys.argv[2]
    table = options((src / "common" / "arg.cpp").read_text())
    out = Path(__file__).resolve().parent.parent / "registry" / "engines" / "llamacpp" / \
        f"llama_server_args_b{build}.json"
    out.write_text(json.dumps({"source": f"llama.cpp b{build} common/arg.cpp",
                               "args": table}, indent=1, sort_keys=True) + "\n")
    print(f"{out}: {len(table)} options")
    return 0


if __name__ == "__main__":
    sys.exit(main())
