"""Rendering for the CLI: JSON for scripts, one fitted table system for people.

Text that comes from records, logs, paths or key ids is data, never markup. The
consoles therefore parse no markup unless a call asks for it (`markup=True`), and
such a call escapes every piece of data with `safe` (a key id `[/red]` would
otherwise close a style never opened and crash rich, or restyle the output). Every
string printed is made printable first: a file name that is not UTF-8 holds lone
surrogates, which no terminal encoding accepts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.text import Text

from registry.base.canonical import to_jsonable
from registry.base.text import lines, one_line
from registry.errors import RegistryError


class SafeConsole(Console):
    """A console whose strings are printable and, by default, not markup."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(soft_wrap=True, markup=False, **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(printable(o) if isinstance(o, str) else o for o in objects), **kwargs)


console = SafeConsole()
err_console = SafeConsole(stderr=True)


def print_json(value: Any) -> None:
    """Stable JSON on stdout: sorted keys, two-space indent."""
    sys.stdout.write(json.dumps(to_jsonable(value), indent=2, sort_keys=True) + "\n")


def printable(text: object) -> str:
    """`text` as a str any terminal can take: lone surrogates (from a file name that is
    not UTF-8) become `\\udcXX` escapes, and every control character but newline and
    tab is escaped (base/text.py: no record text reaches the terminal as a sequence)."""
    return lines(str(text).encode("utf-8", "backslashreplace").decode("utf-8"))


def safe(text: object) -> str:
    """Untrusted one-line text for a markup string: printable, controls and newlines
    escaped, and its `[...]` escaped."""
    return escape(one_line(printable(text)))


def print_error(e: RegistryError) -> None:
    err_console.print(f"[bold red]error:[/] {escape(printable(e.message))}", highlight=False,
                      markup=True)
    if e.hint:
        err_console.print(f"  hint: {e.hint}", highlight=False)


def print_internal(e: BaseException) -> None:
    """An error the registry did not expect: one message (a bug to report), no traceback."""
    err_console.print(f"[bold red]internal error:[/] {safe(type(e).__name__)}: {safe(e)}",
                      highlight=False, markup=True)
    err_console.print("  hint: this is a bug in registry; REGISTRY_DEBUG=1 shows the "
                      "traceback", highlight=False)


def table(title: str | None, columns: list[str], rows: Sequence[Sequence[Any]], *,
          keep: Sequence[bool] | None = None) -> Grid:
    """The one table of the CLI (see Grid). Cells are plain text (never markup); a cell
    that needs a style is a rich `Text`. `keep`: columns never narrowed (default: the
    first, the key)."""
    kept = list(keep) if keep is not None else [i == 0 for i in range(len(columns))]
    return Grid(title, columns, rows, kept)


def print_fitted(headers: list[str], rows: Sequence[Sequence[Any]], *, keep: Sequence[bool],
                 title: str | None = None) -> None:
    console.print(table(title, headers, rows, keep=keep))


class Grid:
    """A borderless table fitted to the console's width. A value wider than its column
    wraps onto the next lines of its row (at a `-`, `_`, `.`, `/` or space where it
    can), so no character is ever lost; `keep` columns (ids, figures) are never narrowed.
    Every cell is one line of record text: its controls are escaped (base/text.py)."""

    GAP = 2
    FLOOR = 8  # a column narrowed further would wrap every word

    def __init__(self, title: str | None, headers: Sequence[str], rows: Sequence[Sequence[Any]],
                 keep: Sequence[bool]) -> None:
        self.title = title
        self.cells = [[_cell(v) for v in row] for row in [list(headers), *rows]]
        self.keep = list(keep)

    def lines(self, width: int) -> list[Text]:
        widths = fit_widths([[c.plain for c in row] for row in self.cells], self.keep, width,
                            self.GAP, self.FLOOR)
        out = [Text(self.title, style="bold")] if self.title else []
        for n, row in enumerate(self.cells):
            parts = [wrap(c.plain, w) for c, w in zip(row, widths, strict=True)]
            for k in range(max(len(p) for p in parts)):
                line = Text(style="bold underline" if n == 0 else "")
                for i, (cell, chunks) in enumerate(zip(row, parts, strict=True)):
                    if i:
                        line.append(" " * self.GAP)
                    line.append((chunks[k] if k < len(chunks) else "").ljust(widths[i]),
                                style=cell.style)
                line.rstrip()
                out.append(line)
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(options.max_width)


def _cell(value: Any) -> Text:
    if isinstance(value, Text):
        return Text(one_line(value.plain), style=value.style)
    return Text(one_line(printable("" if value is None else value)))


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
    of a piece where it has one; joined again they give `value` exactly (a space at a
    break stays at the end of its piece)."""
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
