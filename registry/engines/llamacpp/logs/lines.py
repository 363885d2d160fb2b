"""One llama-server log line made plain: ANSI codes, NULs, carriage returns, a `[pid] `
process prefix and the `H.MM.SS.mmm I ` time-and-level header taken off."""

from __future__ import annotations

import re

from registry.base.model import Frozen
from registry.base.secrets import redact_line

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# `[64893] ` : a supervisor's copy of the server's output, written beside the plain one
PID_PREFIX = re.compile(r"^\[(\d+)\]\s+")
# verbosity 3-4 (`-lv`): `0.01.320.566 I ` (time since start, then I / W / E / D)
HEADER = re.compile(r"^\d+(?:\.\d+){3}\s+([IWED])\s")


class Line(Frozen):
    """A log line's message, with the stream it was written to and its level if printed."""

    number: int
    stream: str = ""  # "" for the server's own output; the pid of a prefixed copy
    level: str | None = None
    text: str


def plain(number: int, raw: str) -> Line:
    text = ANSI.sub("", raw.replace("\x00", "")).rstrip("\r\n").rstrip("\r")
    stream = ""
    prefix = PID_PREFIX.match(text)
    if prefix:
        stream, text = prefix.group(1), text[prefix.end():]
    level = None
    header = HEADER.match(text)
    if header:
        level, text = header.group(1), text[header.end():]
    # a secret on the line (`--api-key X` in the printed command) never reaches evidence
    return Line(number=number, stream=stream, level=level,
                text=redact_line(text.strip(), "", 0)[0])
