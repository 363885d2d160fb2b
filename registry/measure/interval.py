"""Percentiles and seeded bootstrap confidence intervals over rows.

Percentiles interpolate linearly between order statistics (numpy's default, the one
`vllm bench serve` uses). A figure's interval is a percentile bootstrap: the rows
(requests) are resampled with replacement `RESAMPLES` times by a generator seeded with
`SEED`, the figure is recomputed on each resample, and the 2.5th and 97.5th percentiles
of those recomputations bound the 95% interval. Same rows, same interval, every time.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import TypeVar

RESAMPLES = 1000
SEED = 20240616
LEVEL = 0.95

T = TypeVar("T")


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100), linear interpolation (numpy `linear`)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    at = (len(ordered) - 1) * p / 100
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def resample(items: Sequence[T], rng: random.Random) -> list[T]:
    return [items[rng.randrange(len(items))] for _ in items]


def bootstrap(items: Sequence[T], figure: Callable[[Sequence[T]], float | None],
              resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float] | None:
    """The 95% percentile-bootstrap interval of `figure` over resampled `items`."""
    if len(items) < 2:
        return None
    rng = random.Random(seed)
    values = [v for _ in range(resamples) if (v := figure(resample(items, rng))) is not None]
    if not values:
        return None
    tail = (1 - LEVEL) / 2 * 100
    return percentile(values, tail), percentile(values, 100 - tail)


def ratio_interval(new: Sequence[T], old: Sequence[T],
                   figure: Callable[[Sequence[T]], float | None], resamples: int = RESAMPLES,
                   seed: int = SEED) -> tuple[float, float] | None:
    """95% interval of figure(new) / figure(old), both sides resampled independently."""
    if len(new) < 2 or len(old) < 2:
        return None
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        a, b = figure(resample(new, rng)), figure(resample(old, rng))
        if a is not None and b:
            ratios.append(a / b)
    if not ratios:
        return None
    tail = (1 - LEVEL) / 2 * 100
    return percentile(ratios, tail), percentile(ratios, 100 - tail)
