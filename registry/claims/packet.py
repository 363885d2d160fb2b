"""A claim's evidence packet, read as it is: its files (the contributor's `reported/`
kept apart from the lab's own), where its figures appear, and the per-row values they
re-derive from.

Figures: every number in a JSON or text file that equals the claimed or the verified
figure as the claim writes it (its decimals), with the file and JSON path. Rows: any
list (or name-keyed object) of objects sharing a numeric field, e.g. the lab's
`bench-<stamp>.json` `rows[].decode_tok_s`, a summary's `benchmarks[]
.output_tokens_per_second`, a JSONL campaign's `prompts.<name>.gen_tok_s` pooled over
its lines. A figure is re-derived when the claim's metric names its aggregation
(median, mean) and that aggregation of one such field gives it as written; a figure
whose words name none, or whose packet holds no rows, stays published only.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import Field

from registry.base.hashing import sha256_file
from registry.base.model import Frozen
from registry.importer.walk import capsule_files, load_json

REPORTED = "reported"  # community/<x>/reported/: the contributor's own artifacts
VALIDATION = "validation"  # community/<x>/validation/: the lab's checks
TEXT = (".md", ".txt", ".log", ".env", ".sh", ".py", ".csv")
AGGREGATE: dict[str, Callable[[Sequence[float]], float]] = {
    "median": statistics.median, "mean": statistics.fmean}
_NUMBER = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])|(?<![\w.])\d+(?![\w.])")
_CUT = re.compile(r"[^\w.]")  # where an overlong line may be cut without splitting a number
MAX_HITS = 5
# Files are read as streams, and only this much is kept: a packet may be any size.
MAX_LINE = 1 << 16  # characters of a text line looked at at once (a longer one is cut)
MAX_JSON = 4 << 20  # bytes of a JSON file parsed whole; a larger one is searched as text
MAX_JSON_LINE = 1 << 20  # bytes of one JSONL line parsed; a longer line is skipped
MAX_ROWS = 200_000  # per-row values kept per file; past it the longest series is dropped


class PacketFile(Frozen):
    path: str
    sha256: str
    bytes: int
    kind: str = Field(description="json | jsonl | markdown | log | text | other")
    by: str = Field(description="lab | contributor (under reported/)")


class FigureHit(Frozen):
    source: str
    key: str = Field(description="JSON path, or `line N` in a text file")
    value: float


class RowSeries(Frozen):
    source: str
    key: str = Field(description="where the rows are, and the per-row field")
    rows: int
    values: list[float]


class Rederived(Frozen):
    what: str = Field(description="claimed | verification")
    published: float
    aggregation: str
    series: str
    rows: int
    value: float
    agrees: bool = Field(description="the aggregation gives the published figure as written")


class Packet(Frozen):
    root: str | None = Field(description="the packet folder, relative to what was imported")
    files: list[PacketFile]
    hits: dict[str, list[FigureHit]] = Field(description="claimed | verification -> where")
    series: list[RowSeries]
    rederived: list[Rederived]

    @property
    def rows(self) -> int:
        """Rows found: each collection counted once, whatever fields its rows carry."""
        seen = {(s.source, s.key.rsplit("[].", 1)[0]): s.rows for s in self.series}
        return sum(seen.values())


def read_packet(folder: Path | None, label: str | None, figures: dict[str, float],
                aggregations: dict[str, str | None], skip: set[str],
                only: str | None = None) -> Packet:
    """The packet under `folder` (None: the claim names none; `only`: just that file of
    it); `figures` are the claimed and verified values, `aggregations` what the claim's
    metrics name for each."""
    if folder is None or not folder.is_dir():
        return Packet(root=label, files=[], hits={}, series=[], rederived=[])
    names = [n for n in capsule_files(folder) if n not in skip and only in (None, n)]
    files = [_file(folder, n) for n in names]
    hits: dict[str, list[FigureHit]] = {}
    series: list[RowSeries] = []
    for f in files:
        kind = "text" if f.kind == "json" and f.bytes > MAX_JSON else f.kind
        for what, found in _hits(_numbers(folder / f.path, kind), f.path, figures).items():
            hits.setdefault(what, []).extend(found)
        if kind in ("json", "jsonl"):
            series += _series(folder / f.path, f.path, kind)
    return Packet(root=label, files=files, hits={k: v for k, v in hits.items() if v},
                  series=series, rederived=_rederive(figures, aggregations, series))


def _file(folder: Path, name: str) -> PacketFile:
    path = folder / name
    suffix = PurePosixPath(name).suffix.lower()
    kind = {".json": "json", ".jsonl": "jsonl", ".md": "markdown", ".log": "log"}.get(
        suffix, "text" if suffix in TEXT else "other")
    by = "contributor" if REPORTED in PurePosixPath(name).parts else "lab"
    return PacketFile(path=name, sha256=sha256_file(path), bytes=path.stat().st_size,
                      kind=kind, by=by)


def _hits(numbers: Iterator[tuple[str, float]], source: str, figures: dict[str, float]
          ) -> dict[str, list[FigureHit]]:
    """The first MAX_HITS places in one file where each figure appears as written: the
    numbers stream past, only the hits are kept."""
    found: dict[str, list[FigureHit]] = {what: [] for what in figures}
    windows = {what: _window(figure) for what, figure in figures.items()}
    for key, value in numbers:
        for what, (low, high) in windows.items():
            if low <= value <= high and len(found[what]) < MAX_HITS:
                found[what].append(FigureHit(source=source, key=key, value=value))
        if all(len(f) >= MAX_HITS for f in found.values()):
            break
    return found


def _numbers(path: Path, kind: str) -> Iterator[tuple[str, float]]:
    if kind == "json":
        yield from _leaves(load_json(path), "")
    elif kind == "jsonl":
        for i, line in enumerate(_json_lines(path)):
            yield from _leaves(load_json_text(line), f"[{i}]")
    elif kind in ("markdown", "log", "text"):
        for i, line in _lines(path):
            for m in _NUMBER.finditer(line):
                yield f"line {i}", float(m.group())


def load_json_text(text: str) -> Any:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a text file, streamed; a line longer than MAX_LINE comes in
    pieces of that line, each cut where no number is split."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            number, carry = 1, ""
            while chunk := f.readline(MAX_LINE):
                text = carry + chunk
                if text.endswith("\n"):
                    yield number, text
                    number, carry = number + 1, ""
                    continue
                cuts = [m.end() for m in _CUT.finditer(text, max(0, len(text) - 64))]
                cut = cuts[-1] if cuts else len(text)
                yield number, text[:cut]
                carry = text[cut:]
            if carry:
                yield number, carry
    except OSError:
        return


def _json_lines(path: Path) -> Iterator[str]:
    """A JSONL file's lines, streamed; a line over MAX_JSON_LINE is skipped (an empty one
    stands in for it, so line indexes stay the file's)."""
    try:
        with open(path, "rb") as f:
            while line := f.readline(MAX_JSON_LINE + 1):
                if len(line) <= MAX_JSON_LINE or line.endswith(b"\n"):
                    yield line.decode(errors="replace")
                    continue
                while (rest := f.readline(MAX_JSON_LINE)) and not rest.endswith(b"\n"):
                    pass
                yield ""
    except OSError:
        return


