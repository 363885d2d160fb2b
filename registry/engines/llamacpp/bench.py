"""llama-bench's published tables, each row one measurement with its own identity.

llama-bench prints a markdown table by default (`| model | size | params | backend | ngl |
test | t/s |`, one column more for each option given several values: `n_batch`, `type_k`,
`fa`, ...) and, with `-o json` / `-o jsonl`, one object per test. A row's figure is the mean
tokens per second over the test's repetitions with its standard deviation (`7340.20 ±
23.45`); `pp512` processes a 512-token prompt, `tg128` generates 128 tokens, `pp512+tg128`
does both, `@ d512` runs at a context already holding 512 tokens. Older builds spell the
test `pp 512`.

These are published figures, unproven: llama-bench keeps no per-token timestamps, so
nothing here can be re-derived; a row that is cut off or unreadable is skipped and said.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from registry.base.model import Frozen
from registry.formats.record import PublishedFigure

MAX_BYTES = 8 * 1024 * 1024  # a results file, not a dataset
HEADER = re.compile(r"^\|\s*model\s*\|.*\|\s*test\s*\|\s*t/s\s*\|\s*$")
TEST = re.compile(r"^(?:(?P<kind>pp|tg)\s*(?P<n>\d+)|pp\s*(?P<pp>\d+)\s*\+\s*tg\s*(?P<tg>\d+))"
                  r"(?:\s*@\s*d\s*(?P<depth>\d+))?$")
RATE = re.compile(r"^(?P<mean>[\d.]+)(?:\s*±\s*(?P<stddev>[\d.]+))?$")
# markdown columns that describe the model or the result, not the run's settings
NOT_SETTINGS = frozenset({"model", "size", "params", "backend", "test", "t/s"})
# `-o json` keys that set how a test ran (the others describe the host or the file)
JSON_SETTINGS = ("n_gpu_layers", "n_batch", "n_ubatch", "type_k", "type_v", "flash_attn",
                 "split_mode", "n_threads", "n_cpu_moe", "devices", "tensor_split")
FORMULA = ("llama-bench: tokens / seconds of each repetition (prompt or generation only), "
           "mean over the repetitions")


class BenchMeasurement(Frozen):
    """One llama-bench row: what was measured, on what, and the figure it printed."""

    source: str = Field(description="file name within the capsule")
    line: int | None = Field(None, description="markdown: 1-based line of the row")
    index: int | None = Field(None, description="json: position of the object")
    model: str = Field(description="model as llama-bench names it, e.g. `llama 7B Q4_0`")
    backend: str | None = None
    settings: dict[str, str] = Field(default_factory=dict, description="the row's own "
                                     "options as printed (ngl, n_batch, type_k, fa, ...)")
    test: str = Field(description="as printed: pp512, tg 128, pp512 @ d512, pp512+tg128")
    n_prompt: int | None = None
    n_gen: int | None = None
    depth: int = 0
    mean_tps: float
    stddev_tps: float | None = None
    samples_tps: list[float] = Field(default_factory=list, description="json: per repetition")
    build: str | None = Field(None, description="json: build number and commit")

    def identity(self) -> str:
        """The row's identity in one line: model, backend, settings, test."""
        parts = [self.model, *([self.backend] if self.backend else []),
                 *(f"{k}={v}" for k, v in sorted(self.settings.items())), self.test]
        return " | ".join(parts)

    def metric(self) -> str:
        if self.n_prompt and self.n_gen:
            return "llama_bench_pg_tok_s"
        return "llama_bench_pp_tok_s" if self.n_prompt else "llama_bench_tg_tok_s"


class BenchTable(Frozen):
    source: str
    format: Literal["markdown", "json", "jsonl"]
    rows: list[BenchMeasurement] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list, description="rows not read, and why")


