"""`registry compare`: many records side by side, as a table, CSV, Markdown or JSON."""

from __future__ import annotations

import csv
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import HomeOpt, Json, find

if TYPE_CHECKING:
    from registry.compare.table import Comparison, Value


class Format(StrEnum):
    table = "table"
    csv = "csv"
    md = "md"
    json = "json"


def register(app: typer.Typer) -> None:
    app.command()(compare)


def compare(
    records: Annotated[list[str] | None, typer.Argument(
        show_default=False, help="Record ids or prefixes (default: every record).")] = None,
    where: Annotated[list[str] | None, typer.Option(
        "--where", show_default=False,
        help="FIELD OP VALUE, OP one of = != < <= > >= (typed: numbers as numbers).")] = None,
    columns: Annotated[str | None, typer.Option(
        "--columns", show_default=False,
        help="Comma-separated columns: record columns, identity fields, metrics.")] = None,
    sort: Annotated[str | None, typer.Option(
        "--sort", show_default=False, help="Column to sort by; -COLUMN for descending.")] = None,
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.table,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Compare many records: identity axes and metrics as columns, one row per record.

    Example: registry compare --where 'decode_tok_s.median>=300' --sort -decode_tok_s.median
    """
    from registry.compare.table import DEFAULT_COLUMNS
    from registry.compare.table import compare as run

    chosen = [c.strip() for c in columns.split(",") if c.strip()] if columns else DEFAULT_COLUMNS
    result = run(find(home), records or [], where or [], chosen, sort)
    render(result, Format.json if json else fmt)


def render(result: Comparison, fmt: Format) -> None:
    from registry.cli.output import console, print_fitted, print_json

    if fmt is Format.json:
        print_json([dict(zip(result.columns, row, strict=True)) for row in result.rows])
    elif fmt is Format.csv:
        out = csv.writer(sys.stdout, lineterminator="\n")
        out.writerow(result.columns)
        out.writerows([_csv(v) for v in row] for row in result.rows)
    elif fmt is Format.md:
        lines = ["| " + " | ".join(result.columns) + " |",
                 "| " + " | ".join("---" for _ in result.columns) + " |"]
        lines += ["| " + " | ".join(_shown(c, v, short=False).replace("|", "\\|") for c, v in
                                    zip(result.columns, row, strict=True)) + " |"
                  for row in result.rows]
        sys.stdout.write("\n".join(lines) + "\n")
    else:
        marked = set(result.unproven)
        print_fitted([LABELS.get(c, c) for c in result.columns],
                     [[_shown(c, v) + ("!" if c == "id" and v in marked else "")
                       for c, v in zip(result.columns, row, strict=True)]
                      for row in result.rows],
                     keep=[c in ("id", "parent", "quality", "lane", "sealed") or c.startswith(
                         ("precision.", "engine.", "parallel.")) for c in result.columns],
                     drop=_droppable(result.columns))
        console.print(f"{len(result.rows)} records", highlight=False, soft_wrap=True)
        if marked:  # as `registry list` says it
            console.print("! UNPROVEN: its evidence proves nothing (registry show ID says why)",
                          style="bold red", highlight=False)


def _droppable(columns: list[str]) -> list[int]:
    """What goes when the words do not fit (formats/display.py): the seal time first,
    then the record's other facts (recipe, parent, imported, state), then the rest from
    the right; never the id or the lane."""
    first = [i for i, c in enumerate(columns) if c == "sealed"]
    first += [i for i, c in enumerate(columns) if c in ("recipe", "parent", "imported", "state")]
    return first + [i for i in reversed(range(len(columns)))
                    if i not in first and columns[i] not in ("id", "lane")]


# short headers for the usual columns, so a default table reads at 80 columns
LABELS = {"precision.weights": "weights", "precision.kv_cache": "kv cache",
          "parallel.tensor": "tp", "decode_tok_s.median": "decode tok/s",
          "ttft_ms.p50": "ttft ms", "quality": "quality"}


def _shown(column: str, value: Value, *, short: bool = True) -> str:
    """As every view writes it (formats/display.py): ids at 12 digits, the seal time to
    the minute, identity values whole (`?` unresolved), else as `shown` writes any value;
    one line, its controls escaped. `short`: the table (Markdown keeps ids whole)."""
    from registry.base.text import one_line
    from registry.cli.output import shown
    from registry.formats.display import identity, short_id, when
    from registry.formats.figures import HEADLINE
    from registry.formats.identity import FIELDS

    if short and isinstance(value, str) and column in ("id", "parent"):
        return short_id(value)
    if isinstance(value, str) and column == "sealed":
        return when(value)
    if column == "lane":  # no recipe, no lane
        return one_line(value) if isinstance(value, str) and value else "-"
    if column == "suite" or column in FIELDS:
        return one_line(identity(value))
    if isinstance(value, float) and column.rpartition(":")[2] == HEADLINE:
        return f"{value:.2f}"  # as list and show write the headline figure
    return one_line(shown(value))


def _csv(value: Value) -> str:
    """Numbers as numbers; text as text a spreadsheet never evaluates (base/text.py)."""
    from registry.base.text import csv_cell

    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return csv_cell(str(value))
