"""Timings for the benchmarks: each figure is the median of several runs with its
spread (min-max), in wall and CPU seconds (the CPU of this process and of the children
it waited for: on a shared machine it says what the work costs when other load
inflates the wall time), and a ratio against a baseline measured in the same rounds."""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    walls: list[float]
    cpus: list[float]

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)

    def text(self, base: Timing | None = None) -> str:
        ratio = f"  {self.wall / base.wall:5.1f}x wall, {self.cpu / base.cpu:5.1f}x CPU" \
            if base else ""
        return (f"wall {self.wall:7.3f} s ({min(self.walls):.3f}-{max(self.walls):.3f})  "
                f"CPU {self.cpu:7.3f} s{ratio}")


def cpu_now() -> float:
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def once(fn: Callable[[], object]) -> tuple[float, float]:
    cpu, start = cpu_now(), time.perf_counter()
    fn()
    return time.perf_counter() - start, cpu_now() - cpu


def alternate(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, Timing]:
    """Each function `repeat` times, in turn (a, b, a, b, ...), so that a change in the
    machine's load falls on all of them alike."""
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            runs[name].append(once(fn))
    return {name: Timing([w for w, _ in r], [c for _, c in r]) for name, r in runs.items()}
