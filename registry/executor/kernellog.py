"""The kernel log around a fault, read once by the health probe and kept with its
evidence (the lab's rule: a fault's probe passes only with a clean kernel log, so a
person must be able to read it).

Bounded in time (the last `minutes`), in lines (the last `max_lines`, each cut at
`LINE_CHARS`) and in wall time (`timeout_s` per reader). `journalctl -k` first (the
journal keeps the kernel's lines across a ring-buffer wrap), then `dmesg`; where neither
may be read (no journal, `dmesg_restrict`, no binary) the log says "not readable" and
why, never an empty log that could pass for a clean one.
"""

from __future__ import annotations

import math
import shutil
import subprocess

from pydantic import Field

from registry.base.model import Frozen

LINE_CHARS = 500
MAX_OUTPUT = 4 << 20  # a reader that prints more than this is cut: bytes, not lines


class KernelLog(Frozen):
    readable: bool
    source: str | None = Field(None, description="the command read: journalctl -k | dmesg")
    argv: list[str] = Field(default_factory=list)
    minutes: int = Field(description="how far back it reads")
    lines: list[str] = Field(default_factory=list, description="the last lines, oldest first")
    truncated: bool = Field(False, description="more lines were there than kept")
    note: str = Field(description="`N lines` or `not readable: why`")


def read_kernel_log(seconds: float, max_lines: int = 200,
                    timeout_s: float = 10.0) -> KernelLog:
    minutes = max(1, math.ceil(seconds / 60))
    since = f"-{minutes}min"
    tried = []
    for argv, empty in (
            (["journalctl", "-k", "--no-pager", "-o", "short-iso", "--since", since],
             "No journal files were found"),
            (["dmesg", "--time-format", "iso", "--since", since], None)):
        got = _read(argv, empty, timeout_s)
        if isinstance(got, str):
            tried.append(f"{argv[0]}: {got}")
            continue
        kept = [line[:LINE_CHARS] for line in got[-max_lines:]]
        return KernelLog(readable=True, source=" ".join(argv[:2]) if argv[1] == "-k"
                         else argv[0], argv=argv, minutes=minutes, lines=kept,
                         truncated=len(got) > max_lines,
                         note=f"{len(got)} line(s) in the last {minutes} min"
                              + (f", the last {max_lines} kept" if len(got) > max_lines else ""))
    return KernelLog(readable=False, minutes=minutes,
                     note="not readable: " + "; ".join(tried))


def _read(argv: list[str], empty: str | None, timeout_s: float) -> list[str] | str:
    """The reader's lines, or why it could not be read."""
    if shutil.which(argv[0]) is None:
        return "not installed"
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"no answer in {timeout_s:g} s"
    except OSError as e:
        return f"did not start ({e.strerror})"
    err = done.stderr.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        return (err.splitlines() or [f"exit {done.returncode}"])[-1][:300]
    if empty and empty in err:
        return err.splitlines()[0][:300]
    text = done.stdout[-MAX_OUTPUT:].decode("utf-8", "replace")
    return [line for line in text.splitlines() if line and line != "-- No entries --"]
