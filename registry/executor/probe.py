"""The host speed probe: a fixed CPU loop and a fixed memory copy, timed before and after
a run's suite and kept in `probe.json`, so a verdict can say how fast the host was.

The loop is the same work on every host and every run (a linear congruential generator
stepped `CPU_STEPS` times in the interpreter, and `COPIES` copies of a `COPY_MIB` MiB
buffer), so its time is a figure of the host as the run saw it: a CPU shared with other
work, a slower clock, another tenant's memory traffic. It runs in the executor's own
process, so it inherits the run's CPU affinity. Under a second each time (the copy of
64 MiB buffers took 1.7 s on the loaded two-core host: 16 MiB now).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from pydantic import Field

from registry.base.model import Frozen

CPU_STEPS = 1_000_000
COPY_MIB = 16
COPIES = 8


class ProbeSample(Frozen):
    at: str = Field(description="UTC ISO-8601 time the probe started")
    cpu_s: float = Field(description=f"seconds for {CPU_STEPS:,} interpreter LCG steps")
    memory_gib_s: float = Field(description=f"GiB/s copying a {COPY_MIB} MiB buffer "
                                            f"{COPIES} times")


class Probe(Frozen):
    """probe.json: the probe before and after the suite."""

    schema_: str = Field("registry.probe/v1", alias="schema")
    before: ProbeSample | None = None
    after: ProbeSample | None = None


def sample() -> ProbeSample:
    at = datetime.now(UTC).isoformat(timespec="milliseconds")
    start = time.perf_counter()
    x = 1
    for _ in range(CPU_STEPS):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    cpu_s = time.perf_counter() - start
    buffer = bytearray(COPY_MIB << 20)
    start = time.perf_counter()
    for _ in range(COPIES):
        bytes(buffer)  # one full read and write of the buffer
    copy_s = time.perf_counter() - start
    return ProbeSample(at=at, cpu_s=round(cpu_s, 6),
                       memory_gib_s=round(COPIES * COPY_MIB / 1024 / copy_s, 3))


def speed(sealed: Probe | None, now: Probe | None) -> float | None:
    """How fast the host ran now against then, by the CPU loop (sealed time / time now,
    each the mean of before and after): 0.8 means 20% slower."""
    def mean(p: Probe | None) -> float | None:
        times = [s.cpu_s for s in (p.before, p.after) if s] if p else []
        return sum(times) / len(times) if times else None

    then, today = mean(sealed), mean(now)
    return then / today if then and today else None
