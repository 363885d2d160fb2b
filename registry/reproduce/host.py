"""How the host ran for a reproduction: its speed against when the record was sealed, from
the host speed probe both runs kept (`probe.json`, registry/executor/probe.py), and the
GPU's clocks, power and throttle reasons through the new run's suite
(`gpu-samples.csv`, registry/executor/gpu.py)."""

from __future__ import annotations

import hashlib

from registry.base.safeload import loads_json
from registry.executor.gpu import GpuSummary, parse, summary
from registry.executor.probe import Probe, speed
from registry.formats import rundir
from registry.formats.record import Statement
from registry.store.home import Home


def _artifact(home: Home, statement: Statement, name: str) -> bytes | None:
    """A small sealed artifact's bytes, when present and still matching their digest."""
    from registry.store.objects import ObjectStore

    subject = statement.subject_named(name)
    if subject is None:
        return None
    try:
        data = ObjectStore(home.objects).path(subject.sha256).read_bytes()
    except FileNotFoundError:
        return None
    return data if hashlib.sha256(data).hexdigest() == subject.sha256 else None


def sealed_probe(home: Home, statement: Statement) -> Probe | None:
    from pydantic import ValidationError

    data = _artifact(home, statement, rundir.PROBE)
    try:
        return Probe.model_validate(loads_json(data)) if data else None
    except (ValueError, ValidationError):
        return None


def host_speed(home: Home, sealed: Statement, new: Statement) -> float | None:
    """The probe's CPU loop then / now (0.8: the host ran 20% slower); None without both."""
    return speed(sealed_probe(home, sealed), sealed_probe(home, new))


def gpu_summary(home: Home, statement: Statement) -> GpuSummary | None:
    """The GPU samples a record sealed, summarised; None when it has none."""
    data = _artifact(home, statement, rundir.GPU_SAMPLES)
    return summary(parse(data.decode("utf-8", errors="replace"))) if data else None
