"""Engine starts as the unit of replication: each start's figure, and the paired interval
of a ratio between two recipes measured in alternating starts.

Within one start the rows share everything the start decided (where the engine's threads
landed, the KV pool, the kernels chosen, what else the host was doing), so a row-level
interval says nothing about the next start. Here each start gives one figure (the median
decode rate of its unflagged rows, the record's formula and window), and two sides run
in alternating starts (A B B A A B ...). Adjacent starts form pairs; each pair gives
d = ln(B / A). The boost's interval is Student's t over the pairs' d: it covers the
spread between starts and the rows within them (each start's figure carries its rows'
noise), and pairs cancel a host that drifts slowly (a linear drift adds +e to one pair
and -e to the next). Why a t interval over pairs and not a bootstrap over starts, and
the references: docs/measurement.md, "A/B and controlled reproductions".

The verdicts of `ab` and `reproduce --control` now analyse the same starts as independent
(registry.measure.sequential.independent_interval, docs/measurement.md "Sequential
starts"); the pair arithmetic here re-derives the verdicts signed before that and the
dry run's foresight.

A reproduction against a control judges D = ln(new/control now) - ln(sealed/control
sealed). Its variance adds the sealed ratio's (each sealed record's figure is the mean of
its starts' logs), and the per-start spread is pooled from every source of replication
there is: the pairs now and the starts each sealed record was measured over.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from functools import cache

from pydantic import Field

from registry.base.model import Frozen
from registry.formats.rundir import BenchRow
from registry.measure.metrics import decode_median
from registry.measure.quality import assess, usable
from registry.recipe.schema import MetricFormula

LEVEL = 0.95
NOISE_PCT = 2.0  # a change inside +-2% is "no difference" (criterion.rs: 1% by default)


class StartFigure(Frozen):
    """One engine start's figure."""

    start: int = Field(description="position in the run order, from 0")
    side: str = Field(description="A | B (ab), record | control (reproduce)")
    value: float | None = Field(description="median decode rate of the unflagged rows")
    rows: int = Field(description="unflagged rows behind it")
    record: str | None = Field(None, description="the record this start was sealed as")


class PairedInterval(Frozen):
    """The interval of a log ratio over paired starts, as a ratio."""

    ratio: float = Field(description="exp(D): geometric mean of the pairs' B/A, over the "
                                     "sealed ratio when controlled")
    low: float | None = Field(description="the interval's ends as a ratio (None: no "
                                          "replication to estimate the spread from)")
    high: float | None = None
    level: float = LEVEL
    pairs: int
    df: int = Field(description="degrees of freedom of the pooled spread")
    spread: float | None = Field(None, description="pooled sd of one pair's ln ratio")
    method: str


def start_figure(rows: Sequence[BenchRow], formula: MetricFormula, window: int) -> tuple[
        float | None, int]:
    """(median decode rate of the start's unflagged rows, how many there were)."""
    clean = usable(list(rows), assess(list(rows), window))
    return decode_median(clean, formula, window), len(clean)


def alternating(starts: int, first: str = "A", second: str = "B") -> list[str]:
    """ABBA order for `starts` starts per side: A B B A A B B A ... (2 x starts)."""
    pair = [(first, second), (second, first)]
    return [side for i in range(starts) for side in pair[i % 2]]


def pair_logs(figures: Sequence[StartFigure], a: str = "A", b: str = "B") -> list[float]:
    """ln(B/A) of each adjacent pair (starts 0-1, 2-3, ...) in which both have a figure."""
    ordered = sorted(figures, key=lambda f: f.start)
    out = []
    for x, y in zip(ordered[::2], ordered[1::2], strict=False):
        by = {x.side: x.value, y.side: y.value}
        top, bottom = by.get(b), by.get(a)
        if top and bottom:
            out.append(math.log(top / bottom))
    return out


