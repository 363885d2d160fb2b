"""Where a matched position sits: its line number, process prefix and message."""

from __future__ import annotations

from registry.base.secrets import redact_line
from registry.engines.vllm.logs.messages import PREFIX

MAX_TEXT = 16384  # characters kept of one message (a config line is about 4 KiB)


class LineSpan:
    """One log line around a match: numbers and offsets into the chunk, decoded on demand."""

    __slots__ = ("end", "level", "message", "pid", "proc", "start")

    def __init__(self, start: int, message: int, end: int, proc: str | None,
                 pid: int | None, level: str | None) -> None:
        self.start = start
        self.message = message  # where the message starts, after prefix and header
        self.end = end
        self.proc = proc
        self.pid = pid
        self.level = level

    def text(self, buf: bytes) -> str:
        """The message as evidence shows it: a secret in it (an `api_key` in the
        non-default args line) replaced (registry/base/secrets.py)."""
        raw = buf[self.message:self.end].decode("utf-8", "replace").rstrip()[:MAX_TEXT]
        return redact_line(raw, "", 0)[0]

    @property
    def key(self) -> int | str | None:
        """The process the line came from: its pid, else its name, else None (no prefix)."""
        return self.pid if self.pid is not None else self.proc


class Lines:
    """Line numbers for positions in the current chunk, each newline counted once."""

    def __init__(self) -> None:
        self.first = 1  # number of the current chunk's first line
        self.newlines = 0
        self.size = 0
        self.buf = b""
        self._pos = 0
        self._line = 1

    def begin(self, buf: bytes, start: int) -> None:
        self.buf = buf
        self._pos, self._line = start, self.first

    def number(self, buf: bytes, pos: int) -> int:
        """The 1-based number of the line holding `pos` (counted only when asked)."""
        if pos >= self._pos:
            self._line += buf.count(b"\n", self._pos, pos)
            self._pos = pos
            return self._line
        return self._line - buf.count(b"\n", pos, self._pos)

    def span(self, buf: bytes, pos: int, start: int, end: int,
             message: int | None = None) -> LineSpan:
        """The line holding `pos`; with tqdm updates fused by `\\r`, the segment holding it.
        `message`: where the message starts when the caller's match knows it."""
        first = max(buf.rfind(b"\n", start, pos) + 1, start)
        last = buf.find(b"\n", pos, end)
        last = end if last < 0 else last
        prefix = PREFIX.match(buf, first, last)
        assert prefix is not None  # every part of PREFIX is optional
        if message is None:
            message = max(prefix.end(), buf.rfind(b"\r", prefix.end(), pos) + 1)
        stop = buf.find(b"\r", pos, last)
        proc, pid, level = prefix.group("proc", "pid", "level")
        return LineSpan(
            start=first, message=message,
            end=last if stop < 0 else stop,
            proc=proc.decode("utf-8", "replace") if proc else None,
            pid=int(pid) if pid else None, level=level.decode() if level else None,
        )

    def end(self, buf: bytes, start: int, end: int) -> None:
        # Deleting one byte value runs on memchr; `count` walks byte by byte (3x slower).
        inside = len(buf) - len(buf.replace(b"\n", b"")) - buf.count(b"\n", 0, start) \
            - buf.count(b"\n", end)
        self.first += inside
        self.newlines = self.first - 1
        self.size += end - start
