"""Where the engine's processes run: on the CPU build, the engine core joins its workers.

vLLM 0.32's CPU build binds each worker's compute threads to all cores but the
reserved ones (`VLLM_CPU_NUM_OF_RESERVED_CPU`, one by default) and leaves the API
server and the engine core process free to run anywhere. While a request decodes,
the engine core waits for every step's output by polling shared memory in a
`sched_yield` loop (`SpinCondition`, 1 s after the last read), so it keeps the
reserved core about 85% busy, the core the API server needs to stream each token.
On a two-core host the API server then falls behind and whole streams arrive in one
burst at their end: a decode rate measured from those timestamps means nothing.

The engine core and its workers alternate (the core schedules a step, the worker
computes it, the core reads the result), so once the engine serves, the executor
pins every thread of the engine core onto its workers' cores: the two share them
without slowing each other much. The API server (and the engine's other helper
processes) is pinned off those cores, so the reserved core is the API server's and the
benchmark client's (left free, the scheduler can run it beside the workers; the client
stays free: pinned there too, the same record's speed varied more between starts).
When the workers leave two or more CPUs to the rest (e.g.
`VLLM_CPU_NUM_OF_RESERVED_CPU=2` in the recipe's `engine.env`), the engine core and the
API server can each have one and nothing is moved. Measured with
tools/benchmarks/client_agreement.py and tools/benchmarks/verdicts.py; see docs/engine.md
("Timing on a two-core host").
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from registry.base.model import Frozen

ENGINE_CORE = "VLLM::EngineCore"
WORKER = "VLLM::Worker"


class Placement(Frozen):
    processes: dict[str, list[int]] = Field(description="'pid title' -> CPUs it may run on")
    moved: list[str] = Field(default_factory=list, description="processes the executor pinned")
    note: str | None = None


def colocate_engine_core(server: int, session: list[int]) -> Placement:
    """Pin the engine core process(es) of the `server`'s session onto the union of its
    workers' CPUs and the rest of the session off them, unless the CPUs the workers
    leave free are enough for both."""
    titles = {pid: _title(pid) for pid in session}
    workers = [pid for pid, title in titles.items() if title.startswith(WORKER)]
    cores = [pid for pid, title in titles.items() if title.startswith(ENGINE_CORE)]
    cpus = set().union(*(_affinity(pid) for pid in workers)) if workers else set()
    note = None
    if not workers or not cores:
        note = "no separate worker and engine core process: nothing moved"
    elif len(_affinity(server) - cpus) >= 2:
        note = "the workers leave a CPU each to the engine core and the API server"
    elif cpus == _affinity(cores[0]):
        note = "the engine core already runs on its workers' CPUs"
    else:
        for pid in cores:
            _pin_threads(pid, cpus)
        others = [pid for pid in titles if pid not in cores and pid not in workers]
        for pid in others:
            if rest := _affinity(pid) - cpus:  # the API server off the workers' CPUs
                _pin_threads(pid, rest)
    moved = [f"{pid} {titles[pid]}" for pid in (*cores, *others)] if note is None else []
    return Placement(processes={f"{pid} {title}": sorted(_affinity(pid))
                                for pid, title in titles.items() if title},
                     moved=moved, note=note)


def _title(pid: int) -> str:
    """The process title (vLLM renames its processes): the program's name and its first
    two arguments; '' once it is gone."""
    try:
        parts = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return ""
    return " ".join([os.path.basename(parts[0]), *parts[1:3]]).strip()


def _affinity(pid: int) -> set[int]:
    try:
        return os.sched_getaffinity(pid)
    except OSError:
        return set()


def _pin_threads(pid: int, cpus: set[int]) -> None:
    """Every thread of `pid` (new threads inherit their creator's CPUs)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in threads:
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            continue  # the thread ended meanwhile
