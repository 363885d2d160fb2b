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

from registry.canonical import to_jsonable
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


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> Table:
    """Cells are plain text (never markup); a cell that needs a style is a rich `Text`."""
    t = Table(title=title, title_justify="left", header_style="bold")
    for i, column in enumerate(columns):
        t.add_column(column, overflow="fold", no_wrap=i == 0)  # the key column stays whole
    for row in rows:
        t.add_row(*(v if isinstance(v, Text) else Text("" if v is None else printable(v))
                    for v in row))
    return t


def quiet() -> bool:
    """No progress bars when output is not a terminal."""
    return not sys.stderr.isatty()
