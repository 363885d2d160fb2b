"""The engine's own `non-default args: {...}` line, parsed into typed values.

vLLM prints the arguments that differ from its defaults as a Python dict repr once
at start. Enum members appear as `<CUDAGraphMode.FULL: (2, 1)>`; they become their
member name. The text is read with `ast.literal_eval` (literals only, never code),
bounded in size, and anything it cannot read is reported, not guessed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from pydantic import Field

from registry.base.model import Frozen

MARKER = "non-default args: "
MAX_TEXT = 256 * 1024  # a real line is a few kB; a longer one is not read
MAX_LINES = 50_000  # the line comes at start: never scan a whole long log for it
_ENUM = re.compile(r"<([A-Za-z_][\w.]*)\.(\w+): [^<>]*>")


class NonDefaultArgs(Frozen):
    line: int = Field(description="1-based line number in the log")
    args: dict[str, Any] = Field(description="argument name -> value, as the engine parsed it")


def parse_args_text(text: str) -> dict[str, Any] | None:
    """The dict after `non-default args: `, or None when it is not a readable literal."""
    text = text.strip()
    if not text.startswith("{") or len(text) > MAX_TEXT:
        return None
    try:
        value = ast.literal_eval(_ENUM.sub(lambda m: repr(m.group(2)), text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) and all(isinstance(k, str) for k in value) else None


def find_nondefault_args(path: Path) -> NonDefaultArgs | None:
    """The first readable `non-default args` line of a log, else None. Lines longer than
    the bound are skipped whole (read in bounded pieces: a file with no newline is never
    held in memory)."""
    number, whole = 0, True
    with path.open("rb") as f:
        while number < MAX_LINES:
            raw = f.readline(2 * MAX_TEXT)
            if not raw:
                return None
            starts, whole = whole, raw.endswith(b"\n")
            if not starts:
                continue  # the rest of an over-long line
            number += 1
            at = raw.find(MARKER.encode())
            if whole and at >= 0:
                args = parse_args_text(raw[at + len(MARKER):].decode("utf-8", "replace"))
                if args is not None:
                    return NonDefaultArgs(line=number, args=args)
    return None
