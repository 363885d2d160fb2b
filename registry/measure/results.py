"""A run's results, re-derived from its raw rows: never copied from a stored summary."""

from __future__ import annotations

from registry.formats.record import SuiteResult
from registry.formats.rundir import Bench
from registry.measure.metrics import suite_figures
from registry.recipe.schema import MetricFormula, Recipe


def suite_results(bench: Bench, recipe: Recipe | None) -> list[SuiteResult]:
    """Per suite, quality and figures re-derived from the raw rows with the recipe's formula."""
    formula = recipe.benchmark.metric if recipe else MetricFormula.intervals_99
    window = recipe.benchmark.window if recipe else 100
    names = [s.name for s in bench.suites] or sorted({r.suite for r in bench.rows})
    out = []
    for name in names:
        rows = [r for r in bench.timed_rows if r.suite == name]
        figures = suite_figures(rows, formula, window)
        out.append(SuiteResult(suite=name, rows=len(rows), errors=sum(1 for r in rows if r.error),
                               formula=formula.value, window=window, metrics=figures.metrics,
                               quality=figures.quality))
    return out
