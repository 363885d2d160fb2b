"""The engine's own statements, read from the parsed log: its config line and args.

The config line (`Initializing a V1 LLM engine (vX) with config: k=v, ...`; V0 engines
say `a V0 LLM engine` or `an LLM engine`) is the engine's resolved configuration;
`non-default args: {...}` is what was requested (a Python dict repr with enum reprs,
not JSON); older servers print every CLI value as `args: Namespace(...)`.

A log may hold several engine starts before the server is ready (a start that died
while loading, then a retry; offline scripts that build two engines). Each config line
of a new process begins a start; the identity is read from the first start that
reached "ready", else the first start, and only from the lines of that start.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from typing import Any

from registry.engines.vllm.logs.messages import Kind
from registry.formats.identity import Evidence
from registry.logs import Fact, LogScan

ENUM_REPR = re.compile(r"<(\w+)\.(\w+): [^<>]*>")
COMPILATION = {
    "mode": re.compile(r"'mode': <CompilationMode\.(\w+)"),
    "cudagraph_mode": re.compile(r"'cudagraph_mode': <CUDAGraphMode\.(\w+)"),
    "cudagraph_capture_sizes": re.compile(r"'cudagraph_capture_sizes': \[([^\]]*)\]"),
}
OPEN, CLOSE = "([{", ")]}"


ELISION = re.compile(r"(?:^|\s)\.\.\.(?=\s|$)")  # an excerpt's `...`: a gap between items


def split_items(text: str) -> dict[str, str]:
    """`k=v, k=v` at the top level (nested brackets and quotes kept whole)."""
    text = ELISION.sub(",", text)
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


@dataclass(frozen=True)
class Start:
    """The lines of the engine start the identity is read from."""

    after: int  # the previous start's config line (0: none)
    before: int  # the next start's config line
    count: int  # engine starts before the server was ready
    ready: bool  # this start reached "ready"

    def holds(self, fact: Fact) -> bool:
        return self.after < fact.line < self.before


def identity_start(scan: LogScan) -> Start:
    configs: list[Fact] = []
    for fact in scan.all(Kind.engine_config):
        if not configs or fact.pid is None or fact.pid != configs[-1].pid:
            configs.append(fact)  # a repeat by the same process is the same start
    ready = scan.first(Kind.ready)
    if not configs:
        return Start(after=0, before=sys.maxsize, count=0, ready=ready is not None)
    bounds = [0, *(fact.line for fact in configs), sys.maxsize]
    chosen = next((i for i in range(len(configs))
                   if ready and bounds[i + 1] < ready.line < bounds[i + 2]), 0)
    return Start(after=bounds[chosen], before=bounds[chosen + 2], count=len(configs),
                 ready=ready is not None)


class EngineLog:
    """Accessors over a `LogScan`, each returning a value with the fact that proves it."""

    def __init__(self, scan: LogScan, source: str) -> None:
        self.scan = scan
        self.source = source  # the log's name in evidence
        self.start = identity_start(scan)
        self.config_fact = self.first(Kind.engine_config)
        self.config = split_items(self.config_fact.values.get("config", "")) \
            if self.config_fact else {}
        self.args_fact = self.first(Kind.args)
        self.args = parse_args(self.args_fact.values["args"]) if self.args_fact else {}
        namespace = self.first(Kind.namespace)
        self.namespace_fact = namespace
        self.namespace = split_items(namespace.values["args"]) if namespace else {}
        spec = self.config.get("speculative_config", "")
        inner = spec[spec.find("(") + 1:spec.rfind(")")] if spec.endswith(")") else ""
        self.speculative = {k: unquote(v) for k, v in split_items(inner).items()}

    def setting(self, key: str) -> tuple[str | None, Evidence | None]:
        """A `key=value` of the config line, unquoted, with its evidence."""
        if self.config_fact is None or key not in self.config:
            return None, None
        raw = self.config[key]
        return unquote(raw), self.evidence(self.config_fact, f"{key}={raw}")

    def compilation(self, key: str) -> tuple[str | None, Evidence | None]:
        raw = self.config.get("compilation_config", "")
        found = COMPILATION[key].search(raw)
        if not found or self.config_fact is None:
            return None, None
        return found.group(1), self.evidence(self.config_fact, found.group(0))

    def arg(self, key: str) -> tuple[Any, Evidence | None]:
        if self.args_fact is None or key not in self.args:
            return None, None
        return self.args[key], self.evidence(self.args_fact, f"{key}: {self.args[key]!r}")

    def namespace_arg(self, key: str) -> tuple[str | None, Evidence | None]:
        """A value of an older server's `args: Namespace(...)` line (every CLI value)."""
        if self.namespace_fact is None or key not in self.namespace:
            return None, None
        raw = self.namespace[key]
        return unquote(raw), self.evidence(self.namespace_fact, f"{key}={raw}")

    def evidence(self, fact: Fact, text: str | None = None) -> Evidence:
        return Evidence(source=self.source, line=fact.line,
                        text=text if text is not None else fact.text)

    def first(self, kind: Kind) -> Fact | None:
        return next(iter(self.all(kind)), None)

    def all(self, kind: Kind) -> list[Fact]:
        """The facts of this kind in the identity's engine start."""
        return [fact for fact in self.scan.all(kind) if self.start.holds(fact)]