def _leaves(value: Any, where: str) -> Iterator[tuple[str, float]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{where}[{i}]")
    elif _number(value):
        yield where.lstrip("."), float(value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _series(path: Path, name: str, kind: str) -> list[RowSeries]:
    """Per-row numeric fields of every collection of row objects in the file (a JSONL
    file's lines pooled: the same collection in each line is one campaign)."""
    docs = iter([load_json(path)]) if kind == "json" else (
        load_json_text(x) for x in _json_lines(path))
    pooled: dict[str, list[float]] = {}
    dropped: set[str] = set()  # series past MAX_ROWS: never kept, whatever follows
    for doc in docs:  # one JSONL line's document at a time
        for where, rows in _collections(doc, ""):
            for field in sorted({k for r in rows for k, v in r.items() if _number(v)}):
                values = [float(r[field]) for r in rows if _number(r.get(field))]
                key = f"{where}[].{field}".lstrip(".")
                if len(values) == len(rows) and key not in dropped:
                    pooled.setdefault(key, []).extend(values)
        while sum(map(len, pooled.values())) > MAX_ROWS:
            longest = max(pooled, key=lambda k: len(pooled[k]))
            dropped.add(longest)
            del pooled[longest]
    return [RowSeries(source=name, key=k, rows=len(v), values=v) for k, v in pooled.items()]


def _collections(value: Any, where: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    if isinstance(value, list) and len(value) > 1 and all(isinstance(v, dict) for v in value):
        yield where, value
    elif isinstance(value, dict):
        inner = list(value.values())
        if len(inner) > 1 and all(isinstance(v, dict) for v in inner) and \
                len({frozenset(v) for v in inner}) == 1:
            yield where, inner
        for k, v in value.items():
            yield from _collections(v, f"{where}.{k}")


def _rederive(figures: dict[str, float], aggregations: dict[str, str | None],
              series: list[RowSeries]) -> list[Rederived]:
    out = []
    for what, figure in figures.items():
        how = aggregations.get(what)
        if how not in AGGREGATE:
            continue
        for s in series:
            value = AGGREGATE[how](s.values)
            if _as_written(figure, value):
                out.append(Rederived(what=what, published=figure, aggregation=how,
                                     series=f"{s.source}: {s.key}", rows=s.rows, value=value,
                                     agrees=True))
    return out


def _as_written(published: float, value: float) -> bool:
    """`value` rounds to `published` at the decimals `published` was written with."""
    low, high = _window(published)
    return low <= value <= high


def _window(published: float) -> tuple[float, float]:
    """The values that round to `published` as written (see `_as_written`)."""
    exponent = Decimal(repr(published)).as_tuple().exponent
    places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    slack = 0.5 * 10.0 ** -places + 1e-9 * abs(published)
    return published - slack, published + slack
