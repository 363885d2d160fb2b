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


def percentiles(values: Sequence[float], ps: Sequence[float]) -> list[float]:
    """`percentile` at each of `ps`, in one pass over the values (the same figures)."""
    import numpy as np

    if not len(values):
        raise ValueError("percentile of no values")
    return [float(x) for x in np.percentile(np.asarray(values, dtype=float), list(ps))]


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
    draws = _draws(len(groups), np.random.default_rng(seed), resamples)
    pick = _pooled_at if len(values) * len(groups) <= POOLED_CELLS else _pooled_each
    return _bounds(pick(draws, owner, values, p))


POOLED_CELLS = 1 << 22
"""Values x rows up to which bootstrap_pooled searches every resample at once (a table
of that many counts); beyond it, one resample at a time. Both give the same figures."""


def _pooled_each(draws: np.ndarray, owner: np.ndarray, values: np.ndarray,
                 p: float) -> np.ndarray:
    """The p-th percentile of each resample (a row of `draws`: the rows drawn) of the
    pooled sorted `values`, each repeated as often as its row was drawn."""
    import numpy as np

    estimates = np.empty(len(draws))
    for i, draw in enumerate(draws):
        weight = np.bincount(draw, minlength=draws.shape[1])[owner]
        ends = np.cumsum(weight)  # the pooled sorted sample: values[k] repeated weight[k]
        at = (ends[-1] - 1) * p / 100
        low = int(np.floor(at))
        lo, hi = np.searchsorted(ends, [low + 1, min(low + 2, ends[-1])])
        estimates[i] = values[lo] + (values[hi] - values[lo]) * (at - low)
    return estimates


def _pooled_at(draws: np.ndarray, owner: np.ndarray, values: np.ndarray,
               p: float) -> np.ndarray:
    """`_pooled_each`, every resample at once: where the pooled sample's k-th value's run
    ends is `counts . upto[k]` (how often each row was drawn, times how many of its
    values are among the first k+1), so a binary search over k finds each percentile's
    order statistics in log(values) steps instead of a cumulative sum over all of them.
    The positions are whole numbers and the arithmetic is `_pooled_each`'s: the same
    figures, bit for bit (tests/test_metrics.py)."""
    import numpy as np

    resamples, groups = draws.shape
    shifted = draws + groups * np.arange(resamples)[:, None]
    counts = np.bincount(shifted.ravel(), minlength=resamples * groups).reshape(resamples, -1)
    member = np.zeros((len(values), groups), dtype=np.int64)
    member[np.arange(len(values)), owner] = 1
    upto = np.cumsum(member, axis=0)
    total = counts @ upto[-1]  # the pooled sample's size: the last value's run end
    at = (total - 1) * p / 100
    low = np.floor(at).astype(np.int64)
    lo = _first_reaching(counts, upto, low + 1)
    hi = _first_reaching(counts, upto, np.minimum(low + 2, total))
    estimates: np.ndarray = values[lo] + (values[hi] - values[lo]) * (at - low)
    return estimates


def _first_reaching(counts: np.ndarray, upto: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Per resample, the first k whose run end `counts . upto[k]` reaches `target`
    (`searchsorted`, side left, over a cumulative sum never built)."""
    import numpy as np

    lo = np.zeros(len(counts), dtype=np.int64)
    hi = np.full(len(counts), len(upto) - 1, dtype=np.int64)
    while (open_ := lo < hi).any():
        mid = (lo + hi) // 2
        reached = np.einsum("rg,rg->r", counts, upto[mid]) >= target
        hi = np.where(open_ & reached, mid, hi)
        lo = np.where(open_ & ~reached, mid + 1, lo)
    return lo


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
