"""What `registry queue add` queues: a record resolved in the member's home (or the
record a claim rests on), the hardware it asks for (named, or the host the record was
sealed on), and its kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.fleet.hardware import check_identity, sealed_hardware
from registry.fleet.queue import Job, Kind, add_job, queue_url

if TYPE_CHECKING:
    from registry.store.home import Home


def submit(home: Home, what: str, *, control: str | None = None,
           hardware: str | None = None, url: str | None = None) -> Job:
    """Queue a reproduction of record (or claim) `what`, or an A/B of `control` (A)
    against it (B)."""
    from registry.fleet.claimjobs import claim_record, is_claim
    from registry.store.query import sealed_statement

    found = queue_url(url)  # no queue: say so before reading anything
    claim = what if is_claim(home, what) else None
    rid, statement = sealed_statement(home, claim_record(home, what) if claim else what)
    control_id = sealed_statement(home, control)[0] if control else None
    wanted = check_identity(hardware) if hardware else \
        sealed_hardware(statement.predicate.environment.host_facts())
    return add_job(found, Kind.ab if control else Kind.reproduce, rid, wanted,
                   control=control_id, claim=claim)
