"""Pure work split over forked worker processes: a function over contiguous parts of a
range, its results in order, for work that grows with the record count (a report's
pages). Forked, so the workers read the caller's data in memory (nothing pickled but
the results); run inline when there is one CPU, too little work, or no fork."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

R = TypeVar("R")

MIN_ITEMS = 200  # below it, starting workers costs more than they save
MAX_WORKERS = 8
_work: Callable[[range], list[Any]] | None = None  # the forked workers' task, set before forking


def workers() -> int:
    """The CPUs this process may run on (its affinity, as `taskset` or a container sets
    it); 1 where there is no affinity call (macOS, where a fork is not safe either)."""
    if not hasattr(os, "sched_getaffinity"):
        return 1
    return min(len(os.sched_getaffinity(0)), MAX_WORKERS)


def map_parts(work: Callable[[range], list[R]], count: int) -> list[R]:
    """`work` over parts of range(count), concatenated in order: what `work(range(count))`
    gives. `work` must touch nothing shared that is not in memory (no database or git
    connection the caller holds): it runs in forked processes."""
    n = min(workers(), count // max(MIN_ITEMS // 2, 1))
    if n < 2 or count < MIN_ITEMS or "fork" not in multiprocessing.get_all_start_methods():
        return work(range(count))
    global _work
    _work = work
    parts = [range(i * count // n, (i + 1) * count // n) for i in range(n)]
    try:
        with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
            return [r for done in pool.map(_run, parts) for r in done]
    finally:
        _work = None


def _run(part: range) -> list[Any]:
    assert _work is not None, "map_parts sets the task before it forks"
    return _work(part)
