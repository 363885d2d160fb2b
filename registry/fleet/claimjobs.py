"""What a job does to a claim: the record a claim's reproduction runs, and the claim's
moves through the claims API (`reproducing` when a worker takes it, then `confirmed`,
`confirmed-adjusted` or `refuted` from the verification the job sealed). The state
machine of registry.claims decides; a move it refuses is reported, never forced."""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.errors import NotFound, RegistryError

if TYPE_CHECKING:
    from registry.store.home import Home


def claim_record(home: Home, claim_id: str) -> str:
    """The sealed record a claim rests on: its verification's record, else the newest
    record sealed from its own evidence."""
    from registry.claims.events import replay
    from registry.claims.view import show_claim

    shown = show_claim(home, claim_id)
    replayed = replay(home, claim_id)
    records = [shown.verification.record, *(a.event.record for a in reversed(replayed.events)),
               *reversed(replayed.claim.records)]
    for rid in records:
        if rid:
            return rid
    raise NotFound(f"claim {claim_id} rests on no sealed record: nothing to reproduce",
                   hint="import its evidence (registry claim import), or queue a record")


def is_claim(home: Home, what: str) -> bool:
    from registry.claims.events import claim_ids

    return what in claim_ids(home)


def start(home: Home, claim_id: str) -> str:
    """`reproducing`, unless the claim is already there or past it. A claim this home
    does not hold after its pull is an error no retry fixes (NotFound)."""
    from registry.claims.models import State

    if not is_claim(home, claim_id):
        raise NotFound(f"claim {claim_id}: not in this home's ledger after its pull",
                       hint="registry claim list; queue a claim the team remote holds")
    return _move(home, claim_id, State.reproducing, None)


def finish(home: Home, claim_id: str, verification: str | None, passed: bool) -> str:
    """`confirmed` (or `confirmed-adjusted`, when the verified interval excludes the
    claimed figure) after a passed reproduction, `refuted` after a failed one."""
    from registry.claims.models import State

    if verification is None:
        return "not moved: no verification"
    if not passed:
        return _move(home, claim_id, State.refuted, verification)
    moved = _move(home, claim_id, State.confirmed, verification)
    if "confirmed-adjusted, not confirmed" in moved:
        return _move(home, claim_id, State.confirmed_adjusted, verification)
    return moved


def _move(home: Home, claim_id: str, target: object, verification: str | None) -> str:
    from registry.claims.models import State
    from registry.claims.register import advance_claim

    assert isinstance(target, State)
    try:
        view = advance_claim(home, claim_id, target, verification=verification,
                             note="registry worker")
    except RegistryError as e:
        return f"not moved to {target.value}: {e.message}"
    return f"{claim_id} -> {view.status}"
