"""registry.base.parallel: work split over forked processes gives what the work gives
inline, in order, and a failure in a worker reaches the caller."""

from __future__ import annotations

import os

import pytest

from registry.base import parallel


@pytest.fixture
def split(monkeypatch) -> None:
    """Split from 2 items on, over 2 workers (the machine may have one CPU)."""
    monkeypatch.setattr(parallel, "MIN_ITEMS", 2)
    monkeypatch.setattr(parallel, "workers", lambda: 2)


def test_parts_run_in_other_processes_and_come_back_in_order(split) -> None:
    data = [f"item-{i}" for i in range(101)]
    done = parallel.map_parts(lambda part: [(data[i], part.start, os.getpid()) for i in part],
                              len(data))
    assert [d for d, _, _ in done] == data
    assert {start for _, start, _ in done} == {0, 50}  # two parts
    assert os.getpid() not in {pid for _, _, pid in done}


def test_little_work_runs_inline() -> None:
    done = parallel.map_parts(lambda part: [os.getpid() for _ in part], parallel.MIN_ITEMS - 1)
    assert set(done) == {os.getpid()}


def test_a_worker_failure_reaches_the_caller(split) -> None:
    def work(part: range) -> list[int]:
        if 7 in part:
            raise ValueError("row 7 is bad")
        return list(part)

    with pytest.raises(ValueError, match="row 7 is bad"):
        parallel.map_parts(work, 20)