@cache  # pure in (p, df); sequential looks and the simulations ask the same few again
def t_quantile(p: float, df: int) -> float:
    """The p-quantile (p > 0.5) of Student's t with `df` degrees of freedom: the CDF,
    integrated numerically, inverted by bisection (no scipy in the registry)."""
    import numpy as np

    if df < 1:
        raise ValueError("t quantile needs df >= 1")
    log_norm = (math.lgamma((df + 1) / 2) - math.lgamma(df / 2)
                - 0.5 * math.log(df * math.pi))

    def cdf(t: float) -> float:
        x = np.linspace(0.0, t, 4001)
        y = np.exp(log_norm - (df + 1) / 2 * np.log1p(x * x / df))
        return 0.5 + float(np.sum((y[1:] + y[:-1]) / 2) * (x[1] - x[0]))

    low, high = 0.0, 1.0
    while cdf(high) < p:
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < p else (low, mid)
    return (low + high) / 2


def pooled(groups: Sequence[tuple[float, int]]) -> tuple[float | None, int]:
    """(pooled variance, df) from (variance, df) groups."""
    df = sum(d for _, d in groups)
    if df < 1:
        return None, 0
    return sum(v * d for v, d in groups) / df, df


def log_spread(values: Sequence[float]) -> tuple[float, int] | None:
    """(variance of ln of the values, df): one sealed record's start-to-start spread."""
    logs = [math.log(v) for v in values if v and v > 0]
    if len(logs) < 2:
        return None
    return statistics.variance(logs), len(logs) - 1


def paired_interval(d: Sequence[float], *, sealed: float = 0.0, sealed_weight: float = 0.0,
                    start_spreads: Sequence[tuple[float, int]] = (),
                    level: float = LEVEL) -> PairedInterval | None:
    """The interval of exp(mean(d) - sealed).

    `sealed` is a sealed log ratio to judge against (0: none), whose variance is
    `sealed_weight` pair variances; `start_spreads` are further (variance of one start's
    ln figure, df) estimates, each worth two of them per pair (a pair's ln ratio is the
    difference of two starts)."""
    if not d:
        return None
    n = len(d)
    mean = statistics.fmean(d) - sealed
    groups = [(statistics.variance(d), n - 1)] if n > 1 else []
    groups += [(2 * v, df) for v, df in start_spreads]
    var, df = pooled(groups)
    method = (f"Student t ({df} df) over {n} paired starts' ln ratios"
              + (", against the sealed ratio" if sealed_weight else "")
              + (f", spread pooled with {len(start_spreads)} sealed record(s)' starts"
                 if start_spreads else ""))
    if var is None:
        return PairedInterval(ratio=math.exp(mean), low=None, high=None, level=level,
                              pairs=n, df=0, method=f"{n} pair(s), no replication: no interval")
    half = t_quantile(1 - (1 - level) / 2, df) * math.sqrt(var * (1 / n + sealed_weight))
    return PairedInterval(ratio=math.exp(mean), low=math.exp(mean - half),
                          high=math.exp(mean + half), level=level, pairs=n, df=df,
                          spread=math.sqrt(var), method=method)


def boost_verdict(interval: PairedInterval | None, noise_pct: float = NOISE_PCT) -> str:
    """faster | slower | no difference | inconclusive, from the boost's interval: no
    difference when the whole interval lies within +-noise (criterion.rs's "change within
    noise threshold"), faster or slower when it excludes 0, else inconclusive."""
    if interval is None or interval.low is None or interval.high is None:
        return "inconclusive"
    low, high = 100 * (interval.low - 1), 100 * (interval.high - 1)
    if -noise_pct <= low and high <= noise_pct:
        return "no difference"
    if low > 0:
        return "faster"
    if high < 0:
        return "slower"
    return "inconclusive"


def figures_by_start(rows: Sequence[BenchRow], formula: MetricFormula,
                     window: int) -> list[float]:
    """One figure per engine start a record's rows came from (`BenchRow.start`; a record
    of one start gives one), starts without an unflagged row left out."""
    starts = sorted({r.start for r in rows})
    out = []
    for k in starts:
        value, _ = start_figure([r for r in rows if r.start == k], formula, window)
        if value:
            out.append(value)
    return out
