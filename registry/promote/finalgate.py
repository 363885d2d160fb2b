"""The lab's realistic final gate, judged from a record's raw rows: the whole fixed
suite, each prompt once, enough prompt classes, the output cap, every completion long
enough for the decode window, no prefix-cache reuse, unique prompts; each breach a named
code (the lab's own names, scripts/bench-openai-realistic-suite.py), never a stored
boolean.

Its headline is the median of the per-class medians of the decode rate
`99 / (t[99] - t[0])` (every class weighs the same, however many prompts it has), with
the all-prompt median beside it; the prefill rate at one user (prompt tokens over the
time to the first token) is shown beside decode, or said "not measured".
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from pydantic import Field

from registry.base.model import Frozen, empty_list
from registry.formats.rundir import Bench, BenchRow
from registry.measure.metrics import decode_rate
from registry.recipe.schema import MetricFormula

UNCLASSIFIED = "unclassified"


class FinalGateRules(Frozen):
    """The thresholds, as a policy states them (the lab's by default)."""

    min_prompts: int = Field(12, description="the fixed suite holds at least this many")
    min_classes: int = Field(5, description="distinct prompt classes the suite covers")
    max_tokens: int = Field(512, description="the output cap every request must carry")
    window: int = Field(100, description="tokens in the decode window (99 intervals)")
    classes: dict[str, str] = Field(default_factory=dict,
                                    description="prompt id -> class, where rows carry none")


class ClassFigure(Frozen):
    prompt_class: str
    prompts: int
    median_tok_s: float


class FinalGate(Frozen):
    passed: bool
    failures: list[str] = Field(default_factory=empty_list, description="named breach codes")
    suite: str
    prompts: int
    classes: list[ClassFigure] = Field(default_factory=empty_list)
    headline_tok_s: float | None = Field(
        None, description="median of the per-class medians of 99 / (t[99] - t[0])")
    all_prompt_median_tok_s: float | None = None
    prefill_tok_s: float | None = Field(
        None, description="median prompt tokens / TTFT over the rows, one user")
    prefill_prompt_tokens: int | None = Field(None, description="median prompt length")

    @property
    def prefill_text(self) -> str:
        if self.prefill_tok_s is None:
            return "prefill not measured (no row carries its prompt tokens and a first token)"
        return (f"prefill {self.prefill_tok_s:.1f} tok/s at one user (prompt tokens / TTFT, "
                f"median over rows; median input {self.prefill_prompt_tokens} tokens)")


def judge_final_gate(bench: Bench, rules: FinalGateRules,
                     suite_classes: Mapping[str, str] | None = None) -> FinalGate:
    """The gate over the first suite of `bench` (the first pass of each prompt).
    `suite_classes` come from the suite file when the record carries it, over the
    policy's table; a prompt with no class is `unclassified` and counts for none."""
    if not bench.suites:
        return FinalGate(passed=False, failures=["no_suite"], suite="", prompts=0)
    suite = bench.suites[0]
    rows = [r for r in bench.rows if r.suite == suite.name]
    classes = {**rules.classes, **(suite_classes or {})}
    failures = _shape_failures(bench, rows, suite.name, suite.prompts, rules, classes)
    failures += _row_failures(rows, rules)
    per_class = _class_figures(rows, classes, rules.window)
    rates = [r for r in (_rate(row, rules.window) for row in rows) if r is not None]
    prefill = [p for p in (_prefill(row) for row in rows) if p is not None]
    return FinalGate(
        passed=not failures, failures=failures, suite=suite.name, prompts=len(rows),
        classes=per_class,
        headline_tok_s=statistics.median([c.median_tok_s for c in per_class])
        if per_class else None,
        all_prompt_median_tok_s=statistics.median(rates) if rates else None,
        prefill_tok_s=statistics.median([p[0] for p in prefill]) if prefill else None,
        prefill_prompt_tokens=int(statistics.median([p[1] for p in prefill]))
        if prefill else None)


def _cap(bench: Bench, suite: str) -> object:
    """The output cap the suite's requests carried (a number, or one per suite)."""
    cap = bench.params.get("max_tokens")
    return cap.get(suite) if isinstance(cap, dict) else cap


def _shape_failures(bench: Bench, rows: Sequence[BenchRow], suite: str, declared: int | None,
                    rules: FinalGateRules, classes: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    ids = [r.prompt_id for r in rows]
    suite_size = declared if declared is not None else len(set(ids))
    if len(ids) != suite_size or len(set(ids)) != len(ids):
        out.append("fixed_suite_incomplete")  # a prompt missing, or sent twice
    if suite_size < rules.min_prompts:
        out.append(f"fixed_suite_has_fewer_than_{rules.min_prompts}_prompts")
    if _cap(bench, suite) != rules.max_tokens:
        out.append(f"max_tokens_must_equal_{rules.max_tokens}")
    extra = bench.params.get("request_extra")
    if isinstance(extra, dict) and extra.get("ignore_eos") is True:
        out.append("ignore_eos_must_be_disabled")
    known = {classes.get(i, UNCLASSIFIED) for i in ids} - {UNCLASSIFIED}
    if len(known) < rules.min_classes or any(classes.get(i) is None for i in ids):
        out.append("fixed_suite_lacks_varied_prompt_classes")
    return out


def _row_failures(rows: Sequence[BenchRow], rules: FinalGateRules) -> list[str]:
    out: list[str] = []
    if not rows:
        return ["no_rows"]
    if any(r.error for r in rows):
        out.append("rows_with_errors")
    if any(_rate(r, rules.window) is None or (r.completion_tokens or 0) < rules.window
           for r in rows):
        out.append(f"every_completion_must_cover_{rules.window}_event_metric")
    if any(r.cached_tokens is None for r in rows):
        out.append("cached_tokens_not_reported")  # unknown reuse fails closed
    elif any(r.cached_tokens for r in rows):
        out.append("cached_tokens_not_zero")
    if len({r.prompt_sha256 for r in rows}) != len(rows):
        out.append("prompts_not_unique")
    return out


def _rate(row: BenchRow, window: int) -> float | None:
    if row.error:
        return None
    return decode_rate(row.token_times_s, MetricFormula.intervals_99, window)


def _prefill(row: BenchRow) -> tuple[float, int] | None:
    if row.error or not row.prompt_tokens or not row.token_times_s or \
            row.token_times_s[0] <= 0:
        return None
    return row.prompt_tokens / row.token_times_s[0], row.prompt_tokens


def _class_figures(rows: Sequence[BenchRow], classes: Mapping[str, str],
                   window: int) -> list[ClassFigure]:
    grouped: dict[str, list[float]] = {}
    for row in rows:
        name, rate = classes.get(row.prompt_id, UNCLASSIFIED), _rate(row, window)
        if name != UNCLASSIFIED and rate is not None:
            grouped.setdefault(name, []).append(rate)
    return [ClassFigure(prompt_class=name, prompts=len(v), median_tok_s=statistics.median(v))
            for name, v in sorted(grouped.items())]
