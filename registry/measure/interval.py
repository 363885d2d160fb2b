"""Percentiles and seeded bootstrap confidence intervals over rows.

Percentiles interpolate linearly between order statistics (numpy's default, the one
`vllm bench serve` uses). A figure's interval is a percentile bootstrap: the rows
(requests) are resampled with replacement `RESAMPLES` times by numpy's PCG64 generator
seeded with `SEED`, the figure is recomputed on each resample, and the 2.5th and 97.5th
percentiles of those recomputations bound the 95% interval. Same rows, same interval.
A figure pooled over rows (ITL: every gap of every row) resamples rows, not gaps, and
weighs each row's gaps by how often the resample drew that row.

numpy is imported inside the functions: reading a record (`list`, `show`) never
computes an interval, and numpy's import is most of a short command's start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

RESAMPLES = 1000
SEED = 20240616
LEVEL = 0.95
Interval = tuple[float, float]


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100), linear interpolation (numpy `linear`)."""
    import numpy as np

    if not len(values):
        raise ValueError("percentile of no values")
    return float(np.percentile(np.asarray(values, dtype=float), p))


def _bounds(estimates: np.ndarray) -> Interval | None:
    import numpy as np

    estimates = estimates[np.isfinite(estimates)]
    if not estimates.size:
        return None
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(estimates, [tail, 100 - tail])
    return float(low), float(high)


def _draws(n: int, rng: np.random.Generator, resamples: int) -> np.ndarray:
    return rng.integers(0, n, size=(resamples, n))


def bootstrap(values: Sequence[float], p: float = 50, resamples: int = RESAMPLES,
              seed: int = SEED) -> Interval | None:
    """95% interval of the p-th percentile of one value per row."""
    import numpy as np

    if len(values) < 2:
        return None
    v = np.asarray(values, dtype=float)
    draws = v[_draws(len(v), np.random.default_rng(seed), resamples)]
    return _bounds(np.percentile(draws, p, axis=1))


def bootstrap_pooled(groups: Sequence[Sequence[float]], p: float = 50,
                     resamples: int = RESAMPLES, seed: int = SEED) -> Interval | None:
    """95% interval of the p-th percentile of the values of all rows pooled, rows resampled."""
    import numpy as np

    groups = [g for g in groups if len(g)]
    if len(groups) < 2:
        return None
    values = np.concatenate([np.asarray(g, dtype=float) for g in groups])
    owner = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    order = np.argsort(values, kind="stable")
    values, owner = values[order], owner[order]
    rng = np.random.default_rng(seed)
    estimates = np.empty(resamples)
    for i, draw in enumerate(_draws(len(groups), rng, resamples)):
        weight = np.bincount(draw, minlength=len(groups))[owner]
        ends = np.cumsum(weight)  # the pooled sorted sample: values[k] repeated weight[k]
        at = (ends[-1] - 1) * p / 100
        low = int(np.floor(at))
        lo, hi = np.searchsorted(ends, [low + 1, min(low + 2, ends[-1])])
        estimates[i] = values[lo] + (values[hi] - values[lo]) * (at - low)
    return _bounds(estimates)


def ratio_interval(new: Sequence[float], old: Sequence[float], p: float = 50,
                   resamples: int = RESAMPLES, seed: int = SEED) -> Interval | None:
    """95% interval of percentile(new) / percentile(old), both resampled independently."""
    import numpy as np

    if len(new) < 2 or len(old) < 2:
        return None
    rng = np.random.default_rng(seed)
    a, b = np.asarray(new, dtype=float), np.asarray(old, dtype=float)
    top = np.percentile(a[_draws(len(a), rng, resamples)], p, axis=1)
    bottom = np.percentile(b[_draws(len(b), rng, resamples)], p, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _bounds(top / bottom)


def bootstrap_hierarchical(groups: Sequence[Sequence[float]], p: float = 50,
                           resamples: int = RESAMPLES, seed: int = SEED) -> Interval | None:
    """95% interval of the p-th percentile of values grouped by engine start: each
    resample draws the starts with replacement, then the rows within each drawn start,
    so the interval carries the spread between starts as well as within them."""
    import numpy as np

    arrays = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if len(arrays) < 2:
        return None
    rng = np.random.default_rng(seed)
    estimates = np.empty(resamples)
    for i, draw in enumerate(_draws(len(arrays), rng, resamples)):
        pooled = [arrays[k][rng.integers(0, len(arrays[k]), len(arrays[k]))] for k in draw]
        estimates[i] = np.percentile(np.concatenate(pooled), p)
    return _bounds(estimates)
