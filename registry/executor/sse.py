"""Server-sent events, parsed as the WHATWG HTML standard says (section 9.2.6).

Lines end in CRLF, LF or CR (a CR at the end of one read and an LF at the start of the
next are one line end). A blank line dispatches the event; a line starting with `:` is
a comment; `field:value` drops one space after the colon if there is one (so `data:x`
and `data: x` are the same); a line without a colon is a field with an empty value;
several `data` lines join with LF. Only `data` matters to the client; `event`, `id` and
`retry` are read and ignored. One deliberate difference: a last event the server ends
without a blank line is dispatched at the end of the stream, not dropped, so a row
never loses tokens the server sent.
"""

from __future__ import annotations

import re

LINE_END = re.compile(rb"\r\n|\r|\n")


class EventParser:
    """Feed raw bytes as they arrive; get each event's data with its arrival time."""

    def __init__(self) -> None:
        self._pending = b""
        self._skip_lf = False  # the last read ended in CR: an LF next ends nothing new
        self._data: list[str] = []
        self._has_data = False

    def feed(self, chunk: bytes, at: float) -> list[tuple[float, str]]:
        if self._skip_lf and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._skip_lf = chunk.endswith(b"\r")
        parts = LINE_END.split(self._pending + chunk)
        self._pending = parts.pop()
        return [(at, data) for line in parts if (data := self._line(line)) is not None]

    def close(self, at: float) -> list[tuple[float, str]]:
        """End of stream: the last line and an event left without its blank line."""
        out = [] if not self._pending else [(at, d) for d in [self._line(self._pending)] if d]
        self._pending = b""
        end = self._line(b"")
        return out + ([(at, end)] if end is not None else [])

    def _line(self, raw: bytes) -> str | None:
        """Process one line; the event's data when the line dispatches one."""
        if not raw:
            if not self._has_data:
                return None
            data, self._data, self._has_data = "\n".join(self._data), [], False
            return data
        line = raw.decode("utf-8", "replace")
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
        return None
