"""A suite's figures, re-derived from its raw rows, each naming its formula.

Two families (docs/measurement.md):

- the lab's decode rate over the first `window` output tokens after the first:
  `99 / (t[99] - t[0])` (the lab's older `100 / (t[99] - t[0])` beside it, never instead
  of it), median and p10 over the rows that carry no quality flag (registry.measure.quality);
- `vllm bench serve`'s set over every successful row, with its definitions: TTFT = first
  chunk's arrival; E2EL = last chunk's arrival; TPOT = (E2EL - TTFT) / (output tokens - 1)
  for rows with more than one token; ITL = every gap between consecutive chunks, pooled
  over rows; mean, p50, p90, p99 of each; request and output-token throughput over the
  suite's wall time.

Headline figures carry a seeded bootstrap 95% interval (registry.measure.interval).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from itertools import pairwise

from registry.base.model import Frozen
from registry.formats.figures import Metric, Quality
from registry.formats.rundir import BenchRow
from registry.measure.interval import (
    bootstrap,
    bootstrap_hierarchical,
    bootstrap_pooled,
    percentile,
    percentiles,
)
from registry.measure.quality import assess, usable
from registry.recipe.schema import MetricFormula

PERCENTILES = (50, 90, 99)


class SuiteFigures(Frozen):
    quality: Quality
    metrics: dict[str, Metric]


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
    return percentile(values, 10)


def chunks(row: BenchRow) -> list[float]:
    """Arrival time of each streamed chunk (rows that predate chunk times: each distinct
    token arrival time, a chunk's tokens sharing one)."""
    return row.chunk_times_s or list(dict.fromkeys(row.token_times_s))


def ttft(row: BenchRow) -> float:
    return chunks(row)[0]


def e2el(row: BenchRow) -> float:
    return chunks(row)[-1]


def tpot(row: BenchRow) -> float | None:
    n = row.completion_tokens or len(row.token_ids) or len(row.token_times_s)
    return (e2el(row) - ttft(row)) / (n - 1) if n > 1 else None


def itl(row: BenchRow) -> list[float]:
    return [b - a for a, b in pairwise(chunks(row))]


def decode_rates(rows: Sequence[BenchRow], formula: MetricFormula, window: int) -> list[float]:
    return [x for r in rows if (x := decode_rate(r.token_times_s, formula, window)) is not None]


def decode_median(rows: Sequence[BenchRow], formula: MetricFormula, window: int) -> float | None:
    rates = decode_rates(rows, formula, window)
    return statistics.median(rates) if rates else None


def _ci(interval: tuple[float, float] | None) -> dict[str, float]:
    return {"ci_low": interval[0], "ci_high": interval[1]} if interval else {}


def _decode(clean: list[BenchRow], formula: MetricFormula, window: int,
            name: str) -> list[Metric]:
    rates = decode_rates(clean, formula, window)
    if not rates:
        return []
    text = formula_text(formula, window)
    starts = sorted({r.start for r in clean})
    by_start = [decode_rates([r for r in clean if r.start == k], formula, window)
                for k in starts]
    several = len([g for g in by_start if g]) > 1
    interval = bootstrap_hierarchical(by_start) if several else bootstrap(rates)
    over = f" ({len(starts)} engine starts: starts, then rows, resampled)" if several else ""
    out = [
        Metric(name=f"{name}.median", value=statistics.median(rates), unit="tok/s",
               formula=f"median over unflagged rows of {text}{over}", count=len(rates),
               **_ci(interval)),
        Metric(name=f"{name}.p10", value=p10(rates), unit="tok/s",
               formula=f"p10 (linear) over unflagged rows of {text}", count=len(rates)),
    ]
    medians = [statistics.median(g) for g in by_start if g]
    if several:
        logs = [math.log(m) for m in medians]
        out.append(Metric(name=f"{name}.between_starts_pct", value=100 * statistics.stdev(logs),
                          unit="%", count=len(medians),
                          formula=f"100 x sd of ln(each start's median of {text})"))
    return out


def _distribution(name: str, per_row: list[list[float]], formula: str) -> list[Metric]:
    """mean, p50, p90, p99 in ms of the values pooled over rows; the p50 with its interval
    (rows resampled)."""
    groups = [[1000 * v for v in values] for values in per_row]
    pooled = [v for g in groups for v in g]
    if not pooled:
        return []
    one_each = all(len(g) <= 1 for g in groups)
    ci = bootstrap(pooled) if one_each else bootstrap_pooled(groups)
    out = [Metric(name=f"{name}.mean", value=statistics.fmean(pooled), unit="ms",
                  formula=f"mean over successful rows of {formula}", count=len(pooled))]
    out += [Metric(name=f"{name}.p{p}", value=value, unit="ms",
                   formula=f"p{p} (linear) over successful rows of {formula}",
                   count=len(pooled), **(_ci(ci) if p == 50 else {}))
            for p, value in zip(PERCENTILES, percentiles(pooled, PERCENTILES), strict=True)]
    return out


def _throughput(rows: list[BenchRow]) -> list[Metric]:
    timed = [r for r in rows if r.request_started_epoch_s is not None]
    if not timed:
        return []
    start = min(r.request_started_epoch_s or 0.0 for r in timed)
    wall = max((r.request_started_epoch_s or 0.0) + e2el(r) for r in timed) - start
    if wall <= 0:
        return []
    tokens = sum(r.completion_tokens or len(r.token_ids) for r in timed)
    span = "(max(start + e2el) - min(start))"
    return [Metric(name="request_throughput_req_s", value=len(timed) / wall, unit="req/s",
                   formula=f"successful rows / {span}", count=len(timed)),
            Metric(name="output_throughput_tok_s", value=tokens / wall, unit="tok/s",
                   formula=f"sum of output tokens / {span}", count=len(timed))]


def suite_figures(rows: Sequence[BenchRow], formula: MetricFormula = MetricFormula.intervals_99,
                  window: int = 100) -> SuiteFigures:
    """Quality of the suite's rows, then every figure; decode only from unflagged rows."""
    quality = assess(rows, window)
    clean = usable(rows, quality)
    ok = [r for r in rows if not r.error and chunks(r)]
    other = (MetricFormula.legacy_100 if formula is MetricFormula.intervals_99
             else MetricFormula.intervals_99)
    out = _decode(clean, formula, window, "decode_tok_s")
    out += _decode(clean, other, window, "decode_tok_s_other_formula")
    out += _distribution("ttft_ms", [[ttft(r)] for r in ok], "t_first_chunk")
    out += _distribution("tpot_ms", [[x] for r in ok if (x := tpot(r)) is not None],
                         "(e2el - ttft) / (output_tokens - 1)")
    out += _distribution("itl_ms", [itl(r) for r in ok], "t_chunk(k+1) - t_chunk(k)")
    out += _distribution("e2el_ms", [[e2el(r)] for r in ok], "t_last_chunk")
    out += _throughput(ok)
    return SuiteFigures(quality=quality, metrics={m.name: m for m in out})


def suite_metrics(rows: Sequence[BenchRow], formula: MetricFormula = MetricFormula.intervals_99,
                  window: int = 100) -> dict[str, Metric]:
    return suite_figures(rows, formula, window).metrics
