"""Small HTML building blocks: every value escaped, every link relative, nothing fetched.

A page links `assets/report.css`, `assets/report.js` and `assets/vega.js` by relative
paths, so the site opens from the file system and can be moved or zipped as a whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from registry.base.text import one_line
from registry.formats.display import number, short_id


class Html(str):
    """Markup that is already safe: inserted as is, never escaped again."""

    __slots__ = ()


def esc(value: Any) -> Html:
    """A value as HTML text: escaped, and its control characters shown as escapes (no
    record text reaches a page, or a copy pasted from it, as a control sequence)."""
    if type(value) is Html:
        return value
    return Html(escape(one_line(value if type(value) is str else plain(value))))


def plain(value: Any) -> str:
    """A value as a person writes it: yes/no, blank for none, lists comma separated."""
    if type(value) is str:
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return number(value)  # one way in every view (formats/display.py)
    if isinstance(value, list | tuple):
        return ", ".join(plain(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def link(href: str, text: Any, **attrs: str) -> Html:
    extra = "".join(f' {k}="{escape(v)}"' for k, v in attrs.items())
    return Html(f'<a href="{escape(href)}"{extra}>{esc(text)}</a>')


def short(rid: str) -> str:
    """An id prefix, as every view writes it (formats/display.py)."""
    return short_id(rid)


def status(word: str) -> Html:
    """A status word with its colour class (the word itself carries the meaning)."""
    return Html(f'<span class="status s-{escape(word.replace(" ", "-"))}">{escape(word)}'
                "</span>")


Cell = Any  # a value, or Html; a (sort key, value) tuple sorts by the key


def table(columns: Sequence[str], rows: Iterable[Sequence[Cell]], *, cls: str = "",
          attrs: str = "", kinds: Sequence[str] = ()) -> Html:
    """`kinds`: a class per column (report.css): `ident` an identity value, never broken
    over lines; `can-go` a column left out on a narrow screen (a note says so)."""
    classes = [f' class="{escape(k)}"' if k else "" for k in kinds] or [""] * len(columns)
    head = "".join(f"<th{k}>{esc(c)}</th>" for c, k in zip(columns, classes, strict=True))
    body = "\n".join("<tr>" + "".join(_cell(c, k) for c, k in zip(row, classes, strict=True))
                     + "</tr>" for row in rows)
    note = ('<p class="narrow-note muted">some columns are left out at this width: a wider '
            "window shows them</p>") if "can-go" in kinds else ""
    return Html(f'{note}<table class="{escape(cls)}"{attrs}><thead><tr>{head}</tr></thead>'
                f"<tbody>\n{body}\n</tbody></table>")


def _cell(cell: Cell, kind: str = "") -> str:
    if isinstance(cell, tuple):
        key, value = cell
        sort = repr(key) if isinstance(key, float) else plain(key)  # every digit, to sort by
        return f'<td{kind} data-sort="{escape(sort)}">{esc(value)}</td>'
    return f"<td{kind}>{esc(cell)}</td>"


def chart(name: str, spec: dict[str, Any]) -> Html:
    """A chart placeholder and its spec; report.js draws it. `<` is escaped in the JSON
    so no value can close the script element."""
    data = json.dumps(spec, separators=(",", ":")).replace("<", "\\u003c")
    return Html(f'<figure class="chart" id="chart-{escape(name)}" data-chart="{escape(name)}">'
                f'</figure><script type="application/json" id="spec-{escape(name)}">{data}'
                "</script>")


def data_script(name: str, value: Any) -> Html:
    """Data for report.js, as JSON that never runs (the CSP runs no inline script) and
    whose `<` cannot close the element."""
    data = json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")  # keeps order
    return Html(f'<script type="application/json" id="{escape(name)}">{data}</script>')


def section(title: str, *parts: str) -> Html:
    return Html(f"<section><h2>{esc(title)}</h2>\n" + "\n".join(parts) + "</section>")


# What a page may load: its own scripts and stylesheet beside it, nothing else; no
# inline script runs (the chart specs are JSON data, never executed), no eval (vega
# draws through its expression interpreter: report.js passes `ast: true`), no frame,
# form or base. A record's text that slipped past escaping could still run nothing.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'")


def page(title: str, body: str, *, depth: int, charts: bool = False) -> str:
    up = "../" * depth
    scripts = f'<script src="{up}assets/vega.js"></script>' if charts else ""
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title>"
            f'<link rel="stylesheet" href="{up}assets/report.css">{scripts}'
            f'<script src="{up}assets/report.js" defer></script></head>\n'
            f'<body><nav><a href="{up}index.html">all records</a></nav><main>'
            f"<h1>{esc(title)}</h1>\n{body}</main></body></html>\n")
