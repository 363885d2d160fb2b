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
import re
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


def say_wrapped(text: str, *, label: str = "", indent: int = 0,
                style: str | None = None, err: bool = False) -> None:
    """A long line of text folded between its words to the terminal's width, the lines
    after the first indented by `indent` (or the label's width): an id, a digest or an
    engine version is never broken over two lines (a word wider than the line stands
    whole on its own)."""
    pad = indent or len(label)
    room = max(width() - pad, 20)
    for n, piece in enumerate(wrap(one_line(printable(text)), room)):
        head = (label, "bold") if n == 0 else " " * pad
        say(head if isinstance(head, tuple) else (head, None), (piece.rstrip(), style), err=err)


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
          keep: Sequence[bool] | None = None, drop: Sequence[int] = ()) -> Grid:
    """The one table of the CLI (see Grid). Cells are plain text (never markup); a cell
    that needs a style is a rich `Text`. `keep`: columns never narrowed (default: the
    first, the key); `drop`: columns that may be left out, in that order, when the
    table does not fit (a line below says which)."""
    kept = list(keep) if keep is not None else [i == 0 for i in range(len(columns))]
    return Grid(title, columns, rows, kept, drop)


def print_fitted(headers: list[str], rows: Sequence[Sequence[Any]], *, keep: Sequence[bool],
                 title: str | None = None, drop: Sequence[int] = ()) -> None:
    """A Grid printed as plain lines (no rich: what `list` and `show` use)."""
    for text, style in table(title, headers, rows, keep=keep, drop=drop).lines(width()):
        say((text, style))


class Grid:
    """A borderless table fitted to the width it is printed at, by hand rather than with
    rich's Table: rich fits by cutting (`…`) or by folding a word anywhere, and a
    record's identity (a lane, a dtype, a key id, a digest) must never be cut or broken.

    A value wider than its column wraps onto the next lines of its row between words, so
    no character is lost and no word is broken (a path breaks after a `/`); `keep`
    columns (ids, identity values, figures) are never narrowed. When the words do not
    fit, the `drop` columns are left out one by one (the seal time first), with a line
    saying so; only then is a line wider than the terminal (which wraps it, whole)."""

    GAP = 2

    def __init__(self, title: str | None, headers: Sequence[str], rows: Sequence[Sequence[Any]],
                 keep: Sequence[bool], drop: Sequence[int] = ()) -> None:
        self.title = title
        self.cells = [[_cell(v) for v in row] for row in [list(headers), *rows]]
        self.keep = list(keep)
        self.drop = list(drop)

    def lines(self, width: int) -> Iterator[tuple[str, str | None]]:
        """(line, style) for the title (bold), the header (bold underline), every row's
        lines (plain: a cell's own style needs rich) and the note on left-out columns."""
        header = 1 if self.title else 0
        for n, (text, parts) in enumerate(self.styled(width)):
            note = len(parts) == 1 and parts[0][1] == "dim"
            yield text, "dim" if note else "bold" if n < header else \
                "bold underline" if n == header else None

    def shown_columns(self, width: int) -> list[int]:
        """The columns printed at `width`: all, unless their words need more room."""
        shown = list(range(len(self.keep)))
        for column in self.drop:
            if _least(self.cells, self.keep, shown, self.GAP) <= width:
                break
            shown.remove(column)
        return shown

    def styled(self, width: int) -> Iterator[tuple[str, list[tuple[str, str | None]]]]:
        """Each line as its text and its (segment, style) parts."""
        shown = self.shown_columns(width)
        cells = [[row[i] for i in shown] for row in self.cells]
        keep = [self.keep[i] for i in shown]
        widths = fit_widths([[t for t, _ in row] for row in cells], keep, width, self.GAP)
        if self.title:
            yield self.title, [(self.title, "bold")]
        for n, row in enumerate(cells):
            parts = [wrap(t, w) for (t, _), w in zip(row, widths, strict=True)]
            for k in range(max(len(p) for p in parts)):
                segments: list[tuple[str, str | None]] = []
                for i, ((_, style), chunks) in enumerate(zip(row, parts, strict=True)):
                    if i:
                        segments.append((" " * self.GAP, None))
                    piece = (chunks[k].rstrip() if k < len(chunks) else "").ljust(widths[i])
                    segments.append((piece, "bold underline" if n == 0 else style))
                text = "".join(t for t, _ in segments).rstrip()
                yield text, segments
        left = [self.cells[0][i][0] for i in range(len(self.keep)) if i not in shown]
        if left:
            note = f"({', '.join(left)}: left out at {width} columns; --json has every column)"
            for n, line in enumerate(wrap(note, width - 1)):  # then indented, as a row's
                text = (" " if n else "") + line.rstrip()
                yield text, [(text, "dim")]

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


def _least(cells: list[list[tuple[str, str | None]]], keep: list[bool], shown: list[int],
           gap: int) -> int:
    """The narrowest the `shown` columns can be: kept ones whole, others their longest
    unbreakable piece."""
    return sum(max(len(r[i][0]) if keep[i] else longest_piece(r[i][0]) for r in cells)
               for i in shown) + gap * (len(shown) - 1)


def fit_widths(rows: list[list[str]], keep: list[bool], width: int, gap: int = 2) -> list[int]:
    """Column widths that fit `width`: the column with the most room to give loses one
    character at a time, down to its longest unbreakable piece (a word); kept columns
    stay whole. When nothing shrinks further the line is wider than `width`."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(keep))]
    lows = [w if k else max(longest_piece(r[i]) for r in rows)
            for i, (w, k) in enumerate(zip(widths, keep, strict=True))]
    while sum(widths) + gap * (len(widths) - 1) > width:
        i = max(range(len(widths)), key=lambda j: widths[j] - lows[j])
        if widths[i] <= lows[i]:
            break
        widths[i] -= 1
    return widths


def pieces(value: str) -> list[str]:
    """`value` as the pieces a line may break between: words (each with the spaces after
    it), and a path's parts after each `/`; joined again they give `value`."""
    out: list[str] = []
    for word in re.findall(r"\S*\s*", value):
        if not word:
            continue
        if "/" in word.strip() and not word.startswith("http"):
            out += re.findall(r"[^/]*/|[^/]+", word)
        else:
            out.append(word)
    return out or [value]


def longest_piece(value: str) -> int:
    return max((len(p.rstrip()) for p in pieces(value)), default=0)


def wrap(value: str, width: int) -> list[str]:
    """`value` in lines of at most `width` characters, broken only between pieces
    (words, path parts), so an id, a dtype or a lane is never broken; a piece wider
    than `width` stands whole on its line. Joined again the lines give `value`."""
    if len(value) <= width or width < 1:
        return [value]
    out: list[str] = []
    line = ""
    for piece in pieces(value):
        if line and len((line + piece).rstrip()) > width:
            out.append(line)
            line = ""
        line += piece
    return [*out, line] if line else out


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
