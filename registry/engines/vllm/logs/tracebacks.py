"""The final line of each Python traceback in the log, per process.

A traceback's lines carry its process prefix (and, through `logger.exception`, a
logger header), and several processes may print at once, so lines of other
processes are skipped while looking for the exception line.
"""

from __future__ import annotations

from collections.abc import Iterator

from registry.engines.vllm.logs.lines import Lines, LineSpan
from registry.engines.vllm.logs.messages import TRACEBACK

MAX_WALK = 2000  # lines searched for a traceback's end before giving up
NEEDLE = TRACEBACK.encode()  # long: bytes.find skips through the chunk fast
CHAINING = ("During handling of the above exception", "The above exception was the direct")


class Tracebacks:
    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        self.pending: dict[int | str | None, int] = {}  # process -> lines searched so far

    def scan(self, buf: bytes, start: int, end: int,
             follow_only: bool = False) -> Iterator[LineSpan]:
        """Exception lines in buf[start:end], including those of tracebacks begun earlier
        (only those with `follow_only`)."""
        for key in list(self.pending):
            yield from self._walk(buf, start, end, key)
        at = -1 if follow_only else buf.find(NEEDLE, start, end)
        while at >= 0:
            span = self.lines.span(buf, at, start, end)
            self.pending[span.key] = 0
            yield from self._walk(buf, _next_line(buf, span.end, end), end, span.key)
            at = buf.find(NEEDLE, at + 1, end)

    def _walk(self, buf: bytes, pos: int, end: int, key: int | str | None) -> Iterator[LineSpan]:
        walked = self.pending[key]
        while pos < end and walked < MAX_WALK:
            span = self.lines.span(buf, pos, pos, end)
            pos = _next_line(buf, span.end, end)
            if span.key != key:
                continue
            walked += 1
            text = span.text(buf)
            if not text or text[0].isspace() or text.startswith(CHAINING):
                continue
            del self.pending[key]
            if not text.startswith(TRACEBACK):  # a new traceback: its own search takes over
                yield span
            return
        if walked >= MAX_WALK:
            del self.pending[key]
        else:
            self.pending[key] = walked


def _next_line(buf: bytes, pos: int, end: int) -> int:
    newline = buf.find(b"\n", pos, end)
    return end if newline < 0 else newline + 1
