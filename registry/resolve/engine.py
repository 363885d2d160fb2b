"""The engine's own statements, read from the parsed log: its config line and args.

The config line (`Initializing a V1 LLM engine (vX) with config: k=v, ...`) is the
engine's resolved configuration; `non-default args: {...}` is what was requested
(a Python dict repr with enum reprs, not JSON).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from registry.identity import Evidence
from registry.logs import Fact, LogScan
from registry.logs.messages import Kind

SOURCE = "server.log"
ENUM_REPR = re.compile(r"<(\w+)\.(\w+): [^<>]*>")
COMPILATION = {
    "mode": re.compile(r"'mode': <CompilationMode\.(\w+)"),
    "cudagraph_mode": re.compile(r"'cudagraph_mode': <CUDAGraphMode\.(\w+)"),
    "cudagraph_capture_sizes": re.compile(r"'cudagraph_capture_sizes': \[([^\]]*)\]"),
}
OPEN, CLOSE = "([{", ")]}"


def split_items(text: str) -> dict[str, str]:
    """`k=v, k=v` at the top level (nested brackets and quotes kept whole)."""
    items: dict[str, str] = {}
    depth, quote, start = 0, "", 0
    for i, ch in enumerate(text + ","):
        if quote:
            quote = "" if ch == quote and text[i - 1] != "\\" else quote
        elif ch in "'\"":
            quote = ch
        elif ch in OPEN:
            depth += 1
        elif ch in CLOSE:
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            key, eq, value = text[start:i].strip().partition("=")
            if eq and key.isidentifier():
                items[key] = value.strip()
            start = i + 1
    return items


def unquote(value: str | None) -> str | None:
    if value is None or value == "None":
        return None
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def parse_args(text: str) -> dict[str, Any]:
    """The `non-default args` dict; {} when its repr holds something literal_eval refuses."""
    try:
        value = ast.literal_eval(ENUM_REPR.sub(lambda m: repr(m.group(2)), text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


class EngineLog:
    """Accessors over a `LogScan`, each returning a value with the fact that proves it."""

    def __init__(self, scan: LogScan) -> None:
        self.scan = scan
        self.config_fact = scan.first(Kind.engine_config)
        self.config = split_items(self.config_fact.values.get("config", "")) \
            if self.config_fact else {}
        self.args_fact = scan.first(Kind.args)
        self.args = parse_args(self.args_fact.values["args"]) if self.args_fact else {}
        spec = self.config.get("speculative_config", "")
        inner = spec[spec.find("(") + 1:spec.rfind(")")] if spec.endswith(")") else ""
        self.speculative = {k: unquote(v) for k, v in split_items(inner).items()}

    def setting(self, key: str) -> tuple[str | None, Evidence | None]:
        """A `key=value` of the config line, unquoted, with its evidence."""
        if self.config_fact is None or key not in self.config:
            return None, None
        raw = self.config[key]
        return unquote(raw), evidence(self.config_fact, f"{key}={raw}")

    def compilation(self, key: str) -> tuple[str | None, Evidence | None]:
        raw = self.config.get("compilation_config", "")
        found = COMPILATION[key].search(raw)
        if not found or self.config_fact is None:
            return None, None
        return found.group(1), evidence(self.config_fact, found.group(0))

    def arg(self, key: str) -> tuple[Any, Evidence | None]:
        if self.args_fact is None or key not in self.args:
            return None, None
        return self.args[key], evidence(self.args_fact, f"{key}: {self.args[key]!r}")

    def first(self, kind: Kind) -> Fact | None:
        return self.scan.first(kind)

    def all(self, kind: Kind) -> list[Fact]:
        return self.scan.all(kind)


def evidence(fact: Fact, text: str | None = None) -> Evidence:
    return Evidence(source=SOURCE, line=fact.line, text=text if text is not None else fact.text)
