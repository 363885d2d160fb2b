"""The line that says why an engine died, found in the tail of its log.

vLLM's startup failures end in a cascade of wrappers ("Engine core initialization
failed. See root cause above."); the useful line is the last exception that is not
such a pointer, e.g. `ValueError: fp8_e5m2 kv-cache is not supported with fp8
checkpoints.`
"""

from __future__ import annotations

import re
from pathlib import Path

TAIL_BYTES = 512 * 1024
# `(Worker pid=1) ERROR 11-30 05:25:14 [file.py:953] message`, prefix and header optional
HEADER_RE = re.compile(
    r"^(?:\([^)]*\)\s+)?(?:(?P<level>[A-Z]+) \d\d-\d\d \d\d:\d\d:\d\d \[[^\]]*\] ?)?(?P<msg>.*)$")
EXCEPTION_RE = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt)|Exception)(?::\s.*)?$")
POINTER_RE = re.compile(r"see (?:the )?(?:root cause|stack trace)|root cause above", re.I)


def error_line(log: Path) -> str | None:
    """The root-cause exception line, else the last ERROR message, else None."""
    try:
        with open(log, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - TAIL_BYTES))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    exceptions: list[str] = []
    errors: list[str] = []
    for raw in re.split(r"[\r\n]+", text):
        match = HEADER_RE.match(raw.rstrip())
        msg = match.group("msg") if match else ""
        if not msg or msg[:1].isspace():  # traceback frames and code are indented
            continue
        if EXCEPTION_RE.match(msg):
            exceptions.append(msg)
        elif match and match.group("level") in ("ERROR", "CRITICAL") and not _frame(msg):
            errors.append(msg)
    causes = [e for e in exceptions if not POINTER_RE.search(e)]
    for found in (causes, exceptions, errors):
        if found:
            return found[-1]
    return None


def _frame(msg: str) -> bool:
    return msg.startswith(("Traceback", "File ", "^")) or msg.endswith(":")
