"""How the host ran for a reproduction: its speed against when the record was sealed, from
the host speed probe both runs kept (`probe.json`, registry/executor/probe.py), and the
GPU's clocks, power and throttle reasons through the new run's suite
(`gpu-samples.csv`, registry/executor/gpu.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from registry.base.safeload import loads_json
from registry.executor.gpu import GpuSummary, parse, summary
from registry.executor.probe import Probe, speed
from registry.formats import rundir
from registry.formats.record import Statement
from registry.formats.rundir import BenchRow
from registry.measure.disturbance import Sample, record_evidence
from registry.measure.evidence import StartEvidence
from registry.recipe.schema import MetricFormula
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
    return _probe(home, statement, rundir.PROBE)


def _probe(home: Home, statement: Statement, name: str) -> Probe | None:
    from pydantic import ValidationError

    data = _artifact(home, statement, name)
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


def starts_evidence(home: Home, statement: Statement, rows: list[BenchRow],
                    single: bool = False) -> list[StartEvidence]:
    """Each engine start's disturbance evidence (registry/measure/disturbance.py), from its
    rows, the GPU samples and the host probe it sealed (start 0: `gpu-samples.csv` and
    `probe.json`, start k: under `starts/<k>/`); empty for a record of one start unless
    `single` (a controlled reproduction's or an A/B's start is a record of its own)."""
    starts = sorted({r.start for r in rows})
    if len(starts) < (1 if single else 2):
        return []
    samples: dict[int, Sequence[Sample]] = {}
    probes: dict[int, tuple[float | None, float | None]] = {}
    for k in starts:
        where = "" if k == 0 else f"{rundir.STARTS}/{k}/"
        data = _artifact(home, statement, where + rundir.GPU_SAMPLES)
        samples[k] = parse(data.decode("utf-8", errors="replace")) if data else []
        probes[k] = probe_figures(_probe(home, statement, where + rundir.PROBE))
    p = statement.predicate
    recipe = p.recipe or {}
    bound = not (recipe.get("engine") or {}).get("args", {}).get("enforce_eager", False)
    formula = MetricFormula(p.results[0].formula) if p.results else MetricFormula.intervals_99
    window = p.results[0].window if p.results else 100
    return record_evidence(rows, samples, formula, window, bound, probes)


def probe_figures(probe: Probe | None) -> tuple[float | None, float | None]:
    """(CPU loop seconds, memory GiB/s), each the mean of before and after the suite."""
    taken = [s for s in (probe.before, probe.after) if s] if probe else []
    if not taken:
        return None, None
    return (sum(s.cpu_s for s in taken) / len(taken),
            sum(s.memory_gib_s for s in taken) / len(taken))