def read_bench(path: Path, name: str | None = None) -> BenchTable | None:
    """The llama-bench table in `path` (a README around it is fine); None: none there."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None  # unreadable: not a table (the capsule's own checks name it)
    source = name or path.name
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        return _json_table(source, stripped)
    return _markdown_table(source, text)


def bench_figures(table: BenchTable) -> list[PublishedFigure]:
    """Each row as a published figure: its identity is the key, never re-derived."""
    return [PublishedFigure(
        source=table.source, key=row.identity(), metric=row.metric(), aggregation="mean",
        formula=FORMULA, value=row.mean_tps,
        note="published by llama-bench, not re-derived (no per-token timestamps)"
             + (f"; ± {row.stddev_tps} stddev" if row.stddev_tps is not None else ""))
        for row in table.rows]


def parse_test(test: str) -> tuple[int | None, int | None, int] | None:
    """(prompt tokens, generated tokens, depth) of a test name; None: not one."""
    found = TEST.match(test.strip())
    if found is None:
        return None
    depth = int(found["depth"] or 0)
    if found["kind"] == "pp":
        return int(found["n"]), None, depth
    if found["kind"] == "tg":
        return None, int(found["n"]), depth
    return int(found["pp"]), int(found["tg"]), depth


def _cells(line: str) -> list[str] | None:
    line = line.strip()
    if not (line.startswith("|") and line.endswith("|")):
        return None
    return [c.strip() for c in line[1:-1].split("|")]


def _markdown_table(source: str, text: str) -> BenchTable | None:
    lines = text.splitlines()
    heads = [i for i, line in enumerate(lines) if HEADER.match(line.strip())]
    if not heads:
        return None
    rows: list[BenchMeasurement] = []
    skipped: list[str] = []
    for head in heads:
        columns = _cells(lines[head]) or []
        for number in range(head + 2, len(lines)):  # the separator row, then the rows
            if not lines[number].strip().startswith("|"):
                break
            row, why = _markdown_row(source, number + 1, columns, _cells(lines[number]))
            if row is not None:
                rows.append(row)
            else:
                skipped.append(f"line {number + 1}: {why}")
    return BenchTable(source=source, format="markdown", rows=rows, skipped=skipped)


def _markdown_row(source: str, line: int, columns: list[str], cells: list[str] | None
                  ) -> tuple[BenchMeasurement | None, str]:
    if cells is None or len(cells) != len(columns):
        return None, "cut off or not a full row"
    values = dict(zip(columns, cells, strict=True))
    shape, rate = parse_test(values["test"]), RATE.match(values["t/s"])
    if shape is None or rate is None:
        return None, f"unreadable test {values['test']!r} or t/s {values['t/s']!r}"
    return BenchMeasurement(
        source=source, line=line, model=values["model"], backend=values.get("backend"),
        settings={k: v for k, v in values.items() if k not in NOT_SETTINGS},
        test=values["test"], n_prompt=shape[0], n_gen=shape[1], depth=shape[2],
        mean_tps=float(rate["mean"]),
        stddev_tps=float(rate["stddev"]) if rate["stddev"] else None), ""


def _json_table(source: str, text: str) -> BenchTable | None:
    try:
        data: Any = json.loads(text)
        fmt: Literal["json", "jsonl"] = "json"
    except (ValueError, RecursionError):  # hostile nesting too: not a table
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
            fmt = "jsonl"
        except (ValueError, RecursionError):
            return None
    objects = data if isinstance(data, list) else [data]
    if not objects or not all(isinstance(o, dict) and "avg_ts" in o for o in objects):
        return None
    rows, skipped = [], []
    for index, raw in enumerate(objects):
        row = _json_row(source, index, raw)
        if row is None:
            skipped.append(f"object {index}: no finite avg_ts, or no test shape")
        else:
            rows.append(row)
    return BenchTable(source=source, format=fmt, rows=rows, skipped=skipped)


def _json_row(source: str, index: int, raw: dict[str, Any]) -> BenchMeasurement | None:
    mean: Any = raw.get("avg_ts")
    prompt, gen = raw.get("n_prompt"), raw.get("n_gen")
    if not _finite(mean) or not isinstance(prompt, int) or not isinstance(gen, int) \
            or not (prompt or gen):
        return None
    depth = raw.get("n_depth") if isinstance(raw.get("n_depth"), int) else 0
    test = "+".join(x for x in (f"pp{prompt}" if prompt else "", f"tg{gen}" if gen else "")
                    if x) + (f" @ d{depth}" if depth else "")
    stddev: Any = raw.get("stddev_ts")
    samples: list[Any] = raw.get("samples_ts") or []
    if not isinstance(samples, list):
        samples = []
    build = " ".join(str(raw[k]) for k in ("build_number", "build_commit") if k in raw)
    return BenchMeasurement(
        source=source, index=index, model=str(raw.get("model_type") or
                                              raw.get("model_filename") or "?"),
        backend=str(raw["backends"]) if raw.get("backends") else None,
        settings={k: _text(raw[k]) for k in JSON_SETTINGS if k in raw},
        test=test, n_prompt=prompt or None, n_gen=gen or None, depth=depth or 0,
        mean_tps=float(mean), stddev_tps=float(stddev) if _finite(stddev) else None,
        samples_tps=[float(s) for s in samples if _finite(s)], build=build or None)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
