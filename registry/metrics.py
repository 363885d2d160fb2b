"""Benchmark metrics, always re-derived from raw rows, each naming its formula.

Decode rate over the first `window` output tokens after the first token:
`99 / (t[99] - t[0])` counts the 99 intervals between 100 timestamped tokens; the
lab's older `100 / (t[99] - t[0])` is exactly 1/0.99 higher and is reported beside
it, never instead of it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from registry.recipe.schema import MetricFormula
from registry.rundir import BenchRow


class Metric(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    value: float
    unit: str
    formula: str
    count: int  # rows that contributed


def decode_rate(times: Sequence[float], formula: MetricFormula, window: int = 100) -> float | None:
    """Tokens per second over tokens 1..window after the first; None if too short."""
    if len(times) < window:
        return None
    span = times[window - 1] - times[0]
    if span <= 0:
        return None
    events = window if formula is MetricFormula.legacy_100 else window - 1
    return events / span


def formula_text(formula: MetricFormula, window: int) -> str:
    events = window if formula is MetricFormula.legacy_100 else window - 1
    return f"{events} / (t[{window - 1}] - t[0])"


def p10(values: Sequence[float]) -> float:
    """10th percentile, linear interpolation between order statistics (inclusive)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=10, method="inclusive")[0]


def _summary(name: str, values: list[float], unit: str, formula: str) -> list[Metric]:
    if not values:
        return []
    return [
        Metric(name=f"{name}.median", value=statistics.median(values), unit=unit,
               formula=f"median over rows of {formula}", count=len(values)),
        Metric(name=f"{name}.p10", value=p10(values), unit=unit,
               formula=f"p10 (inclusive) over rows of {formula}", count=len(values)),
    ]


def suite_metrics(rows: Sequence[BenchRow], formula: MetricFormula = MetricFormula.intervals_99,
                  window: int = 100) -> dict[str, Metric]:
    """Decode rate (named formula and the other one beside it), TTFT and TPOT."""
    ok = [r for r in rows if not r.error and r.token_times_s]
    out: list[Metric] = []
    other = (MetricFormula.legacy_100 if formula is MetricFormula.intervals_99
             else MetricFormula.intervals_99)
    for name, f in (("decode_tok_s", formula), ("decode_tok_s_other_formula", other)):
        rates = [x for r in ok if (x := decode_rate(r.token_times_s, f, window)) is not None]
        out += _summary(name, rates, "tok/s", formula_text(f, window))
    ttft = [r.token_times_s[0] * 1000 for r in ok]
    out += _summary("ttft_ms", ttft, "ms", "1000 * t[0]")
    tpot = [1000 * (r.token_times_s[-1] - r.token_times_s[0]) / (len(r.token_times_s) - 1)
            for r in ok if len(r.token_times_s) > 1]
    out += _summary("tpot_ms", tpot, "ms", "1000 * (t[-1] - t[0]) / (n - 1)")
    return {m.name: m for m in out}
