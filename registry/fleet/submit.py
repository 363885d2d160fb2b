"""What `registry queue add` queues: a record resolved in the member's home (or the
record a claim rests on), the hardware it asks for (named, or the host the record was
sealed on), and its kind: a reproduction, a controlled reproduction (`--control`) or
an A/B (`--ab`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.errors import InvalidInput, UsageError
from registry.fleet.execute import STARTS
from registry.fleet.hardware import check_identity, sealed_hardware
from registry.fleet.jobcheck import Kind
from registry.fleet.queue import Job, add_job, queue_url
from registry.measure.sequential import MOST_STARTS

if TYPE_CHECKING:
    from registry.formats.record import Statement
    from registry.store.home import Home


def submit(home: Home, what: str, *, control: str | None = None, ab: str | None = None,
           hardware: str | None = None, url: str | None = None,
           allow_env_drift: bool = False, max_starts: int | None = None) -> Job:
    """Queue a reproduction of record (or claim) `what`; with `control`, a controlled
    reproduction against that record (`registry reproduce --control`); with `ab`, an
    A/B of that record (side A) against `what` (side B)."""
    from registry.fleet.claimjobs import claim_record, is_claim
    from registry.store.query import sealed_statement

    if control and ab:
        raise UsageError("--control and --ab exclude each other: a job is a controlled "
                         "reproduction or an A/B")
    if ab and allow_env_drift:
        raise UsageError("--allow-env-drift is for reproductions: an A/B judges two records "
                         "side by side, each on this host's environment")
    if max_starts is not None and not (control or ab):
        raise UsageError("--max-starts is for a controlled reproduction or an A/B: a "
                         "reproduction's rounds decide on their own")
    if max_starts is not None and not STARTS <= max_starts <= MOST_STARTS:
        raise InvalidInput(f"--max-starts {max_starts}: a job looks first after {STARTS} "
                           f"starts a side", hint=f"give {STARTS} to {MOST_STARTS}")
    found = queue_url(url)  # no queue: say so before reading anything
    claim = what if is_claim(home, what) else None
    rid, statement = sealed_statement(home, claim_record(home, what) if claim else what)
    other = control or ab
    other_id = sealed_statement(home, other)[0] if other else None
    if other_id == rid:
        raise InvalidInput(f"{other}: the record itself cannot be its own "
                           + ("control" if control else "other side"),
                           hint="name another record, run in the same window")
    wanted = check_identity(hardware) if hardware else _record_hardware(statement)
    kind = Kind.controlled if control else Kind.ab if ab else Kind.reproduce
    return add_job(found, kind, rid, wanted, control=other_id, claim=claim,
                   allow_env_drift=allow_env_drift, max_starts=max_starts)


def _record_hardware(statement: Statement) -> str:
    """The hardware a record's evidence names (registry/fleet/hardware.py)."""
    p = statement.predicate
    return sealed_hardware(p.environment.host_facts(), p.identity.value("platform.device"),
                           p.identity.value("parallel.devices"))
