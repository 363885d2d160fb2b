"""An engine option smuggled in as a value, and an option given twice.

A recipe maps 1:1 to a command line, one argument per key. A list value is rendered as
one option followed by its items, so `served_model_name = ["tiny", "--kv-cache-dtype",
"fp8"]` would put a second `--kv-cache-dtype` on the line, after the one the
`[precision]` table decided, and the engine keeps the last: the record would say
bfloat16 while the engine stored fp8. So no value, and no item of a list value, may
look like an option (a dash then a letter: negative numbers are values), and a plan
never holds one option twice (`--x` and `--no-x` are the same option).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

OPTION = re.compile(r"-{1,2}[A-Za-z]")


def smuggled(args: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first (argument name, value) whose value or list item looks like an option."""
    for name in sorted(args):
        value = args[name]
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and OPTION.match(item):
                return name, item
    return None


def smuggled_problem(name: str, item: str) -> str:
    return (f"{item!r} looks like an engine option, not a value: each option is its own "
            f"key in engine.args (a list value is rendered after --{name.replace('_', '-')})")


def repeated(argv: Sequence[str]) -> str | None:
    """The first option that appears twice in `argv`, or None."""
    seen: set[str] = set()
    for token in argv:
        if not token.startswith("--") or not OPTION.match(token):
            continue
        name = token.split("=", 1)[0]
        name = "--" + name[5:] if name.startswith("--no-") else name
        if name in seen:
            return name
        seen.add(name)
    return None
