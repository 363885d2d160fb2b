"""Text from records made safe to show: control characters escaped, never sent to a
terminal, a spreadsheet or a page as a control sequence.

A model path, a capsule file name or a declared value is written by whoever made the
record. Printed raw, `ESC[2J` clears the reader's screen, OSC 52 writes their
clipboard, a CR or LF forges a line of output (`finding: none`) or a table row, and a
CSV cell starting with `=` runs as a spreadsheet formula. Every view therefore passes
record text through `one_line` (single-line fields: every C0 and C1 control, DEL,
and the bidirectional overrides of "Trojan Source" escaped) or `lines` (multi-line
text: the same, newlines and tabs kept), and CSV cells through `csv_cell`.
"""

from __future__ import annotations

import re

# C0 controls, DEL and C1 controls; bidi embeddings/overrides/isolates (U+202A-E,
# U+2066-9) and the marks that reorder text (U+200E, U+200F, U+061C); compiled (and
# cached by `re`) on first use, not by every command that imports this module
_CONTROLS = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
_KEPT_IN_LINES = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e"}
CSV_FORMULA = ("=", "+", "-", "@", "\t", "\r")  # OWASP: cells a spreadsheet evaluates


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def one_line(text: str) -> str:
    """`text` as one printable line: every control (LF and CR included) escaped."""
    if text.isascii() and text.isprintable():  # most text: nothing to escape, no regex
        return text
    return re.sub(_CONTROLS, _escape, text)


def lines(text: str) -> str:
    """Multi-line text with its newlines and tabs, every other control escaped."""
    return re.sub(_KEPT_IN_LINES, _escape, text)


def csv_cell(text: str) -> str:
    """A CSV cell a spreadsheet reads as text: controls escaped, and a leading `=`, `+`,
    `-`, `@` (or tab, CR) quoted with an apostrophe, as OWASP's CSV-injection rule says.
    A number is not text and is never passed here."""
    text = one_line(text)
    return "'" + text if text.startswith(CSV_FORMULA) else text
