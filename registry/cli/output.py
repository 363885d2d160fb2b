"""Rendering for the CLI: JSON for scripts, fitted lines and rich tables for people.

Text that comes from records, logs, paths or key ids is data, never markup. The
consoles therefore parse no markup unless a call asks for it (`markup=True`), and
such a call escapes every piece of data with `safe` (a key id `[/red]` would
otherwise close a style never opened and crash rich, or restyle the output). Every
string printed is made printable first: a file name that is not UTF-8 holds lone
surrogates, which no terminal encoding accepts.

Plain lines (`say`, `print_fitted`) need no rich: `list` and `show` print through them
and start without importing it (rich alone costs about one bare Python start-up);
`console`, `err_console` and `table` load rich on first use.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

from registry.errors import RegistryError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

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
    not UTF-8) become `\\udcXX` escapes."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def safe(text: object) -> str:
    """Untrusted text for a markup string: printable, and its `[...]` escaped."""
    from rich.markup import escape

    return escape(printable(text))


def print_error(e: RegistryError) -> None:
    say(("error:", "bold red"), f" {e.message}", err=True)
    if e.hint:
        say(f"  hint: {e.hint}", err=True)


def print_internal(e: BaseException) -> None:
    """An error the registry did not expect: one message (a bug to report), no traceback."""
    say(("internal error:", "bold red"), f" {type(e).__name__}: {e}", err=True)
    say("  hint: this is a bug in registry; REGISTRY_DEBUG=1 shows the traceback", err=True)


def table(title: str | None, columns: list[str], rows: list[list[Any]], *,
          fold: bool = True) -> Table:
    """Cells are plain text (never markup); a cell that needs a style is a rich `Text`.
    `fold=False`: every cell on one line, cut with an ellipsis when the terminal is too
    narrow (never broken inside a word, an id or a path)."""
    from rich.table import Table
    from rich.text import Text

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
        say((title, "bold"))
    lines = fit([headers, *rows], keep, width())
    say((lines[0], "bold underline"))
    for line in lines[1:]:
        say(line)


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
