"""Rendering for the CLI: JSON for scripts, rich tables for people.

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
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from registry.base.canonical import to_jsonable
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
    not UTF-8) become `\\udcXX` escapes."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def safe(text: object) -> str:
    """Untrusted text for a markup string: printable, and its `[...]` escaped."""
    return escape(printable(text))


def print_error(e: RegistryError) -> None:
    err_console.print(f"[bold red]error:[/] {safe(e.message)}", highlight=False, markup=True)
    if e.hint:
        err_console.print(f"  hint: {e.hint}", highlight=False)


def print_internal(e: BaseException) -> None:
    """An error the registry did not expect: one message (a bug to report), no traceback."""
    err_console.print(f"[bold red]internal error:[/] {safe(type(e).__name__)}: {safe(e)}",
                      highlight=False, markup=True)
    err_console.print("  hint: this is a bug in registry; REGISTRY_DEBUG=1 shows the "
                      "traceback", highlight=False)


def table(title: str | None, columns: list[str], rows: list[list[Any]], *,
          fold: bool = True) -> Table:
    """Cells are plain text (never markup); a cell that needs a style is a rich `Text`.
    `fold=False`: every cell on one line, cut with an ellipsis when the terminal is too
    narrow (never broken inside a word, an id or a path)."""
    t = Table(title=title, title_justify="left", header_style="bold")
    for i, column in enumerate(columns):
        whole = i == 0 or not fold  # the key column stays whole
        t.add_column(column, overflow="fold" if fold else "ellipsis", no_wrap=whole)
    for row in rows:
        t.add_row(*(v if isinstance(v, Text) else Text("" if v is None else printable(v))
                    for v in row))
    return t


def print_fitted(headers: list[str], rows: list[list[str]], *, keep: list[bool],
                 title: str | None = None) -> None:
    """A borderless table fitted to the terminal: values cut with an ellipsis, never folded
    over two lines; `keep` columns (ids) are never cut."""
    if title:
        console.print(title, style="bold", highlight=False, soft_wrap=True)
    lines = fit([headers, *rows], keep, console.width)
    console.print(lines[0], style="bold underline", highlight=False, soft_wrap=True,
                  markup=False)
    for line in lines[1:]:
        console.print(line, highlight=False, soft_wrap=True, markup=False)


def fit(rows: list[list[str]], keep: list[bool], width: int, gap: int = 2) -> list[str]:
    """Columns fitted to `width`: the widest column that may shrink loses one character
    at a time (down to 5); a cut value or header ends in an ellipsis, and an id column is
    never cut. Nothing is ever broken over two lines."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(keep))]
    floor = [w if k else min(w, 5) for w, k in zip(widths, keep, strict=True)]
    while sum(widths) + gap * (len(widths) - 1) > width:
        i = max(range(len(widths)), key=lambda j: widths[j] - floor[j])
        if widths[i] <= floor[i]:
            break  # as narrow as it goes: the terminal scrolls rather than folds
        widths[i] -= 1
    return [(" " * gap).join(_cut(v, w).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
            for r in rows]


def _cut(value: str, width: int) -> str:
    return value if len(value) <= width else value[:width - 1] + "…"


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
