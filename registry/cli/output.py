"""Rendering for the CLI: JSON for scripts, rich tables for people."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from registry.canonical import to_jsonable
from registry.errors import RegistryError

console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def print_json(value: Any) -> None:
    """Stable JSON on stdout: sorted keys, two-space indent."""
    sys.stdout.write(json.dumps(to_jsonable(value), indent=2, sort_keys=True) + "\n")


def print_error(e: RegistryError) -> None:
    err_console.print(f"[bold red]error:[/] {e.message}", highlight=False, markup=True)
    if e.hint:
        err_console.print(f"  hint: {e.hint}", highlight=False)


def table(title: str | None, columns: list[str], rows: list[list[Any]], *,
          fold: bool = True) -> Table:
    """`fold=False`: every cell on one line, cut with an ellipsis when the terminal is too
    narrow (never broken inside a word, an id or a path)."""
    t = Table(title=title, title_justify="left", header_style="bold")
    for i, column in enumerate(columns):
        whole = i == 0 or not fold  # the key column stays whole
        t.add_column(column, overflow="fold" if fold else "ellipsis", no_wrap=whole)
    for row in rows:
        t.add_row(*("" if v is None else str(v) for v in row))
    return t


def quiet() -> bool:
    """No progress bars when output is not a terminal."""
    return not sys.stderr.isatty()
