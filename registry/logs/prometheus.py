"""A small parser for the Prometheus text format that vLLM's `/metrics` serves.

Lines are `name{label="value",...} number [timestamp]`; `#` lines are comments.
Label values may hold escaped quotes, backslashes and newlines. Counters are read as
differences between two scrapes (the suite's before and after).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import InvalidInput

SAMPLE = re.compile(r"(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


class Sample(Frozen):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    value: float
    line: int


class Scrape(Frozen):
    source: str
    samples: list[Sample]

    def find(self, name: str, **labels: str) -> list[Sample]:
        return [s for s in self.samples if s.name == name
                and all(s.labels.get(k) == v for k, v in labels.items())]

    def total(self, name: str, **labels: str) -> float | None:
        """Sum over every label set (e.g. vLLM's `engine` label), or None if absent."""
        found = self.find(name, **labels)
        return sum(s.value for s in found) if found else None


def parse_prometheus(text: str, source: str = "metrics") -> Scrape:
    samples = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.fullmatch(line) or SAMPLE.fullmatch(line.rsplit(" ", 1)[0])  # timestamp
        if m is None:
            raise InvalidInput(f"{source}:{number}: not a Prometheus sample: {line[:80]!r}")
        try:
            value = float(m["value"])
        except ValueError:
            raise InvalidInput(f"{source}:{number}: {m['value']!r} is not a number") from None
        samples.append(Sample(name=m["name"], labels=_labels(m["labels"] or ""), value=value,
                              line=number))
    return Scrape(source=source, samples=samples)


def read_prometheus(path: Path) -> Scrape:
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError as e:
        raise InvalidInput(f"{path}: cannot read: {e.strerror}") from None
    return parse_prometheus(text, path.name)


def counter_diff(before: Scrape | None, after: Scrape, name: str, **labels: str) -> float | None:
    """How much a counter grew between two scrapes (from zero without a first scrape)."""
    end = after.total(name, **labels)
    if end is None:
        return None
    start = before.total(name, **labels) if before else None
    return end - (start or 0.0)


def _labels(text: str) -> dict[str, str]:
    labels = {}
    for key, value in LABEL.findall(text):
        labels[key] = re.sub(r"\\[\\\"n]", lambda m: UNESCAPE[m.group()], value)
    return labels
