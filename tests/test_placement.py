"""The CPU placement on real processes named as vLLM names its own (no engine needed):
the engine core is pinned onto its worker's CPUs, every thread of it, and the API server
off them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from registry.executor.placement import colocate_engine_core

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
THREADS = "import threading, time; [threading.Thread(target=time.sleep, args=(60,)).start() " \
          "for _ in range(3)]; time.sleep(60)"


@pytest.fixture
def spawn() -> Iterator:
    started: list[subprocess.Popen[bytes]] = []

    def start(title: str, cpus: set[int] | None = None) -> int:
        pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
        proc = subprocess.Popen([title, "-c", THREADS], executable=sys.executable,
                                preexec_fn=pin)
        started.append(proc)
        return proc.pid

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def threads(pid: int) -> list[int]:
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


def test_the_engine_core_joins_its_worker(spawn) -> None:
    first, second = sorted(os.sched_getaffinity(0))[:2]
    host = {first, second}  # a two-CPU host (with more, the server would keep two)
    server = spawn("python", host)
    worker = spawn("VLLM::Worker", {first})
    core = spawn("VLLM::EngineCore", host)
    time.sleep(0.5)  # the helper threads start
    placement = colocate_engine_core(server, [server, worker, core])
    moved, server_moved = placement.moved
    assert placement.note is None and moved.startswith(f"{core} VLLM::EngineCore -c import")
    assert all(os.sched_getaffinity(t) == {first} for t in threads(core))
    # the server leaves the workers' CPUs
    assert server_moved.startswith(f"{server} python") and all(
        os.sched_getaffinity(t) == {second} for t in threads(server))
    assert placement.processes[moved] == [first]
    again = colocate_engine_core(server, [server, worker, core])
    assert again.moved == [] and again.note == "the engine core already runs on its workers' CPUs"


def test_nothing_moves_without_a_separate_worker(spawn) -> None:
    server, core = spawn("python"), spawn("VLLM::EngineCore")
    placement = colocate_engine_core(server, [server, core])
    assert placement.moved == [] and "nothing moved" in placement.note
    assert os.sched_getaffinity(core) == os.sched_getaffinity(0)
