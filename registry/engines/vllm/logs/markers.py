"""A recipe's `[[expect]]` pattern, counted per process (rank) over log messages.

The pattern is matched against messages only, never the process prefix; a leading
`^` anchors it at the message start. The hot path keys counts by the raw pid (or
process name) bytes; labels are decoded once at the end.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterator

from registry.engines.vllm.logs.lines import Lines, LineSpan
from registry.engines.vllm.logs.messages import PREFIX
from registry.logs.facts import Fact, MarkerScan

MAX_VALUES = 32  # distinct values kept per named group
LITERAL = re.compile(r"(?:[^\\.^$*+?{}\[\]|()]|\\[^\w])+")  # plain or escaped punctuation
MIN_LITERAL = 8  # a literal start this long is found faster by bytes.find than by `re`


def literal_start(pattern: str) -> bytes | None:
    """The literal text every match starts with, when the pattern begins with one."""
    found = LITERAL.match(pattern)
    if not found or re.search(r"(?<!\\)\|", pattern):
        return None  # an alternation may match without the literal
    text = re.sub(r"\\(.)", r"\1", found.group())
    if len(found.group()) < len(pattern) and pattern[found.end()] in "*?{":
        text = text[:-1]  # the last character is quantified: not always there
    return text.encode() if len(text) >= MIN_LITERAL else None


class Marker:
    def __init__(self, name: str, pattern: str, lines: Lines) -> None:
        self.name = name
        self.pattern = pattern
        self.lines = lines
        self.anchored = pattern.startswith("^")
        self.regex = re.compile(pattern.removeprefix("^").encode(), re.MULTILINE)
        self.literal = literal_start(pattern.removeprefix("^"))
        self.groups = list(self.regex.groupindex)
        self.counts: dict[bytes, int] = defaultdict(int)
        self.first: dict[bytes, Fact] = {}
        self.names: dict[bytes, bytes] = {}  # key -> rank-named process label seen with it
        self.values: dict[str, dict[bytes, None]] = {g: {} for g in self.groups}

    def _matches(self, buf: bytes, start: int, end: int) -> Iterator[re.Match[bytes]]:
        if self.literal is None:
            yield from self.regex.finditer(buf, start, end)
            return
        at = buf.find(self.literal, start, end)
        while at >= 0:
            m = self.regex.match(buf, at, end)
            if m is not None:
                yield m
            at = buf.find(self.literal, m.end() if m and m.end() > at else at + 1, end)

    def scan(self, buf: bytes, start: int, end: int) -> Iterator[tuple[bytes, LineSpan]]:
        """Count the matches in buf[start:end]; yield the first line of each new process."""
        for m in self._matches(buf, start, end):
            at = m.start()
            prefix = PREFIX.match(buf, max(buf.rfind(b"\n", start, at) + 1, start), end)
            assert prefix is not None  # every part of PREFIX is optional
            if at < prefix.end() or (self.anchored and at != prefix.end()):
                continue  # matched the prefix, not the message
            proc = prefix.group("proc") or b""
            key = prefix.group("pid") or proc
            self.counts[key] += 1
            if b"Worker_" in proc or b"rank=" in proc:
                self.names[key] = proc
            for group in self.groups:
                value, seen = m.group(group), self.values[group]
                if value is not None and len(seen) < MAX_VALUES:
                    seen.setdefault(value)
            if key not in self.first:
                yield key, self.lines.span(buf, at, start, end)

    def absorb(self, other: Marker, moved: Callable[[Fact], Fact]) -> None:
        """Add the counts of the part of the log that follows."""
        for key, count in other.counts.items():
            self.counts[key] += count
        for key, fact in other.first.items():
            if key not in self.first:
                self.first[key] = moved(fact)
        self.names.update(other.names)
        for group, seen in other.values.items():
            for value in seen:
                if len(self.values[group]) < MAX_VALUES:
                    self.values[group].setdefault(value)

    def result(self, labels: dict[int, str]) -> MarkerScan:
        def label(key: bytes) -> str:
            fact = self.first[key]
            if key in self.names:
                return self.names[key].decode("utf-8", "replace")
            if fact.pid is not None:
                return labels.get(fact.pid) or f"{fact.proc or 'process'} pid={fact.pid}"
            return fact.proc or "(no prefix)"

        return MarkerScan(
            name=self.name, pattern=self.pattern,
            counts={label(k): n for k, n in self.counts.items()},
            values={g: [v.decode("utf-8", "replace") for v in seen]
                    for g, seen in self.values.items() if seen},
            first=list(self.first.values()),
        )
