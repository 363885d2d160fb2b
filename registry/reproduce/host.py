"""How fast the host ran for a reproduction against when its record was sealed, from the
host speed probe both runs kept (`probe.json`, registry/executor/probe.py)."""

from __future__ import annotations

import hashlib

from registry.base.safeload import loads_json
from registry.executor.probe import Probe, speed
from registry.formats import rundir
from registry.formats.record import Statement
from registry.store.home import Home


def sealed_probe(home: Home, statement: Statement) -> Probe | None:
    """The probe a record sealed, when it has one whose bytes still match their digest."""
    from pydantic import ValidationError

    from registry.store.objects import ObjectStore

    subject = statement.subject_named(rundir.PROBE)
    if subject is None:
        return None
    try:
        data = ObjectStore(home.objects).path(subject.sha256).read_bytes()
    except FileNotFoundError:
        return None
    if hashlib.sha256(data).hexdigest() != subject.sha256:
        return None
    try:
        return Probe.model_validate(loads_json(data))
    except (ValueError, ValidationError):
        return None


def host_speed(home: Home, sealed: Statement, new: Statement) -> float | None:
    """The probe's CPU loop then / now (0.8: the host ran 20% slower); None without both."""
    return speed(sealed_probe(home, sealed), sealed_probe(home, new))
