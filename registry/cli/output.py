"""Rendering for the CLI: JSON for scripts, one fitted table system for people.

Text that comes from records, logs, paths or key ids is data, never markup. The
consoles therefore parse no markup unless a call asks for it (`markup=True`), and
such a call escapes every piece of data with `safe` (a key id `[/red]` would
otherwise close a style never opened and crash rich, or restyle the output). Every
string printed is made printable first: a file name that is not UTF-8 holds lone
surrogates, which no terminal encoding accepts.

Plain lines (`say`, `print_fitted`) need no rich: `list` and `show` print through them
and start without importing it (rich alone costs about one bare Python start-up);
`console` and `err_console` load rich on first use. Every table is a `Grid` (fitted to
the width, wide values wrapped, nothing cut), printed as plain lines or through rich.
Record text is printed with its control characters escaped (registry/base/text.py).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from registry.base.text import lines, one_line
from registry.errors import RegistryError

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions

STYLES = {"bold": "1", "underline": "4", "dim": "2", "red": "31", "green": "32",
          "yellow": "33", "cyan": "36"}
_consoles: dict[str, Console] = {}


def __getattr__(name: str) -> Any:
    """`console` and `err_console`, made on first use (PEP 562)."""
    if name in ("console", "err_console"):
        if name not in _consoles:
            _consoles[name] = _safe_console(stderr=name == "err_console")
        return _consoles[name]
    raise AttributeError(name)


def _safe_console(**kwargs: Any) -> Console:
    """A console whose strings are printable and, by default, not markup."""
    from rich.console import Console

    class SafeConsole(Console):
        def print(self, *objects: Any, **kw: Any) -> None:
            super().print(*(printable(o) if isinstance(o, str) else o for o in objects), **kw)

    return SafeConsole(soft_wrap=True, markup=False, **kwargs)


def say(*parts: str | tuple[str, str | None], err: bool = False) -> None:
    """One line of plain text; a part may be `(text, style)` with styles from STYLES
    ("bold red"), drawn only on a terminal that takes colour (NO_COLOR, TERM=dumb and
    FORCE_COLOR are honoured as rich honours them)."""
    out = sys.stderr if err else sys.stdout
    colour = _colour(out)
    text = "".join(_styled(printable(p), None, colour) if isinstance(p, str)
                   else _styled(printable(p[0]), p[1], colour) for p in parts)
    out.write(text + "\n")


def _styled(text: str, style: str | None, colour: bool) -> str:
    if not style or not colour or not text:
        return text
    codes = ";".join(STYLES[s] for s in style.split())
    return f"\x1b[{codes}m{text}\x1b[0m"


def _colour(out: Any) -> bool:
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(out, "isatty", lambda: False)())


def width() -> int:
    """The terminal's width: $COLUMNS, else the terminal's own, else 80 (as rich)."""
    return shutil.get_terminal_size((80, 24)).columns


def print_json(value: Any) -> None:
    """Stable JSON on stdout: sorted keys, two-space indent."""
    from registry.base.canonical import to_jsonable

    sys.stdout.write(json.dumps(to_jsonable(value), indent=2, sort_keys=True) + "\n")


def printable(text: object) -> str:
    """`text` as a str any terminal can take: lone surrogates (from a file name that is
    not UTF-8) become `\\udcXX` escapes, and every control character but newline and
    tab is escaped (base/text.py: no record text reaches the terminal as a sequence)."""
    return lines(str(text).encode("utf-8", "backslashreplace").decode("utf-8"))


def safe(text: object) -> str:
    """Untrusted one-line text for a markup string: printable, controls and newlines
    escaped, and its `[...]` escaped."""
    from rich.markup import escape

    return escape(one_line(printable(text)))


def print_error(e: RegistryError) -> None:
    say(("error:", "bold red"), f" {e.message}", err=True)
    if e.hint:
        say(f"  hint: {e.hint}", err=True)


def print_internal(e: BaseException) -> None:
    """An error the registry did not expect: one message (a bug to report), no traceback."""
    say(("internal error:", "bold red"), f" {type(e).__name__}: {e}", err=True)
    say("  hint: this is a bug in registry; REGISTRY_DEBUG=1 shows the traceback", err=True)


def table(title: str | None, columns: list[str], rows: Sequence[Sequence[Any]], *,
          keep: Sequence[bool] | None = None) -> Grid:
    """The one table of the CLI (see Grid). Cells are plain text (never markup); a cell
    that needs a style is a rich `Text`. `keep`: columns never narrowed (default: the
    first, the key)."""
    kept = list(keep) if keep is not None else [i == 0 for i in range(len(columns))]
    return Grid(title, columns, rows, kept)


def print_fitted(headers: list[str], rows: Sequence[Sequence[Any]], *, keep: Sequence[bool],
                 title: str | None = None) -> None:
    """A Grid printed as plain lines (no rich: what `list` and `show` use)."""
    for text, style in table(title, headers, rows, keep=keep).lines(width()):
        say((text, style))


class Grid:
    """A borderless table fitted to the width it is printed at. A value wider than its
    column wraps onto the next lines of its row (after a `-`, `_`, `.`, `/` or space
    where it can), so no character is ever lost; `keep` columns (ids, figures) are
    never narrowed. Every cell is one line of record text: its controls are escaped."""

    GAP = 2
    FLOOR = 8  # a column narrowed further would wrap every word

    def __init__(self, title: str | None, headers: Sequence[str], rows: Sequence[Sequence[Any]],
                 keep: Sequence[bool]) -> None:
        self.title = title
        self.cells = [[_cell(v) for v in row] for row in [list(headers), *rows]]
        self.keep = list(keep)

    def lines(self, width: int) -> Iterator[tuple[str, str | None]]:
        """(line, style) for the title (bold), the header (bold underline) and every
        row's lines (plain: a cell's own style needs rich)."""
        header = 1 if self.title else 0
        for n, (text, _) in enumerate(self.styled(width)):
            yield text, "bold" if n < header else "bold underline" if n == header else None

    def styled(self, width: int) -> Iterator[tuple[str, list[tuple[str, str | None]]]]:
        """Each line as its text and its (segment, style) parts."""
        widths = fit_widths([[t for t, _ in row] for row in self.cells], self.keep, width,
                            self.GAP, self.FLOOR)
        if self.title:
            yield self.title, [(self.title, "bold")]
        for n, row in enumerate(self.cells):
            parts = [wrap(t, w) for (t, _), w in zip(row, widths, strict=True)]
            for k in range(max(len(p) for p in parts)):
                segments: list[tuple[str, str | None]] = []
                for i, ((_, style), chunks) in enumerate(zip(row, parts, strict=True)):
                    if i:
                        segments.append((" " * self.GAP, None))
                    piece = (chunks[k] if k < len(chunks) else "").ljust(widths[i])
                    segments.append((piece, "bold underline" if n == 0 else style))
                text = "".join(t for t, _ in segments).rstrip()
                yield text, segments

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Any]:
        from rich.text import Text

        for _text, segments in self.styled(options.max_width):
            line = Text()
            for piece, style in segments:
                line.append(piece, style=style or "")
            line.rstrip()
            yield line


def _cell(value: Any) -> tuple[str, str | None]:
    """(one escaped line, style); a rich Text keeps its style."""
    if hasattr(value, "plain") and hasattr(value, "style"):
        return one_line(printable(value.plain)), str(value.style) or None
    return one_line(printable("" if value is None else value)), None


def fit_widths(rows: list[list[str]], keep: list[bool], width: int, gap: int = 2,
               floor: int = 8) -> list[int]:
    """Column widths that fit `width`: the widest column that may shrink loses one
    character at a time, down to `floor` (or its header's longest word), then, if
    that is not enough, down to 3; kept columns stay whole. When nothing shrinks
    further the line is wider than `width`."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(keep))]
    words = [max((len(x) for x in rows[0][i].split()), default=0) for i in range(len(keep))]
    for low in (floor, 3):
        lows = [w if k else min(w, max(low, words[i]) if low == floor else low)
                for i, (w, k) in enumerate(zip(widths, keep, strict=True))]
        while sum(widths) + gap * (len(widths) - 1) > width:
            i = max(range(len(widths)), key=lambda j: widths[j] - lows[j])
            if widths[i] <= lows[i]:
                break
            widths[i] -= 1
    return widths


BREAKS = " /-_.,=:+"


def wrap(value: str, width: int) -> list[str]:
    """`value` in pieces of at most `width` characters, broken after the last separator
    of a piece where it has one; joined again they give `value` exactly."""
    if len(value) <= width or width < 1:
        return [value]
    out = []
    while len(value) > width:
        cut = max((i + 1 for i, c in enumerate(value[:width]) if c in BREAKS), default=0)
        cut = cut or width
        out.append(value[:cut])
        value = value[cut:]
    return [*out, value] if value else out


def shown(value: Any) -> str:
    """A value as a person writes it: yes/no, blank for none, floats to 6 figures."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def quiet() -> bool:
    """No progress bars when output is not a terminal."""
    return not sys.stderr.isatty()
